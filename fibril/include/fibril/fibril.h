/*
 * libfibril: fibrils, cheap stackful contexts that run linear code.
 *
 * Threading: every scheduler belongs to the thread that called
 * fibril_sched_init(); all fibril_* calls below act on the calling
 * thread's scheduler and must be made from that thread. There are no
 * global locks. A fibril never migrates between threads.
 *
 * Errors: functions return >= 0 or -errno and never leave meaning in
 * errno.
 */
#ifndef FIBRIL_FIBRIL_H
#define FIBRIL_FIBRIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FIBRIL_API
#define FIBRIL_API __attribute__((visibility("default")))
#endif

/** Opaque fibril handle. Owned by the scheduler; valid until joined
 *  (or, for a detached fibril, until it exits). */
typedef struct fibril fibril_t;

/** Options for fibril_sched_init(); zero fields take the defaults. */
struct fibril_sched_opts {
	size_t stack_size;      /**< usable stack bytes, rounded up to pages */
	unsigned stack_pool_max;/**< stacks kept for reuse before pages go back */
};

/** Sets up the calling thread's scheduler. @opts may be NULL.
 *  Defaults: 128 KiB usable stack (512 KiB in ASan builds) above a
 *  16 KiB guard; 128 pooled stacks keep their pages. The first call in
 *  the process installs a SIGSEGV handler (chaining to the previous one)
 *  that names the fibril whose guard was hit; a thread without an
 *  alternate signal stack gets one. New fibrils start with the FP
 *  control state (rounding, masks) the thread has now.
 *  Returns 0, -EBUSY if this thread already has one, or -errno. */
FIBRIL_API int fibril_sched_init(const struct fibril_sched_opts *opts);

/** Tears down the calling thread's scheduler. Fibrils that have not
 *  exited are abandoned (their stacks freed without unwinding). */
FIBRIL_API void fibril_sched_fini(void);

/** Creates a fibril that will run fn(arg), queued as runnable; it first
 *  runs at the next fibril_sched_run() or when the caller yields/parks.
 *  If @out is NULL the fibril is detached (freed when it exits);
 *  otherwise the caller must fibril_join() it. @name (copied, may be
 *  NULL, at most 31 bytes kept) appears in diagnostics such as the
 *  stack-overflow message. Returns 0, -EINVAL (no scheduler on this
 *  thread, or @fn NULL) or -ENOMEM. */
FIBRIL_API int fibril_create(fibril_t **out, void (*fn)(void *), void *arg,
                             const char *name);

/** Like fibril_create() but switches to the new fibril at once and
 *  returns when it parks, yields or exits: the daemon's "run the
 *  request immediately" path. Must be called from outside any fibril
 *  (the scheduler's own context); from inside a fibril it behaves like
 *  fibril_create(). */
FIBRIL_API int fibril_start(fibril_t **out, void (*fn)(void *), void *arg,
                            const char *name);

/** The running fibril, or NULL in the scheduler's own context. */
FIBRIL_API fibril_t *fibril_self(void);

/** Puts the running fibril at the tail of the run queue and switches.
 *  Inside fibril_sched_run() a fibril that yields runs again only in the
 *  next call, so a busy yielder cannot keep the host loop from polling
 *  (fibril_sched_timeout_ms() is then 0). */
FIBRIL_API void fibril_yield(void);

/** Blocks the running fibril until fibril_wake(). A wake that arrived
 *  since the last park (a "pending wake-up") makes park return at once,
 *  so wake-before-park is not lost. Must be called from a fibril. */
FIBRIL_API void fibril_park(void);

/** fibril_park() with a deadline on CLOCK_MONOTONIC (fibril_now_ns()).
 *  Returns 0 when woken, -ETIMEDOUT when the deadline passed first.
 *  Timers fire from fibril_sched_run(); the host loop sleeps at most
 *  fibril_sched_timeout_ms(). */
FIBRIL_API int fibril_park_until(uint64_t deadline_ns);

