/*
 * The async contract (docs/DESIGN.md, "The async contract"): submit,
 * wait, cancel, the parallelism limit, and the engine around the two
 * backends.
 */
#include "first.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <syslog.h>
#include <unistd.h>

#include "fibril/async_int.h"
#include "fibril/async_cred.h"
#include "fibril/async_mnt.h"

#define ASYNC__FLAGS_ALL (ASYNC_F_SYNC | ASYNC_F_NOINLINE | ASYNC_F_BACKGROUND)

void async__flush(async_engine_t *e)
{
	async__batch_flush(e);
	async__uring_flush(e);
	async__pool_flush(e);
}

/* ---- owners ---- */

static struct async__owner *async__owner_get(async_engine_t *e, fibril_t *self,
                                     bool create)
{
	if (!self)
		return &e->thread_owner;
	void **slot = fibril_slot(self, FIBRIL_SLOT_ASYNC);
	if (!slot)
		return NULL;
	if (*slot || !create)
		return *slot;
	struct async__owner *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->f = self;
	async__ahead_reset(o);
	o->anext = e->owners;
	if (e->owners)
		e->owners->aprev = o;
	e->owners = o;
	*slot = o;
	return o;
}

/* Called from the owner's own context only, so its slot is safe. */
static void async__owner_put(async_engine_t *e, struct async__owner *o)
{
	if (!o->f || o->head || o->pending)
		return;
	*fibril_slot(o->f, FIBRIL_SLOT_ASYNC) = NULL;
	if (o->aprev)
		o->aprev->anext = o->anext;
	else
		e->owners = o->anext;
	if (o->anext)
		o->anext->aprev = o->aprev;
	free(o);
}

static void async__owner_unlink(struct async__op *op)
{
	struct async__owner *o = op->owner;

	if (op->oprev)
		op->oprev->onext = op->onext;
	else
		o->head = op->onext;
	if (op->onext)
		op->onext->oprev = op->oprev;
	op->onext = op->oprev = NULL;
}

/* Reaps @op for a wait: the cookie stops being valid. */
static void async__reap(async_engine_t *e, struct async__op *op)
{
	struct async__owner *o = op->owner;

	op->cookie = -1;
	if (o)
		async__owner_unlink(op);
	async__release(e, op, ASYNC__HOLD_OWNER | ASYNC__HOLD_WAITER);
}

static int async__reap_backends(async_engine_t *e, unsigned budget)
{
	int n = 0, r;

	if (e->ring) {
		r = async__uring_reap(e, budget);
		if (r < 0)
			return r;
		n += r;
	}
	if (!budget || (unsigned)n < budget) {
		r = async__pool_reap(e, budget ? budget - n : 0);
		if (r < 0)
			return r;
		n += r;
	}
	return n;
}

/* ---- submit ---- */

/* -errno when the call cannot be submitted at all. */
static int async__submit_check(const async_engine_t *e, unsigned long flags,
                               const long *result, long call,
                               const unsigned long *args)
{
	const struct async_call_info *info = async_call_info(call);

	if (flags & ~ASYNC__FLAGS_ALL)
		return -EINVAL;
	if (!info)
		return -ENOSYS;
	if (!result || (info->nargs && !args))
		return -EFAULT;
	/* (a null function would only fault later, on a pool thread) */
	if (call == ASYNC_CALL && !args[0])
		return -EFAULT;
	if (!e || e->destroying)
		return -ENXIO;
	return 0;
}

/* Runs the call on this thread when it asks to be synchronous, cannot
 * block, or the parallelism limit is reached; true when *result holds
 * its result. */
static bool async__submit_here(async_engine_t *e, unsigned long flags,
                               long *result, long call,
                               const unsigned long *args, bool *inl)
{
	long res;

	if (flags & ASYNC_F_SYNC) {
		*result = async__exec(call, args);
		return true;
	}
	if (!(flags & ASYNC_F_NOINLINE) && async__try_inline(call, args, &res)) {
		*result = res;
		*inl = true;
		return true;
	}
	if (e->inflight >= e->max_inflight) {
		/* Before giving up on asynchrony, collect what finished: a
		 * readdir-then-stat loop that never waits would otherwise run
		 * every call after the first max_inflight synchronously.
		 * Callbacks stay queued for process(). */
		async__pool_flush(e);
		async__reap_backends(e, 0);
		if (e->inflight >= e->max_inflight && !e->queue_at_limit) {
			*result = async__exec(call, args);
			return true;
		}
	}
	return false;
}

