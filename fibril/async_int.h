/*
 * Private to fibril/async*.c: the engine, its operations and the two
 * backends (the async engine's private names: async__, ASYNC__).
 * Nothing here is exported.
 *
 * Threading: everything belongs to the engine's thread, except the
 * pool's queue and done list (struct async__pool, under its mutex) and the
 * eventfd, which pool threads write. *result is only ever written by the
 * engine's thread, so a fibril reading it needs no barrier.
 */
#ifndef FIBRIL_ASYNC_INT_H
#define FIBRIL_ASYNC_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "fibril/async.h"
#include "fibril/fibril.h"

struct async__uring;
struct async__pool;
struct async__batch;
struct async__cred;
struct async__evhost;

/* op->holds: who still needs the op's memory. Freed when none does. */
enum {
	ASYNC__HOLD_OWNER = 1,  /* on its owner's list until a wait reaps it   */
	ASYNC__HOLD_WAITER = 2, /* a wait_for_async(cookie) is waiting on it    */
	ASYNC__HOLD_CB = 4,     /* its callback has not run yet                 */
};

enum { ASYNC__PENDING = 1, ASYNC__DONE = 2 };

/* Where a pending op lives. */
enum { ASYNC__IN_RING = 1, ASYNC__IN_POOL = 2, ASYNC__IN_BGPOOL = 3,
       ASYNC__IN_BATCH = 4, ASYNC__IN_BATCHPOOL = 5 };

struct async__owner;

struct async__op {
	long cookie;            /* 0 free, -1 reaped (cookie no longer valid) */
	long *result;
	long res;
	unsigned long args[6];
	uint8_t call;
	uint8_t state;
	uint8_t holds;
	uint8_t where;
	uint8_t cancel_requested;
	uint8_t pool_state;     /* async__pool's: queued / running / done */
	uint32_t gen;           /* bumped at each reuse of this slot */
	uint32_t idx;
	struct async__owner *owner;
	struct async__op *onext, *oprev;   /* owner's list */
	struct async__op *next;            /* free list, pool queue, cb list */
	fibril_t *waiter;              /* or ASYNC__THREAD_WAITER */
	void (*cb)(void *arg, long res);
	void *cb_arg;
	struct async__cred *cred;          /* run as this user (async_cred.c) */
};

#define ASYNC__THREAD_WAITER ((fibril_t *)(uintptr_t)1)

/* Internal call, run on a pool thread: reads the directory open on
 * args[0] ahead of the caller's own readdir, then closes it
 * (async_ahead.c, async__ahead_read). Never in the public table. */
#define ASYNC__CALL_DIR_AHEAD ASYNC_CALL_MAX
/* Internal call, run on a pool thread: a batch of statx ops
 * (async_batch.c), args[0] and [1] as for ASYNC_CALL. Its members are
 * accounted, the batch itself is not; its callback runs as soon as it
 * completes. */
#define ASYNC__CALL_BATCH (ASYNC_CALL_MAX + 1)

/* The submitter: one per fibril that has calls outstanding (hung off
 * fibril_slot(f, FIBRIL_SLOT_ASYNC)), plus one for the thread itself. */
struct async__owner {
	fibril_t *f;            /* NULL: the thread outside fibrils */
	struct async__op *head;
	unsigned pending;
	bool waiting_all;
	bool scan_ahead;        /* this run's directory read-ahead was started */
	long scan_dfd;          /* dirfd of the current run of statx calls */
	unsigned scan_run;      /* statx calls in a row relative to scan_dfd */
	int8_t scan_local;      /* scan_dfd is on a local mount; -1 not asked */
	struct async__owner *anext, *aprev; /* engine's list of fibril owners */
};

#define ASYNC__CHUNK 256u

