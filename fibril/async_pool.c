/*
 * The thread-pool backend: bounded, reused threads that run the plain
 * system call. Serves what the ring lacks (getdents64, readlinkat) and
 * everything when io_uring is unavailable.
 *
 * An engine has up to two pools: the foreground one, and one for calls
 * submitted with ASYNC_F_BACKGROUND, made on first use, whose threads
 * run at SCHED_IDLE. The kernel then gives them only the CPU time that
 * everything else leaves, and a completing background call never
 * preempts the thread serving requests (a slow listing's statx calls
 * woke io-wq workers 2,000 times per listing, each able to preempt).
 *
 * Threads are spawned on demand up to the bound and then kept. Results
 * go to a done list; the foreground pool writes the engine's eventfd
 * only on the transition empty -> non-empty, so a burst of completions
 * costs one wake-up; the background pool batches further (below). The
 * engine's thread moves them to *result in async__pool_reap().
 */
#include "first.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fibril/async_int.h"

enum { ASYNC__QUEUED = 1, ASYNC__RUNNING = 2, ASYNC__FINISHED = 3 };

struct async__pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct async__op *qhead, *qtail;  /* waiting for a thread */
	struct async__op *dhead, *dtail;  /* finished, not yet reaped */
	/* Submitted but not yet handed over: the engine's thread only.
	 * Handing over a batch costs one lock round instead of one per
	 * call (cached stats contend badly on the queue lock otherwise). */
	struct async__op *lhead, *ltail;
	unsigned lcount;
	atomic_uint ndone;
	/* A woken thread only stops counting as idle once it runs, so
	 * spawning is decided from busy threads and queue length, not
	 * from idle: a thread that is not busy will take one call. */
	unsigned nthreads, idle, busy, qlen, max;
	bool stop;
	bool background;        /* threads run at SCHED_IDLE */
	const char *name;       /* its threads' (top -H, ps -L) */
	/* The eventfd was written since the done list was last emptied;
	 * read unlocked by pool_busy(). */
	atomic_bool signalled;
	unsigned outstanding;   /* submitted, not yet completed: engine's thread */
	int efd;
	pthread_t *threads;
};