/* A new op for the call, held by @cb or else by the calling fibril (or
 * thread); NULL when out of memory. */
static struct async__op *async__op_new(async_engine_t *e, long call,
                                       const unsigned long *args,
                                       void (*cb)(void *, long), void *cb_arg)
{
	unsigned nargs = async_call_info(call)->nargs;
	struct async__op *op = async__op_alloc(e);

	if (!op)
		return NULL;
	op->call = (uint8_t)call;
	op->cred = async__cred_hold(async__cred_current());
	memcpy(op->args, args ? args : (const unsigned long[6]){ 0 },
	       (nargs ? nargs : 1) * sizeof(*args));
	op->holds = 0;
	if (cb) {
		op->cb = cb;
		op->cb_arg = cb_arg;
		op->holds |= ASYNC__HOLD_CB;
		return op;
	}
	struct async__owner *o = async__owner_get(e, fibril_self(), true);
	if (!o) {
		async__op_free(e, op);
		return NULL;
	}
	op->owner = o;
	op->holds |= ASYNC__HOLD_OWNER;
	return op;
}

/* Published before the backend can see it; only this thread ever
 * writes *result, at completion. Accounted first too: a backend may
 * complete it before returning (a pool without threads). */
static void async__op_account(async_engine_t *e, struct async__op *op,
                              long *result)
{
	struct async__owner *o = op->owner;

	op->result = result;
	*result = op->cookie;
	e->inflight++;
	if (o) {
		op->oprev = NULL;
		op->onext = o->head;
		if (o->head)
			o->head->oprev = op;
		o->head = op;
		o->pending++;
	}
}

/* Undoes async__op_account() for an op no backend took, and frees it. */
static void async__op_unaccount(async_engine_t *e, struct async__op *op)
{
	struct async__owner *o = op->owner;

	e->inflight--;
	if (o) {
		async__owner_unlink(op);
		o->pending--;
	}
	async__op_discard(e, op);
	if (o)
		async__owner_put(e, o);
}

/* Hands @op to a backend; @over: past the parallelism limit, which
 * only a queue_at_limit engine gets to (to the pool's queue). */
static int async__dispatch(async_engine_t *e, struct async__op *op,
                           unsigned long flags, bool over)
{
	bool bg = flags & ASYNC_F_BACKGROUND;
	int rc;

	/* Background calls never go to the ring: its io-wq workers are
	 * the submitting thread's, at its priority. */
	if (e->ring && !bg && !over &&
	    async__uring_supports(e, op->call, op->args)) {
		op->where = ASYNC__IN_RING;
		rc = async__uring_submit(e, op);
		if (rc < 0 && e->queue_at_limit)
			rc = async__pool_submit(e, op, false);
		return rc;
	}
	return async__pool_submit(e, op, bg);
}

/* Sends @op on its way: in a batch or to a backend, as the policy on
 * runs of stats says (async_ahead.c), with what it sets going. */
static int async__route(async_engine_t *e, struct async__op *op,
                        unsigned long flags, bool over)
{
	unsigned run = async__run_note(op->owner, op->call, op->args);

	if (run & ASYNC__RUN_AHEAD)
		async__ahead_start(e, (long)op->args[0]);
	/* Background stats stay on their SCHED_IDLE pool. */
	if ((run & ASYNC__RUN_BATCH) && !(flags & ASYNC_F_BACKGROUND) &&
	    async__batch_add(e, op) == 0)
		return 0;
	int rc = async__dispatch(e, op, flags, over);
	/* Now, not at the next flush: a function call is a chunk of work
	 * that the pool can start while the caller goes on (a listing's
	 * run of stats while the worker formats the previous window). */
	if (rc == 0 && op->call == ASYNC_CALL)
		async__pool_flush(e);
	return rc;
}

/* The backend a call is meant for (async_engine_stats()). */
static unsigned async__meant(const async_engine_t *e, unsigned long flags,
                             long call, const unsigned long *args)
{
	return e->ring && !(flags & ASYNC_F_BACKGROUND) &&
	       async__uring_supports((async_engine_t *)e, call, args) ?
	       ASYNC_BACKEND_URING : ASYNC_BACKEND_POOL;
}

bool async__run_inline(async_engine_t *e, long call, const unsigned long *args,
                       long *res)
{
	if (e->destroying || !async__try_inline(call, args, res))
		return false;
	unsigned b = async__meant(e, 0, call, args);
	e->st_sync[b]++;
	e->st_inline[b]++;
	return true;
}