struct async_engine {
	int efd;                /* the one fd: ring's registered eventfd, pool writes it too */
	unsigned inflight;
	unsigned max_inflight;
	bool queue_at_limit;    /* opts.queue_at_limit: never run a call here */
	const char *backend;
	struct async__uring *ring;  /* NULL on the threads backend */
	struct async__pool *pool;   /* always present; threads spawn on demand */
	struct async__pool *bgpool; /* ASYNC_F_BACKGROUND calls; made on first use */
	unsigned bg_max;        /* its thread bound */
	/* Batches of stats (async_batch.c), made on first use: a thread
	 * per CPU the engine's thread may use, and one more. */
	struct async__pool *batchpool;
	uint8_t route_ring[ASYNC_CALL_MAX]; /* 1: this call goes to the ring */

	struct async__op **chunks;
	unsigned nchunks;
	struct async__op *free_ops;
	struct async__batch *batch;       /* being filled (async_batch.c) */
	struct async__batch *free_batches;

	struct async__owner thread_owner;
	struct async__owner *owners;        /* fibril owners, for destroy */

	struct async__op *cb_head, *cb_tail; /* completed, callback not yet run */

	/* Host loop hook: called when the host must call process soon
	 * (queued submissions, deferred callbacks, fibrils woken). */
	void (*kick)(void *arg);
	void *kick_arg;
	bool kicked;
	bool destroying;
	struct async__evhost *evhost;  /* async_event.c, when attached */
	/* Set by a host adapter (async_event.c) that must let go before
	 * the engine is freed: the engine calls it without knowing it. */
	void (*host_detach)(async_engine_t *e);

	void (*log)(int level, const char *msg, void *arg);
	void *log_arg;

	/* async_engine_stats(): callers' calls by enum async_backend_id */
	uint64_t st_sync[ASYNC_NBACKENDS], st_inline[ASYNC_NBACKENDS];
	uint64_t st_async[ASYNC_NBACKENDS];
};

/* async_op.c: the ops, their completion and the host hook; below the
 * backends and the dispatcher, calling neither. */
extern __thread async_engine_t *async__cur   /* this thread's engine */
	__attribute__((tls_model("initial-exec")));