static void *async__pool_main(void *arg)
{
	struct async__pool *p = arg;

	(void)pthread_setname_np(pthread_self(), p->name);
	/* Cannot fail for SCHED_IDLE short of a seccomp filter; the calls
	 * then simply run at normal priority. */
	if (p->background)
		(void)sched_setscheduler(0, SCHED_IDLE,
					 &(struct sched_param){ .sched_priority = 0 });
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->qhead && !p->stop) {
			p->idle++;
			pthread_cond_wait(&p->cv, &p->mu);
			p->idle--;
		}
		if (!p->qhead)
			break;
		struct async__op *op = p->qhead;
		p->qhead = op->next;
		if (!p->qhead)
			p->qtail = NULL;
		op->pool_state = ASYNC__RUNNING;
		p->qlen--;
		p->busy++;
		pthread_mutex_unlock(&p->mu);

		long res = async__exec_op(op);

		pthread_mutex_lock(&p->mu);
		p->busy--;
		op->res = res;
		op->pool_state = ASYNC__FINISHED;
		op->next = NULL;
		if (p->dtail)
			p->dtail->next = op;
		else
			p->dhead = op;
		p->dtail = op;
		unsigned done = atomic_fetch_add_explicit(&p->ndone, 1,
							  memory_order_relaxed) + 1;
		/* Background completions wake the engine's thread in
		 * batches: once an eighth of what is outstanding is done, or
		 * when nothing else is left to run; while any is outstanding
		 * the host loop looks every ASYNC__BG_HOLD_MS anyway
		 * (async_engine_timeout_ms()). A slow listing's
		 * 2,000 stats then cost it tens of wake-ups, not hundreds,
		 * each of which could preempt a thread serving requests. An
		 * eighth rather than a quarter keeps a slow listing's window
		 * fuller (2,000 entries on slow FUSE: 0.073-0.082 s against
		 * 0.081-0.086 s). */
		unsigned rest = p->qlen + p->busy;
		if (!atomic_load_explicit(&p->signalled, memory_order_relaxed) &&
		    (!p->background || rest == 0 || 7 * done >= rest)) {
			atomic_store_explicit(&p->signalled, true,
					      memory_order_relaxed);
			/* Written unlocked: the write wakes the engine's
			 * thread, which preempts a SCHED_IDLE writer at once
			 * and would then wait in pool_reap() for the mutex
			 * until the writer got CPU time again (the reviewer
			 * measured 1,861 contended waits in 2,000 calls). A
			 * reap in between makes this wake-up a spare one. */
			pthread_mutex_unlock(&p->mu);
			uint64_t one = 1;
			/* Cannot fail short of EBADF: the counter cannot reach
			 * its maximum with our increments. */
			ssize_t w = write(p->efd, &one, sizeof(one));
			(void)w;
			pthread_mutex_lock(&p->mu);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Every pool op completes here (engine's thread). */
static void pool_complete(async_engine_t *e, struct async__pool *p,
			  struct async__op *op, long res)
{
	p->outstanding--;
	async__complete(e, op, res);
}

static struct async__pool *pool_new(int efd, unsigned max, bool background,
				    const char *name)
{
	struct async__pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->max = max;
	p->threads = calloc(p->max, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->efd = efd;
	p->background = background;
	p->name = name;
	return p;
}

int async__pool_create(async_engine_t *e, unsigned nthreads, unsigned bg_threads)
{
	e->pool = pool_new(e->efd, nthreads ? nthreads : 16, false, "fibril-pool");
	e->bg_max = bg_threads ? bg_threads : 64;
	return e->pool ? 0 : -ENOMEM;
}

/* Signals stay with the application's threads; a small stack is
 * enough for one system call. */
static int async__pool_spawn(struct async__pool *p, pthread_t *t)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t, &attr, async__pool_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return -rc;
}

#define ASYNC__POOL_BATCH 32

static void pool_flush(async_engine_t *e, struct async__pool *p);

static int pool_enqueue(async_engine_t *e, struct async__pool *p,
			struct async__op *op)
{
	p->outstanding++;
	op->pool_state = ASYNC__QUEUED;
	op->next = NULL;
	if (p->ltail)
		p->ltail->next = op;
	else
		p->lhead = op;
	p->ltail = op;
	if (++p->lcount >= ASYNC__POOL_BATCH)
		pool_flush(e, p);
	else if (p->lcount == 1)
		async__kick(e);
	return 0;
}

int async__pool_submit(async_engine_t *e, struct async__op *op, bool background)
{
	struct async__pool *p = e->pool;

	/* Without a background pool (out of memory) the call still runs,
	 * in the foreground. */
	if (background && !e->bgpool)
		e->bgpool = pool_new(e->efd, e->bg_max, true, "fibril-bg");
	if (background && e->bgpool)
		p = e->bgpool;
	op->where = p == e->pool ? ASYNC__IN_POOL : ASYNC__IN_BGPOOL;
	return pool_enqueue(e, p, op);
}

/* Cached stats only use CPU: more threads running them than CPUs only
 * makes the threads take turns, and each turn a thread sleeps costs a
 * wake-up. On the foreground pool's 16 threads a 100,000-entry loop left
 * two CPUs 10% idle and took 0.63 of the plain loop's time; on three,
 * 4% and 0.54 (docs/DESIGN.md, "Batched stat runs"). The one more than
 * the CPUs keeps a CPU busy while a stat waits for an inode's block. */
int async__pool_submit_batch(async_engine_t *e, struct async__op *op)
{
	if (!e->batchpool) {
		cpu_set_t set;
		unsigned n = 1;
		if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1)
			n = (unsigned)CPU_COUNT(&set);
		e->batchpool = pool_new(e->efd, n + 1, false, "fibril-batch");
	}
	if (!e->batchpool)
		return async__pool_submit(e, op, false);
	op->where = ASYNC__IN_BATCHPOOL;
	return pool_enqueue(e, e->batchpool, op);
}

static void pool_flush(async_engine_t *e, struct async__pool *p)
{
	struct async__op *list = p ? p->lhead : NULL;
	unsigned n, spawn = 0, first, free_threads;

	if (!list)
		return;
	n = p->lcount;
	pthread_mutex_lock(&p->mu);
	if (p->qtail)
		p->qtail->next = list;
	else
		p->qhead = list;
	p->qtail = p->ltail;
	p->qlen += n;
	free_threads = p->nthreads - p->busy;
	if (p->qlen > free_threads) {
		spawn = p->qlen - free_threads;
		if (spawn > p->max - p->nthreads)
			spawn = p->max - p->nthreads;
	}
	first = p->nthreads;
	p->nthreads += spawn;
	for (unsigned i = 0; i < n && i < p->idle; i++)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	p->lhead = p->ltail = NULL;
	p->lcount = 0;

	for (unsigned i = 0; i < spawn; i++) {
		if (async__pool_spawn(p, &p->threads[first + i]) == 0)
			continue;
		pthread_mutex_lock(&p->mu);
		p->nthreads = first + i;
		/* No thread at all: take the calls back and run them here,
		 * synchronously, as at the parallelism limit. */
		list = p->nthreads ? NULL : p->qhead;
		if (list) {
			p->qhead = p->qtail = NULL;
			p->qlen = 0;
		}
		pthread_mutex_unlock(&p->mu);
		while (list) {
			struct async__op *op = list;
			list = op->next;
			op->next = NULL;
			pool_complete(e, p, op, async__exec_op(op));
		}
		break;
	}
}

void async__pool_flush(async_engine_t *e)
{
	pool_flush(e, e->pool);
	pool_flush(e, e->bgpool);
	pool_flush(e, e->batchpool);
}

static int pool_reap(async_engine_t *e, struct async__pool *p, unsigned budget)
{
	struct async__op *list, *rest = NULL;
	int n = 0;

	if (!p || atomic_load_explicit(&p->ndone, memory_order_relaxed) == 0)
		return 0;
	pthread_mutex_lock(&p->mu);
	list = p->dhead;
	if (budget) {
		struct async__op *last = NULL, *it = list;
		for (unsigned i = 0; it && i < budget; i++) {
			last = it;
			it = it->next;
		}
		rest = it;
		if (last)
			last->next = NULL;
	}
	p->dhead = rest;
	/* Left over by the budget: ready now, so pool_busy() must say so
	 * even for a batch that was collected unsignalled. */
	atomic_store_explicit(&p->signalled, rest != NULL, memory_order_relaxed);
	if (!rest)
		p->dtail = NULL;
	pthread_mutex_unlock(&p->mu);

	while (list) {
		struct async__op *op = list;
		list = op->next;
		op->next = NULL;
		atomic_fetch_sub_explicit(&p->ndone, 1, memory_order_relaxed);
		pool_complete(e, p, op, op->res);
		n++;
	}
	return n;
}

int async__pool_reap(async_engine_t *e, unsigned budget)
{
	int n = pool_reap(e, e->pool, budget);
	if (!budget || (unsigned)n < budget)
		n += pool_reap(e, e->batchpool, budget ? budget - n : 0);
	if (!budget || (unsigned)n < budget)
		n += pool_reap(e, e->bgpool, budget ? budget - n : 0);
	return n;
}

int async__pool_cancel(async_engine_t *e, struct async__op *op)
{
	struct async__pool *p = op->where == ASYNC__IN_BGPOOL ? e->bgpool :
	                        op->where == ASYNC__IN_BATCHPOOL ? e->batchpool :
	                        e->pool;
	struct async__op **pp;
	int rc = -EBUSY;

	struct async__op *lprev = NULL;
	for (pp = &p->lhead; *pp; lprev = *pp, pp = &(*pp)->next) {
		if (*pp != op)
			continue;
		*pp = op->next;
		if (p->ltail == op)
			p->ltail = lprev;
		p->lcount--;
		op->next = NULL;
		pool_complete(e, p, op, -ECANCELED);
		return 0;
	}
	pthread_mutex_lock(&p->mu);
	if (op->pool_state == ASYNC__QUEUED) {
		struct async__op *prev = NULL;
		for (pp = &p->qhead; *pp; prev = *pp, pp = &(*pp)->next) {
			if (*pp != op)
				continue;
			*pp = op->next;
			if (p->qtail == op)
				p->qtail = prev;
			p->qlen--;
			op->next = NULL;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&p->mu);
	if (rc == 0)
		pool_complete(e, p, op, -ECANCELED);
	return rc;
}

static bool pool_run_here(async_engine_t *e, struct async__pool *p, long call)
{
	struct async__op *op, *prev = NULL;

	if (!p)
		return false;
	pthread_mutex_lock(&p->mu);
	/* Near the head only: the lock is the pool threads' too. */
	unsigned look = 64;
	for (op = p->qhead; op && op->call != call && --look;
	     prev = op, op = op->next)
		;
	if (op && op->call != call)
		op = NULL;
	if (op) {
		if (prev)
			prev->next = op->next;
		else
			p->qhead = op->next;
		if (p->qtail == op)
			p->qtail = prev;
		p->qlen--;
		op->pool_state = ASYNC__RUNNING;
		op->next = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	if (!op)
		return false;
	pool_complete(e, p, op, async__exec_op(op));
	return true;
}

bool async__pool_run_here(async_engine_t *e, long call)
{
	return pool_run_here(e, e->batchpool, call) ||
	       pool_run_here(e, e->pool, call);
}

/* Unsignalled background completions do not count: the host loop would
 * spin on them instead of sleeping until the batch is signalled. */
static bool pool_busy(struct async__pool *p)
{
	return p && (p->lhead ||
	       (atomic_load_explicit(&p->ndone, memory_order_relaxed) > 0 &&
		(!p->background ||
		 atomic_load_explicit(&p->signalled, memory_order_relaxed))));
}

bool async__pool_busy(async_engine_t *e)
{
	return pool_busy(e->pool) || pool_busy(e->bgpool) ||
	       pool_busy(e->batchpool);
}

/* Every 5 ms while any background call is outstanding, even one that
 * never returns (a hard NFS mount whose server is gone): the price of
 * batching without a timer on the pool's side. */
bool async__pool_held(async_engine_t *e)
{
	return e->bgpool && e->bgpool->outstanding > 0;
}

unsigned async__pool_depth(const async_engine_t *e)
{
	return (e->pool ? e->pool->outstanding : 0) +
	       (e->bgpool ? e->bgpool->outstanding : 0) +
	       (e->batchpool ? e->batchpool->outstanding : 0);
}

static void pool_destroy(async_engine_t *e, struct async__pool *p)
{
	struct async__op *q;

	if (!p)
		return;
	while (p->lhead) {
		struct async__op *op = p->lhead;
		p->lhead = op->next;
		op->next = NULL;
		pool_complete(e, p, op, -ECANCELED);
	}
	p->ltail = NULL;
	p->lcount = 0;
	pthread_mutex_lock(&p->mu);
	q = p->qhead;
	p->qhead = p->qtail = NULL;
	p->qlen = 0;
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	while (q) {
		struct async__op *op = q;
		q = op->next;
		op->next = NULL;
		pool_complete(e, p, op, -ECANCELED);
	}
	/* Running calls finish on their own: a thread cannot be taken out
	 * of a system call safely. */
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pool_reap(e, p, 0);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p);
}

void async__pool_destroy(async_engine_t *e)
{
	pool_destroy(e, e->bgpool);
	e->bgpool = NULL;
	pool_destroy(e, e->batchpool);
	e->batchpool = NULL;
	pool_destroy(e, e->pool);
	e->pool = NULL;
}
