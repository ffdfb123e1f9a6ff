/*
 * Private to fibril/async*.c: the engine, its operations and the two
 * backends. Nothing here is exported.
 *
 * Threading: everything belongs to the engine's thread, except the
 * pool's queue and done list (struct x__pool, under its mutex) and the
 * eventfd, which pool threads write. *result is only ever written by the
 * engine's thread, so a fibril reading it needs no barrier.
 */
#ifndef FIBRIL_ASYNC_INT_H
#define FIBRIL_ASYNC_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "fibril/async.h"
#include "fibril/fibril.h"

struct x__uring;
struct x__pool;
struct x__cred;
struct x__evhost;

/* op->holds: who still needs the op's memory. Freed when none does. */
enum {
	X__HOLD_OWNER = 1,  /* on its owner's list until a wait reaps it   */
	X__HOLD_WAITER = 2, /* a wait_for_async(cookie) is waiting on it    */
	X__HOLD_CB = 4,     /* its callback has not run yet                 */
};

enum { X__PENDING = 1, X__DONE = 2 };

/* Where a pending op lives. */
enum { X__IN_RING = 1, X__IN_POOL = 2, X__IN_BGPOOL = 3 };

struct x__owner;

struct x__op {
	long cookie;            /* 0 free, -1 reaped (cookie no longer valid) */
	long *result;
	long res;
	unsigned long args[6];
	uint8_t call;
	uint8_t state;
	uint8_t holds;
	uint8_t where;
	uint8_t cancel_requested;
	uint8_t pool_state;     /* x__pool's: queued / running / done */
	uint32_t gen;           /* bumped at each reuse of this slot */
	uint32_t idx;
	struct x__owner *owner;
	struct x__op *onext, *oprev;   /* owner's list */
	struct x__op *next;            /* free list, pool queue, cb list */
	fibril_t *waiter;              /* or X__THREAD_WAITER */
	void (*cb)(void *arg, long res);
	void *cb_arg;
	struct x__cred *cred;          /* run as this user (async_cred.c) */
};

#define X__THREAD_WAITER ((fibril_t *)(uintptr_t)1)

/* Internal call, run on a pool thread: reads the directory open on
 * args[0] ahead of the caller's own readdir, then closes it
 * (async_ahead.c, x__ahead_read). Never in the public table. */
#define X__CALL_DIR_AHEAD ASYNC_CALL_MAX

/* The submitter: one per fibril that has calls outstanding (hung off
 * fibril_slot(f, FIBRIL_SLOT_ASYNC)), plus one for the thread itself. */
struct x__owner {
	fibril_t *f;            /* NULL: the thread outside fibrils */
	struct x__op *head;
	unsigned pending;
	bool waiting_all;
	bool scan_ahead;        /* this run's directory read-ahead was started */
	long scan_dfd;          /* dirfd of the current run of statx calls */
	unsigned scan_run;      /* statx calls in a row relative to scan_dfd */
	struct x__owner *anext, *aprev; /* engine's list of fibril owners */
};

#define X__CHUNK 256u

struct async_engine {
	int efd;                /* the one fd: ring's registered eventfd, pool writes it too */
	unsigned inflight;
	unsigned max_inflight;
	bool queue_at_limit;    /* opts.queue_at_limit: never run a call here */
	const char *backend;
	struct x__uring *ring;  /* NULL on the threads backend */
	struct x__pool *pool;   /* always present; threads spawn on demand */
	struct x__pool *bgpool; /* ASYNC_F_BACKGROUND calls; made on first use */
	unsigned bg_max;        /* its thread bound */
	uint8_t route_ring[ASYNC_CALL_MAX]; /* 1: this call goes to the ring */

	struct x__op **chunks;
	unsigned nchunks;
	struct x__op *free_ops;

	struct x__owner thread_owner;
	struct x__owner *owners;        /* fibril owners, for destroy */

	struct x__op *cb_head, *cb_tail; /* completed, callback not yet run */

	/* Host loop hook: called when the host must call process soon
	 * (queued submissions, deferred callbacks, fibrils woken). */
	void (*kick)(void *arg);
	void *kick_arg;
	bool kicked;
	bool destroying;
	struct x__evhost *evhost;  /* async_event.c, when attached */
	/* Set by a host adapter (async_event.c) that must let go before
	 * the engine is freed: the engine calls it without knowing it. */
	void (*host_detach)(async_engine_t *e);

	void (*log)(int level, const char *msg, void *arg);
	void *log_arg;
};

/* async.c */
void x__complete(async_engine_t *e, struct x__op *op, long res);
void x__kick(async_engine_t *e);
void x__flush(async_engine_t *e);  /* both backends' queued submissions */
void x__log(async_engine_t *e, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* async_calls.c: the call table, the plain system calls and the inline
 * fast paths. */
long x__exec(long call, const unsigned long *args);
/* The same without credentials (x__exec runs it as the user of
 * x__cred_use(), async_cred.c); x__exec_op as @op's user; x__exec_as
 * (async_cred.h) as a given user. */
long x__exec_plain(long call, const unsigned long *args);
long x__exec_op(const struct x__op *op);
/* Tries the call inline when it cannot block (RESOLVE_CACHED open,
 * RWF_NOWAIT read, fstat of an open fd, close). Returns true and sets
 * *res when done. */
bool x__try_inline(long call, const unsigned long *args, long *res);

/* async_ahead.c: the directory read-ahead policy. x__ahead_note is told
 * of every call @o submitted (after it is pending) and returns true
 * once per run of statx calls in one directory when the engine should
 * read that directory (args[0]) ahead; x__ahead_reset ends the run.
 * x__ahead_read is the X__CALL_DIR_AHEAD call itself. */
bool x__ahead_note(struct x__owner *o, long call, const unsigned long *args);
void x__ahead_reset(struct x__owner *o);
long x__ahead_read(int fd);

/* async_uring.c */
int x__uring_create(async_engine_t *e, const struct async_engine_opts *o);
bool x__uring_supports(async_engine_t *e, long call, const unsigned long *args);
int x__uring_submit(async_engine_t *e, struct x__op *op);
int x__uring_flush(async_engine_t *e);
int x__uring_reap(async_engine_t *e, unsigned budget);
int x__uring_cancel(async_engine_t *e, struct x__op *op);
/* The ring's personality id for @c, registered on first use; -errno. */
int x__uring_personality(async_engine_t *e, struct x__cred *c);
bool x__uring_busy(async_engine_t *e);  /* queued SQEs or ready CQEs */
void x__uring_destroy(async_engine_t *e);

/* async_pool.c */
int x__pool_create(async_engine_t *e, unsigned nthreads, unsigned bg_threads);
/* Sets op->where: the background pool's when @background (and it
 * could be made), else the foreground pool's. */
int x__pool_submit(async_engine_t *e, struct x__op *op, bool background);
void x__pool_flush(async_engine_t *e);  /* hands queued calls to the threads */
int x__pool_reap(async_engine_t *e, unsigned budget);   /* both pools */
int x__pool_cancel(async_engine_t *e, struct x__op *op); /* 0 or -EBUSY (running) */
bool x__pool_busy(async_engine_t *e);    /* completions waiting */
/* Background calls outstanding: their completions may be held back
 * unsignalled (the batching in async_pool.c), so the host loop comes
 * back within X__BG_HOLD_MS to look. */
bool x__pool_held(async_engine_t *e);
#define X__BG_HOLD_MS 5
void x__pool_destroy(async_engine_t *e);

#endif
