/*
 * The thread-pool backend: bounded, reused threads that run the plain
 * system call. Serves what the ring lacks (getdents64, readlinkat) and
 * everything when io_uring is unavailable.
 *
 * Threads are spawned on demand up to the bound and then kept. Results
 * go to a done list; only the transition empty -> non-empty writes the
 * engine's eventfd, so a burst of completions costs one wake-up. The
 * engine's thread moves them to *result in x__pool_reap().
 */
#include "first.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fibril/async_int.h"

enum { X__QUEUED = 1, X__RUNNING = 2, X__FINISHED = 3 };

struct x__pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct x__op *qhead, *qtail;  /* waiting for a thread */
	struct x__op *dhead, *dtail;  /* finished, not yet reaped */
	atomic_uint ndone;
	unsigned nthreads, idle, max;
	bool stop;
	int efd;
	pthread_t *threads;
};

static void *x__pool_main(void *arg)
{
	struct x__pool *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->qhead && !p->stop) {
			p->idle++;
			pthread_cond_wait(&p->cv, &p->mu);
			p->idle--;
		}
		if (!p->qhead)
			break;
		struct x__op *op = p->qhead;
		p->qhead = op->next;
		if (!p->qhead)
			p->qtail = NULL;
		op->pool_state = X__RUNNING;
		pthread_mutex_unlock(&p->mu);

		long res = x__exec(op->call, op->args);

		pthread_mutex_lock(&p->mu);
		op->res = res;
		op->pool_state = X__FINISHED;
		op->next = NULL;
		bool was_empty = p->dhead == NULL;
		if (p->dtail)
			p->dtail->next = op;
		else
			p->dhead = op;
		p->dtail = op;
		atomic_fetch_add_explicit(&p->ndone, 1, memory_order_relaxed);
		if (was_empty) {
			uint64_t one = 1;
			/* Cannot fail short of EBADF: the counter cannot reach
			 * its maximum with our increments. */
			ssize_t w = write(p->efd, &one, sizeof(one));
			(void)w;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int x__pool_create(async_engine_t *e, unsigned nthreads)
{
	struct x__pool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->max = nthreads ? nthreads : 16;
	p->threads = calloc(p->max, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->efd = e->efd;
	e->pool = p;
	return 0;
}

/* Signals stay with the application's threads; a small stack is
 * enough for one system call. */
static int x__pool_spawn(struct x__pool *p, pthread_t *t)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t, &attr, x__pool_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return -rc;
}

int x__pool_submit(async_engine_t *e, struct x__op *op)
{
	struct x__pool *p = e->pool;
	bool spawn = false;
	unsigned slot = 0;

	pthread_mutex_lock(&p->mu);
	if (p->idle == 0 && p->nthreads < p->max) {
		slot = p->nthreads++;
		spawn = true;
	}
	pthread_mutex_unlock(&p->mu);
	if (spawn && x__pool_spawn(p, &p->threads[slot]) < 0) {
		pthread_mutex_lock(&p->mu);
		p->nthreads--;
		bool none = p->nthreads == 0;
		pthread_mutex_unlock(&p->mu);
		if (none)
			return -EAGAIN;  /* the caller runs it synchronously */
	}

	op->pool_state = X__QUEUED;
	op->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->qtail)
		p->qtail->next = op;
	else
		p->qhead = op;
	p->qtail = op;
	if (p->idle)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

int x__pool_reap(async_engine_t *e, unsigned budget)
{
	struct x__pool *p = e->pool;
	struct x__op *list, *rest = NULL;
	int n = 0;

	if (!p || atomic_load_explicit(&p->ndone, memory_order_relaxed) == 0)
		return 0;
	pthread_mutex_lock(&p->mu);
	list = p->dhead;
	if (budget) {
		struct x__op *last = NULL, *it = list;
		for (unsigned i = 0; it && i < budget; i++) {
			last = it;
			it = it->next;
		}
		rest = it;
		if (last)
			last->next = NULL;
	}
	p->dhead = rest;
	if (!rest)
		p->dtail = NULL;
	pthread_mutex_unlock(&p->mu);

	while (list) {
		struct x__op *op = list;
		list = op->next;
		op->next = NULL;
		atomic_fetch_sub_explicit(&p->ndone, 1, memory_order_relaxed);
		x__complete(e, op, op->res);
		n++;
	}
	return n;
}

int x__pool_cancel(async_engine_t *e, struct x__op *op)
{
	struct x__pool *p = e->pool;
	struct x__op **pp;
	int rc = -EBUSY;

	pthread_mutex_lock(&p->mu);
	if (op->pool_state == X__QUEUED) {
		struct x__op *prev = NULL;
		for (pp = &p->qhead; *pp; prev = *pp, pp = &(*pp)->next) {
			if (*pp != op)
				continue;
			*pp = op->next;
			if (p->qtail == op)
				p->qtail = prev;
			op->next = NULL;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&p->mu);
	if (rc == 0)
		x__complete(e, op, -ECANCELED);
	return rc;
}

bool x__pool_busy(async_engine_t *e)
{
	return e->pool &&
	       atomic_load_explicit(&e->pool->ndone, memory_order_relaxed) > 0;
}

void x__pool_destroy(async_engine_t *e)
{
	struct x__pool *p = e->pool;
	struct x__op *q;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	q = p->qhead;
	p->qhead = p->qtail = NULL;
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	while (q) {
		struct x__op *op = q;
		q = op->next;
		op->next = NULL;
		x__complete(e, op, -ECANCELED);
	}
	/* Running calls finish on their own: a thread cannot be taken out
	 * of a system call safely. */
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	x__pool_reap(e, 0);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p);
	e->pool = NULL;
}
