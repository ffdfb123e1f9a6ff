/*
 * fibril/fibril_int.h: internals shared by sched.c, stack.c and the
 * context-switch back ends (the core's private names: fib__, FIB__).
 * Not installed.
 */
#ifndef FIBRIL_FIBRIL_INT_H
#define FIBRIL_FIBRIL_INT_H

#include <stdint.h>
#include <stddef.h>
#include "fibril/fibril.h"

#ifdef FIBRIL_SWITCH_UCONTEXT
#include <ucontext.h>
#endif

#if defined(FSD_ASAN) || defined(__SANITIZE_ADDRESS__)
#define FIB__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIB__ASAN 1
#endif
#endif

#ifdef HAVE_VALGRIND_VALGRIND_H
#define FIB__VALGRIND 1
#endif

#define FIB__HIDDEN __attribute__((visibility("hidden")))
#define fib__likely(x) __builtin_expect(!!(x), 1)
#define fib__unlikely(x) __builtin_expect(!!(x), 0)

/* A saved execution context. With the assembly back ends everything the
 * ABI requires the callee to preserve is pushed on the context's own
 * stack, so the context is just its stack pointer. */
struct fib__ctx {
#ifdef FIBRIL_SWITCH_UCONTEXT
	ucontext_t uc;
#else
	void *sp;
#endif
};

enum fib__state { FIB__RUNNABLE = 1, FIB__RUNNING, FIB__PARKED, FIB__EXITED };
enum {
	FIB__F_DETACHED = 1,   /* freed at exit, never joined */
	FIB__F_WAKE = 2,       /* pending wake-up (wake while not parked) */
	FIB__F_TIMEDOUT = 4,   /* last park ended by its deadline */
};

/* The control block lives at the top of the fibril's own stack mapping:
 * one allocation per fibril, and a parked fibril's control block and
 * innermost frames share pages. */
struct fibril {
	struct fib__ctx ctx;
	struct fibril *next;            /* run queue, yield queue, pool */
	unsigned char state, flags;
	unsigned heap_idx;              /* 1-based slot in the timer heap, 0: none */
	uint64_t deadline;
	void (*fn)(void *);
	void *arg;
	struct fibril *joiner;
	struct fibril_waitq *wq;        /* queue we wait on, if any */
	struct fibril *wq_next, *wq_prev;
	struct fibril *all_next, *all_prev; /* every unfreed fibril (for fini) */
	void *slots[FIBRIL_NSLOTS];
	/* the stack mapping: [map, map+guard) inaccessible, then the stack
	 * [stack_lo, stack_hi), then this block at stack_hi */
	char *map;
	size_t map_size;
	char *stack_lo, *stack_hi;
	unsigned vg_id;                 /* valgrind stack id */
	char name[32];
} __attribute__((aligned(64)));

struct fib__sched {
	struct fib__ctx main_ctx;         /* the scheduler's (thread's) context */
	fibril_t *cur;                  /* running fibril, NULL: scheduler */
	fibril_t *runq_head, *runq_tail;
	fibril_t *yq_head, *yq_tail;    /* yielded during this run: next run */
	fibril_t *dead;                 /* just exited: reaped after the switch */
	fibril_t *all;
	unsigned alive;
	unsigned parked;                /* in FIB__PARKED (fibril_sched_stats) */
	uint64_t created;
	int in_run;
	unsigned long nswitch;
	/* timers: binary min-heap on deadline */
	fibril_t **heap;
	unsigned heap_len, heap_cap;
	/* stacks (stack.c) */
	size_t page, guard, map_size;
	unsigned pool_max, npool;
	fibril_t *pool;                 /* hot: pages kept */
	char **cold;                    /* slots whose pages are returned */
	unsigned ncold, cold_cap;
	char **slabs;                   /* mappings of FIB__SLAB slots each */
	unsigned nslab, slab_cap;
	void *altstack;                 /* ours, if we installed one */
	size_t altstack_size;
#ifdef FIB__ASAN
	fibril_t *switched_from;        /* who switched to the running context */
	const void *main_stack_bottom;
	size_t main_stack_size;
#endif
};

/* stack.c */
FIB__HIDDEN int fib__stack_setup(struct fib__sched *s, size_t stack_size,
                             unsigned pool_max);
FIB__HIDDEN fibril_t *fib__stack_get(struct fib__sched *s);
FIB__HIDDEN void fib__stack_put(struct fib__sched *s, fibril_t *f);
FIB__HIDDEN void fib__stack_fini(struct fib__sched *s);
FIB__HIDDEN int fib__stack_thread_init(struct fib__sched *s);
FIB__HIDDEN void fib__stack_thread_fini(struct fib__sched *s);

/* sched.c */
FIB__HIDDEN void fib__main(void) __attribute__((noreturn));

/* Context switch back ends. fib__ctx_make() prepares @c so that switching
 * to it calls fib__main() on the stack [lo, hi). */
FIB__HIDDEN void fib__ctx_make(struct fib__ctx *c, char *lo, char *hi);
#ifdef FIBRIL_SWITCH_UCONTEXT
FIB__HIDDEN void fib__ctx_switch(struct fib__ctx *from, struct fib__ctx *to);
#else
/* switch_<arch>.S: pushes the callee-saved state on the current stack,
 * stores the stack pointer in *save_sp, loads new_sp and pops. */
FIB__HIDDEN void fib__switch(void **save_sp, void *new_sp);
FIB__HIDDEN void fib__trampoline(void);
static inline void fib__ctx_switch(struct fib__ctx *from, struct fib__ctx *to)
{
	fib__switch(&from->sp, to->sp);
}
#endif

#endif