static long async__submit(unsigned long flags, long *result, long call,
                      const unsigned long *args,
                      void (*cb)(void *, long), void *cb_arg)
{
	async_engine_t *e = async__cur;
	int rc = async__submit_check(e, flags, result, call, args);
	bool inl = false;

	if (rc < 0)
		return rc;
	if (async__submit_here(e, flags, result, call, args, &inl))
		goto sync;
	/* On a backend the number may be handed out again before we hear
	 * back: what it meant is forgotten now (async_mnt.c). */
	if (call == ASYNC_CLOSE)
		async__fd_forget((long)args[0]);
	bool over = e->inflight >= e->max_inflight;
	struct async__op *op = async__op_new(e, call, args, cb, cb_arg);
	if (!op) {
		if (e->queue_at_limit)
			return -ENOMEM;
		*result = async__exec(call, args);
		goto sync;
	}
	async__op_account(e, op, result);
	if (async__route(e, op, flags, over) < 0) {
		/* The backend is saturated: the call simply goes the other
		 * way, synchronously, as at the parallelism limit. */
		async__op_unaccount(e, op);
		*result = async__exec(call, args);
		goto sync;
	}
	/* (where is 0 when the pool ran it already, having no thread; a
	 * batch is the pool's) */
	e->st_async[op->where == ASYNC__IN_RING ? ASYNC_BACKEND_URING
	                                        : ASYNC_BACKEND_POOL]++;
	return op->cookie;
sync:;
	unsigned b = async__meant(e, flags, call, args);
	e->st_sync[b]++;
	e->st_inline[b] += inl;
	return 0;
}

FIBRIL_API long async_submit(unsigned long flags, long *result, long call,
                             const unsigned long *args)
{
	return async__submit(flags, result, call, args, NULL, NULL);
}

FIBRIL_API long async_submit_cb(unsigned long flags, long *result, long call,
                                const unsigned long *args,
                                void (*cb)(void *arg, long res), void *arg)
{
	if (!cb)
		return -EINVAL;
	return async__submit(flags, result, call, args, cb, arg);
}

/* ---- driving the engine from outside fibrils ---- */