/** Makes a parked fibril runnable (or records a pending wake-up if it is
 *  not parked). Same thread only. Never switches. */
FIBRIL_API void fibril_wake(fibril_t *f);

/** Ends the running fibril. Returning from its function does the same. */
FIBRIL_API void fibril_exit(void) __attribute__((noreturn));

/** Waits for @f to exit and frees it. From a fibril it parks; from the
 *  scheduler's context it runs the scheduler until @f has exited.
 *  Returns 0, -EINVAL for a detached fibril or self, -EDEADLK if
 *  outside a fibril nothing runnable remains and @f has not exited. */
FIBRIL_API int fibril_join(fibril_t *f);

/** Detaches @f: it is freed when it exits; the handle must not be used
 *  afterwards. */
FIBRIL_API void fibril_detach(fibril_t *f);

/** Runs runnable fibrils and fires expired timers until none is
 *  runnable. Called by the host loop from the scheduler's context.
 *  Returns how many switches into fibrils were made. */
FIBRIL_API int fibril_sched_run(void);

/** How long the host loop may sleep: 0 if something is runnable, the
 *  milliseconds (rounded up) to the nearest timed park, or -1 for none. */
FIBRIL_API int fibril_sched_timeout_ms(void);

/** Number of fibrils alive (created and not yet exited) on this thread. */
FIBRIL_API unsigned fibril_sched_count(void);

/** This thread's scheduler, counted (all zero without a scheduler). */
struct fibril_sched_stats {
	uint64_t created;       /**< fibrils made since fibril_sched_init() */
	uint64_t switches;      /**< switches into fibrils */
	unsigned alive;         /**< made and not yet exited */
	unsigned runnable;      /**< waiting for their turn (not the running one) */
	unsigned parked;        /**< waiting for a wake-up: an async call, a
	                             wait queue, a timer, fibril_park() */
	unsigned timed;         /**< parked with a deadline (fibril_park_until) */
};
/** Fills @out; for monitoring. Cheap: a walk of the run queue only. */
FIBRIL_API void fibril_sched_stats(struct fibril_sched_stats *out);

/** CLOCK_MONOTONIC in nanoseconds. */
FIBRIL_API uint64_t fibril_now_ns(void);

/** The fibril's name ("" if none). */
FIBRIL_API const char *fibril_name(const fibril_t *f);

/** Per-fibril pointer slots for layers above (async, daemon). Slot
 *  FIBRIL_SLOT_ASYNC belongs to the async layer, FIBRIL_SLOT_USER to the
 *  application. Returns NULL for an out-of-range slot. */
enum { FIBRIL_SLOT_ASYNC = 0, FIBRIL_SLOT_LOOKUP = 1, FIBRIL_SLOT_USER = 2,
       FIBRIL_NSLOTS = 4 };
FIBRIL_API void **fibril_slot(fibril_t *f, unsigned slot);

/** A wait queue: fibrils park on it until woken. Zero-initialised or
 *  fibril_waitq_init()'d; single-thread, like everything here. */
struct fibril_waitq {
	fibril_t *head, *tail;
};

FIBRIL_API void fibril_waitq_init(struct fibril_waitq *q);

/** Parks the running fibril on @q until woken or @deadline_ns passes
 *  (0: no deadline). Returns 0 or -ETIMEDOUT. As with fibril_park(), a
 *  pending wake-up or any fibril_wake() of the waiter also ends the wait
 *  (returning 0, off the queue): callers re-check their condition. */
FIBRIL_API int fibril_waitq_wait(struct fibril_waitq *q, uint64_t deadline_ns);

/** Wakes the oldest waiter; returns 1 if one was woken, else 0. */
FIBRIL_API int fibril_waitq_wake_one(struct fibril_waitq *q);

/** Wakes every waiter; returns how many. */
FIBRIL_API int fibril_waitq_wake_all(struct fibril_waitq *q);

#ifdef __cplusplus
}
#endif
#endif