struct async__op *async__op_alloc(async_engine_t *e);
void async__op_free(async_engine_t *e, struct async__op *op);
void async__op_discard(async_engine_t *e, struct async__op *op);
struct async__op *async__op_find(async_engine_t *e, long cookie);
/* Drops @hold from op->holds; frees a completed op nobody holds. */
void async__release(async_engine_t *e, struct async__op *op, unsigned hold);
/* A backend's report that @op finished with @res (engine's thread). */
void async__complete(async_engine_t *e, struct async__op *op, long res);
/* Runs queued callbacks, at most @budget (0: all); returns how many. */
int async__run_callbacks(async_engine_t *e, unsigned budget);
void async__kick(async_engine_t *e);
void async__log(async_engine_t *e, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* async.c: the dispatcher */
void async__flush(async_engine_t *e);  /* both backends' queued submissions */
/* The blocking wrappers' fast path (async_wrap.c): runs the call inline
 * when it cannot block, counted as async_submit() would; true when done
 * (*res set), else the caller submits it with ASYNC_F_NOINLINE. */
bool async__run_inline(async_engine_t *e, long call, const unsigned long *args,
                       long *res);

/* async_own.c: the engine's own calls. async__ahead_start queues the
 * read-ahead of @dfd's directory on the pool (async__close_fd:
 * async_mnt.h). */
void async__ahead_start(async_engine_t *e, long dfd);

/* async_calls.c: the call table, the plain system calls and the inline
 * fast paths. */
long async__exec(long call, const unsigned long *args);
/* The same without credentials (async__exec runs it as the user of
 * async__cred_use(), async_cred.c); async__exec_op as @op's user; async__exec_as
 * (async_cred.h) as a given user. */
long async__exec_plain(long call, const unsigned long *args);
long async__exec_op(const struct async__op *op);
/* Tries the call inline when it cannot block (RESOLVE_CACHED open,
 * RWF_NOWAIT read, fstat of an open fd, close). Returns true and sets
 * *res when done. */
bool async__try_inline(long call, const unsigned long *args, long *res);

/* async_ahead.c: the policy on runs of statx calls in one directory.
 * async__run_note is told of every call @o submitted (after it is
 * accounted, before it goes to a backend) and says what the engine
 * should do: ASYNC__RUN_AHEAD once per run, read that directory
 * (args[0]) ahead; ASYNC__RUN_BATCH, send this call in a batch
 * (async_batch.c). async__ahead_reset ends the run. async__ahead_read
 * is the ASYNC__CALL_DIR_AHEAD call itself. */
enum { ASYNC__RUN_AHEAD = 1, ASYNC__RUN_BATCH = 2 };
unsigned async__run_note(struct async__owner *o, long call,
			 const unsigned long *args);
void async__ahead_reset(struct async__owner *o);
long async__ahead_read(int fd);

/* async_batch.c: statx calls of a local run, sent to the pool in
 * batches. async__batch_add takes an accounted op; the batch goes when
 * full or at async__batch_flush (the engine's flush). async__batch_cancel
 * drops an op not yet handed over (0) or says -EBUSY. At destroy,
 * async__batch_cancel_all before the pool goes, async__batch_free after. */
int async__batch_add(async_engine_t *e, struct async__op *op);  /* or -ENOMEM */
void async__batch_flush(async_engine_t *e);
int async__batch_cancel(async_engine_t *e, struct async__op *op);
void async__batch_cancel_all(async_engine_t *e);
void async__batch_free(async_engine_t *e);

/* async_uring.c */
int async__uring_create(async_engine_t *e, const struct async_engine_opts *o);
bool async__uring_supports(async_engine_t *e, long call, const unsigned long *args);
int async__uring_submit(async_engine_t *e, struct async__op *op);
int async__uring_flush(async_engine_t *e);
int async__uring_reap(async_engine_t *e, unsigned budget);
int async__uring_cancel(async_engine_t *e, struct async__op *op);
/* The ring's personality id for @c, registered on first use; -errno. */
int async__uring_personality(async_engine_t *e, struct async__cred *c);
bool async__uring_busy(async_engine_t *e);  /* queued SQEs or ready CQEs */
unsigned async__uring_depth(const async_engine_t *e);  /* ops submitted, not completed */
void async__uring_destroy(async_engine_t *e);

/* async_pool.c */
int async__pool_create(async_engine_t *e, unsigned nthreads, unsigned bg_threads);
/* Sets op->where: the background pool's when @background (and it
 * could be made), else the foreground pool's. */
int async__pool_submit(async_engine_t *e, struct async__op *op, bool background);
/* The same, to the batch pool (or the foreground pool without one). */
int async__pool_submit_batch(async_engine_t *e, struct async__op *op);
void async__pool_flush(async_engine_t *e);  /* hands queued calls to the threads */
int async__pool_reap(async_engine_t *e, unsigned budget);   /* every pool */
int async__pool_cancel(async_engine_t *e, struct async__op *op); /* 0 or -EBUSY (running) */
bool async__pool_busy(async_engine_t *e);    /* completions waiting */
/* Background calls outstanding: their completions may be held back
 * unsignalled (the batching in async_pool.c), so the host loop comes
 * back within ASYNC__BG_HOLD_MS to look. */
bool async__pool_held(async_engine_t *e);
/* Ops the pools hold: queued, running, or done and not yet reaped. */
unsigned async__pool_depth(const async_engine_t *e);
/* Takes one queued call of @call back from the batch or the foreground
 * pool and runs it on this thread; false if none was queued. */
bool async__pool_run_here(async_engine_t *e, long call);
#define ASYNC__BG_HOLD_MS 5
void async__pool_destroy(async_engine_t *e);

#endif