static int async__min_timeout(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/* One step: flush, reap, run fibrils; sleep on the fd only when none of
 * that made progress. */
static int async__drive(async_engine_t *e)
{
	int n = async_engine_process(e, 0);
	if (n < 0)
		return n;
	int ran = fibril_sched_run();
	if (n > 0 || ran > 0)
		return 0;
	/* A thread that waits has nothing else to do: it takes a batch of
	 * stats the pool has not started yet, and the loop's tail runs on
	 * both CPUs. Not where the thread must never run a call itself. */
	if (!e->queue_at_limit && async__pool_run_here(e, ASYNC__CALL_BATCH))
		return 0;
	int t = async__min_timeout(async_engine_timeout_ms(e),
	                       fibril_sched_timeout_ms());
	if (t == 0)
		return 0;
	if (e->inflight == 0 && t < 0)
		return -EDEADLK;  /* nothing in flight, nothing will ever come */
	struct pollfd pfd = { .fd = e->efd, .events = POLLIN };
	if (poll(&pfd, 1, t) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

/* ---- wait ---- */

static long async__wait_one(async_engine_t *e, long cookie)
{
	struct async__op *op = async__op_find(e, cookie);
	fibril_t *self = fibril_self();

	if (!op)
		return -ENOENT;
	if (op->holds & ASYNC__HOLD_WAITER)
		return -EBUSY;
	op->holds |= ASYNC__HOLD_WAITER;
	op->waiter = self ? self : ASYNC__THREAD_WAITER;
	while (op->state != ASYNC__DONE) {
		if (self) {
			async__flush(e);
			fibril_park();
		} else {
			int rc = async__drive(e);
			if (rc < 0 && op->state != ASYNC__DONE) {
				op->waiter = NULL;
				async__release(e, op, ASYNC__HOLD_WAITER);
				return rc;
			}
		}
	}
	long res = op->res;
	struct async__owner *o = op->owner;
	op->waiter = NULL;
	async__reap(e, op);
	if (o && !o->pending)
		async__ahead_reset(o);
	if (o && o->f == self)
		async__owner_put(e, o);
	return res;
}

static long async__wait_all(async_engine_t *e)
{
	fibril_t *self = fibril_self();
	struct async__owner *o = async__owner_get(e, self, false);

	if (!o)
		return 0;
	while (o->pending) {
		if (self) {
			o->waiting_all = true;
			async__flush(e);
			fibril_park();
			o->waiting_all = false;
		} else {
			int rc = async__drive(e);
			if (rc < 0 && o->pending)
				return rc;
		}
	}
	for (struct async__op *op = o->head, *nx; op; op = nx) {
		nx = op->onext;
		if (!(op->holds & ASYNC__HOLD_WAITER))
			async__reap(e, op);
	}
	async__ahead_reset(o);
	async__owner_put(e, o);
	return 0;
}

FIBRIL_API long wait_for_async(long cookie)
{
	async_engine_t *e = async__cur;

	if (!e)
		return -ENXIO;
	if (cookie < 0)
		return -EINVAL;
	return cookie ? async__wait_one(e, cookie) : async__wait_all(e);
}

FIBRIL_API int async_cancel(long cookie)
{
	async_engine_t *e = async__cur;
	struct async__op *op;

	if (!e)
		return -ENXIO;
	op = async__op_find(e, cookie);
	if (!op || op->state != ASYNC__PENDING)
		return -ENOENT;
	if (op->cancel_requested)
		return 0;
	op->cancel_requested = 1;
	if (op->where == ASYNC__IN_POOL || op->where == ASYNC__IN_BGPOOL ||
	    op->where == ASYNC__IN_BATCHPOOL)
		(void)async__pool_cancel(e, op);  /* -EBUSY: running, let it finish */
	else if (op->where == ASYNC__IN_RING)
		(void)async__uring_cancel(e, op);
	else if (op->where == ASYNC__IN_BATCH)
		(void)async__batch_cancel(e, op);  /* -EBUSY: handed over */
	return 0;
}

FIBRIL_API unsigned async_outstanding(void)
{
	async_engine_t *e = async__cur;

	if (!e)
		return 0;
	struct async__owner *o = async__owner_get(e, fibril_self(), false);
	return o ? o->pending : 0;
}

/* ---- engine ---- */

static const char *async__pick_backend(const struct async_engine_opts *o)
{
	const char *b = o ? o->backend : NULL;

	if (!b || !*b || strcmp(b, "auto") == 0) {
		const char *env = getenv("FIBRIL_BACKEND");
		b = env && *env ? env : "auto";
	}
	return b;
}

FIBRIL_API int async_engine_create(const struct async_engine_opts *opts,
                                   async_engine_t **out)
{
	struct async_engine_opts o;
	async_engine_t *e;
	const char *want;
	int rc;

	if (!out)
		return -EINVAL;
	if (async__cur)
		return -EBUSY;
	memset(&o, 0, sizeof(o));
	if (opts)
		o = *opts;
	/* 4096, not 1024: a cold readdir-then-stat loop over 100,000
	 * entries on 2 CPUs ran 6,600-17,800 of its stats synchronously
	 * on the submitting thread at 1024, which then fed the ring's
	 * workers late; at 4096, 200-1,200, and the cold pass took 5-8% less
	 * (stat-bench, interleaved in one run). The CQ grows to 8192
	 * entries (128 KiB); ops are allocated as used. */
	if (!o.max_inflight)
		o.max_inflight = 4096;
	/* A zeroed field takes the default, as everywhere in these opts;
	 * the kernel's own bound (min(SQ size, 4 x CPUs)) is what makes
	 * slow metadata crawl (docs/DESIGN.md, "io-wq worker limits"). */
	if (!o.iowq_bounded)
		o.iowq_bounded = 64;
	want = async__pick_backend(&o);
	if (strcmp(want, "auto") && strcmp(want, "uring") &&
	    strcmp(want, "threads"))
		return -EINVAL;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->max_inflight = o.max_inflight;
	e->queue_at_limit = o.queue_at_limit != 0;
	e->log = o.log;
	e->log_arg = o.log_arg;
	async__ahead_reset(&e->thread_owner);
	e->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->efd < 0) {
		rc = -errno;
		free(e);
		return rc;
	}
	rc = async__pool_create(e, o.pool_threads, o.bg_threads);
	if (rc < 0)
		goto fail;
	if (strcmp(want, "threads") != 0) {
		rc = async__uring_create(e, &o);
		if (rc < 0 && strcmp(want, "uring") == 0) {
			async__log(e, LOG_ERR, "async: io_uring unavailable: %s",
			       strerror(-rc));
			goto fail;
		}
		if (rc < 0)
			async__log(e, LOG_WARNING,
			       "async: io_uring unavailable (%s), using threads",
			       strerror(-rc));
	}
	e->backend = e->ring ? "uring" : "threads";
	if (!e->ring)
		async__log(e, LOG_INFO, "async: backend threads (%u threads, limit %u)",
		       o.pool_threads ? o.pool_threads : 16, e->max_inflight);
	async__cur = e;
	*out = e;
	return 0;
fail:
	async__pool_destroy(e);
	close(e->efd);
	free(e);
	return rc;
}

FIBRIL_API void async_engine_destroy(async_engine_t *e)
{
	if (!e)
		return;
	e->destroying = true;
	if (e->host_detach)
		e->host_detach(e);
	/* Cancel everything, then wait it out: no buffer may be written
	 * after we return. */
	for (unsigned c = 0; c < e->nchunks; c++)
		for (unsigned i = 0; i < ASYNC__CHUNK; i++) {
			struct async__op *op = &e->chunks[c][i];
			if (op->state == ASYNC__PENDING && op->where == ASYNC__IN_RING &&
			    !op->cancel_requested) {
				op->cancel_requested = 1;
				async__uring_cancel(e, op);
			}
		}
	async__uring_destroy(e);
	async__batch_cancel_all(e);
	async__pool_destroy(e);
	/* Callbacks were promised to run once for every cookie handed out. */
	async__run_callbacks(e, 0);
	async__batch_free(e);
	while (e->owners) {
		struct async__owner *o = e->owners;
		e->owners = o->anext;
		free(o);
	}
	for (unsigned c = 0; c < e->nchunks; c++)
		free(e->chunks[c]);
	free(e->chunks);
	close(e->efd);
	if (async__cur == e)
		async__cur = NULL;
	free(e);
}

FIBRIL_API async_engine_t *async_engine_current(void)
{
	return async__cur;
}

FIBRIL_API const char *async_engine_backend(const async_engine_t *e)
{
	return e ? e->backend : NULL;
}

FIBRIL_API int async_engine_fd(const async_engine_t *e)
{
	return e ? e->efd : -EINVAL;
}

FIBRIL_API int async_engine_process(async_engine_t *e, unsigned budget)
{
	uint64_t cnt;
	int n, c;

	if (!e)
		return -EINVAL;
	/* Completions reaped here need no kick: the host runs the
	 * scheduler after process anyway. */
	e->kicked = true;
	/* Drain first: anything that lands after this read signals again. */
	if (read(e->efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN) {
		n = -errno;
		goto out;
	}
	n = async__reap_backends(e, budget);
	if (n < 0)
		goto out;
	c = async__run_callbacks(e, budget);
	if (c > n)
		n = c;
	/* Fibrils may have been woken and will submit more from
	 * fibril_sched_run(); the ones queued so far go now. */
	async__flush(e);
out:
	e->kicked = false;
	return n;
}

FIBRIL_API int async_engine_timeout_ms(const async_engine_t *e)
{
	async_engine_t *m = (async_engine_t *)e;

	if (!e)
		return -1;
	if (e->cb_head || e->batch || async__uring_busy(m) || async__pool_busy(m))
		return 0;
	if (async__pool_held(m))
		return ASYNC__BG_HOLD_MS;
	return -1;
}

FIBRIL_API unsigned async_engine_inflight(const async_engine_t *e)
{
	return e ? e->inflight : 0;
}

FIBRIL_API void async_engine_stats(const async_engine_t *e, struct async_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!e)
		return;
	for (unsigned b = 0; b < ASYNC_NBACKENDS; b++) {
		out->sync[b] = e->st_sync[b];
		out->sync_inline[b] = e->st_inline[b];
		out->async[b] = e->st_async[b];
		out->submitted[b] = e->st_sync[b] + e->st_async[b];
	}
	out->inflight = e->inflight;
	out->depth[ASYNC_BACKEND_URING] = async__uring_depth(e);
	out->depth[ASYNC_BACKEND_POOL] = async__pool_depth(e);
}

FIBRIL_API void async_engine_set_kick(async_engine_t *e,
                                      void (*kick)(void *arg), void *arg)
{
	e->kick = kick;
	e->kick_arg = arg;
	e->kicked = false;
}

FIBRIL_API int async_engine_run(async_engine_t *e)
{
	if (!e)
		return -EINVAL;
	if (fibril_self())
		return -EPERM;
	for (;;) {
		if (fibril_sched_count() == 0 && e->inflight == 0 && !e->cb_head) {
			async_engine_process(e, 0);
			return 0;
		}
		int rc = async__drive(e);
		if (rc < 0)
			return rc;
	}
}
