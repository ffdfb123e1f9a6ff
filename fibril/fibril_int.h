/*
 * fibril/fibril_int.h: internals shared by sched.c, stack.c and the
 * context-switch back ends. Not installed.
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
#define X__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define X__ASAN 1
#endif
#endif

#ifdef HAVE_VALGRIND_VALGRIND_H
#define X__VALGRIND 1
#endif

#define X__HIDDEN __attribute__((visibility("hidden")))
#define x__likely(x) __builtin_expect(!!(x), 1)
#define x__unlikely(x) __builtin_expect(!!(x), 0)

/* A saved execution context. With the assembly back ends everything the
 * ABI requires the callee to preserve is pushed on the context's own
 * stack, so the context is just its stack pointer. */
struct x__ctx {
#ifdef FIBRIL_SWITCH_UCONTEXT
	ucontext_t uc;
#else
	void *sp;
#endif
};

enum x__state { X__RUNNABLE = 1, X__RUNNING, X__PARKED, X__EXITED };
enum {
	X__F_DETACHED = 1,   /* freed at exit, never joined */
	X__F_WAKE = 2,       /* pending wake-up (wake while not parked) */
	X__F_TIMEDOUT = 4,   /* last park ended by its deadline */
};

/* The control block lives at the top of the fibril's own stack mapping:
 * one allocation per fibril, and a parked fibril's control block and
 * innermost frames share pages. */
struct fibril {
	struct x__ctx ctx;
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

struct x__sched {
	struct x__ctx main_ctx;         /* the scheduler's (thread's) context */
	fibril_t *cur;                  /* running fibril, NULL: scheduler */
	fibril_t *runq_head, *runq_tail;
	fibril_t *yq_head, *yq_tail;    /* yielded during this run: next run */
	fibril_t *dead;                 /* just exited: reaped after the switch */
	fibril_t *all;
	unsigned alive;
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
	char **slabs;                   /* mappings of X__SLAB slots each */
	unsigned nslab, slab_cap;
	void *altstack;                 /* ours, if we installed one */
	size_t altstack_size;
#ifdef X__ASAN
	fibril_t *switched_from;        /* who switched to the running context */
	const void *main_stack_bottom;
	size_t main_stack_size;
#endif
};

/* stack.c */
X__HIDDEN int x__stack_setup(struct x__sched *s, size_t stack_size,
                             unsigned pool_max);
X__HIDDEN fibril_t *x__stack_get(struct x__sched *s);
X__HIDDEN void x__stack_put(struct x__sched *s, fibril_t *f);
X__HIDDEN void x__stack_fini(struct x__sched *s);
X__HIDDEN int x__stack_thread_init(struct x__sched *s);
X__HIDDEN void x__stack_thread_fini(struct x__sched *s);

/* sched.c */
X__HIDDEN void x__fibril_main(void) __attribute__((noreturn));

/* Context switch back ends. x__ctx_make() prepares @c so that switching
 * to it calls x__fibril_main() on the stack [lo, hi). */
X__HIDDEN void x__ctx_make(struct x__ctx *c, char *lo, char *hi);
#ifdef FIBRIL_SWITCH_UCONTEXT
X__HIDDEN void x__ctx_switch(struct x__ctx *from, struct x__ctx *to);
#else
/* switch_<arch>.S: pushes the callee-saved state on the current stack,
 * stores the stack pointer in *save_sp, loads new_sp and pops. */
X__HIDDEN void x__fibril_switch(void **save_sp, void *new_sp);
X__HIDDEN void x__fibril_trampoline(void);
static inline void x__ctx_switch(struct x__ctx *from, struct x__ctx *to)
{
	x__fibril_switch(&from->sp, to->sp);
}
#endif

#endif
