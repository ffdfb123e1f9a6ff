/*
 * Batches of statx calls: the rest of a readdir-then-stat run on a local
 * file system (the policy that says so: async_ahead.c) goes to the
 * batch pool (async_pool.c: a thread per CPU and one more)
 * ASYNC__BATCH_MAX calls at a time, run there as plain statx
 * calls in a loop, each as its own caller's user. The submitting thread
 * then pays a few stores per call and one hand-off per batch, instead of
 * an io_uring request each (which costs it about what the statx itself
 * costs), and the second CPU does the stats while the first reads the
 * directory.
 *
 * A batch is one pool op of the internal call ASYNC__CALL_BATCH; its
 * members stay accounted ops of their callers (in flight, pending for
 * their owner, cancellable while the batch fills). When the batch
 * completes, async__complete() runs its callback at once, which
 * completes each member with its own result.
 */
#include "first.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fibril/async_int.h"

/* Entries per hand-off: the first batch starts after 64 names (tens of
 * microseconds of readdir), and a batch is ~64 us of cached stats,
 * long against the hand-off's two lock rounds and wake-up. */
#define ASYNC__BATCH_MAX 64

struct async__batch {
	async_engine_t *e;
	struct async__batch *next;         /* free list */
	unsigned n;
	struct async__op *ops[ASYNC__BATCH_MAX];
	long res[ASYNC__BATCH_MAX];        /* written where the batch runs */
};

/* On a pool thread, or on the engine's thread when it has nothing else
 * to do (async__pool_run_here). Reads only what the members' submission
 * wrote: call, arguments, credentials. */
static long async__batch_run(void *arg)
{
	struct async__batch *b = arg;

	for (unsigned i = 0; i < b->n; i++)
		b->res[i] = async__exec_op(b->ops[i]);
	return 0;
}

/* @res < 0: the batch never ran (cancelled at destroy). */
static void async__batch_done(void *arg, long res)
{
	struct async__batch *b = arg;
	async_engine_t *e = b->e;

	for (unsigned i = 0; i < b->n; i++)
		async__complete(e, b->ops[i], res < 0 ? res : b->res[i]);
	b->n = 0;
	b->next = e->free_batches;
	e->free_batches = b;
}

static void async__batch_issue(async_engine_t *e)
{
	struct async__batch *b = e->batch;
	struct async__op *op = async__op_alloc(e);

	e->batch = NULL;
	if (!op) {
		/* As at the parallelism limit: the calls run here, or fail
		 * where the submitting thread must never run one. */
		async__batch_done(b, e->queue_at_limit ? -ENOMEM
		                                       : async__batch_run(b));
		return;
	}
	op->call = ASYNC__CALL_BATCH;
	op->args[0] = (unsigned long)async__batch_run;
	op->args[1] = (unsigned long)b;
	op->result = &op->res;
	op->cb = async__batch_done;
	op->cb_arg = b;
	op->holds = ASYNC__HOLD_CB;
	(void)async__pool_submit_batch(e, op);
	/* Now, not at the next flush: the pool starts on it while the
	 * caller reads more names. */
	async__pool_flush(e);
}

int async__batch_add(async_engine_t *e, struct async__op *op)
{
	struct async__batch *b = e->batch;

	if (!b) {
		b = e->free_batches;
		if (b)
			e->free_batches = b->next;
		else if (!(b = malloc(sizeof(*b))))
			return -ENOMEM;
		b->e = e;
		b->n = 0;
		e->batch = b;
		/* A partial batch waits for the host's next flush. */
		async__kick(e);
	}
	op->where = ASYNC__IN_BATCH;
	b->ops[b->n++] = op;
	if (b->n == ASYNC__BATCH_MAX)
		async__batch_issue(e);
	return 0;
}

void async__batch_flush(async_engine_t *e)
{
	if (e->batch)
		async__batch_issue(e);
}

int async__batch_cancel(async_engine_t *e, struct async__op *op)
{
	struct async__batch *b = e->batch;

	for (unsigned i = 0; b && i < b->n; i++) {
		if (b->ops[i] != op)
			continue;
		memmove(&b->ops[i], &b->ops[i + 1],
		        (b->n - i - 1) * sizeof(b->ops[0]));
		b->n--;
		async__complete(e, op, -ECANCELED);
		return 0;
	}
	return -EBUSY;  /* handed over: a cached stat, let it finish */
}

void async__batch_cancel_all(async_engine_t *e)
{
	if (e->batch)
		async__batch_done(e->batch, -ECANCELED);
	e->batch = NULL;
}

void async__batch_free(async_engine_t *e)
{
	while (e->free_batches) {
		struct async__batch *b = e->free_batches;
		e->free_batches = b->next;
		free(b);
	}
}
