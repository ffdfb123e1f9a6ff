/*
 * The engine's ops and their completion: the layer both backends and
 * the dispatcher (async.c) stand on. A backend reports a finished call
 * here (async__complete) and never calls the dispatcher back.
 *
 * An op lives in a slot of the engine's chunked table; its cookie is
 * ASYNC_COOKIE_BASE + (generation << 32) + slot index, so a lookup is
 * an index and a compare, and a stale cookie never matches a reused
 * slot. A completed op stays (like a zombie process) until a
 * wait_for_async() reaps it, so waiting on a cookie that completed
 * meanwhile still returns its result.
 */
#include "first.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fibril/async_int.h"
#include "fibril/async_cred.h"
#include "fibril/async_mnt.h"

/* initial-exec: read on every call, and a dynamic TLS lookup costs a
 * function call each time (sched.c does the same). */
__thread async_engine_t *async__cur __attribute__((tls_model("initial-exec")));

void async__log(async_engine_t *e, int level, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (e->log)
		e->log(level, msg, e->log_arg);
	else
		fprintf(stderr, "libfibril: %s\n", msg);
}

void async__kick(async_engine_t *e)
{
	if (e->kick && !e->kicked) {
		e->kicked = true;
		e->kick(e->kick_arg);
	}
}

/* ---- op table ---- */

struct async__op *async__op_alloc(async_engine_t *e)
{
	struct async__op *op = e->free_ops;

	if (!op) {
		struct async__op **nc = realloc(e->chunks,
		                            (e->nchunks + 1) * sizeof(*nc));
		if (!nc)
			return NULL;
		e->chunks = nc;
		struct async__op *c = calloc(ASYNC__CHUNK, sizeof(*c));
		if (!c)
			return NULL;
		nc[e->nchunks] = c;
		for (unsigned i = ASYNC__CHUNK; i-- > 0;) {
			c[i].idx = e->nchunks * ASYNC__CHUNK + i;
			c[i].next = e->free_ops;
			e->free_ops = &c[i];
		}
		e->nchunks++;
		op = e->free_ops;
	}
	e->free_ops = op->next;
	op->gen = (op->gen + 1) & 0x3fffffff;
	op->cookie = ASYNC_COOKIE_BASE + ((long)op->gen << 32) + op->idx;
	op->next = NULL;
	op->waiter = NULL;
	op->cb = NULL;
	op->owner = NULL;
	op->cancel_requested = 0;
	op->state = ASYNC__PENDING;
	op->where = 0;
	return op;
}

void async__op_free(async_engine_t *e, struct async__op *op)
{
	async__cred_drop(op->cred);
	op->cred = NULL;
	op->cookie = 0;
	op->state = 0;
	op->next = e->free_ops;
	e->free_ops = op;
}

/* A submitted op the backend refused: freed as if it had completed. */
void async__op_discard(async_engine_t *e, struct async__op *op)
{
	op->holds = 0;
	op->state = ASYNC__DONE;
	async__op_free(e, op);
}

struct async__op *async__op_find(async_engine_t *e, long cookie)
{
	if (cookie < ASYNC_COOKIE_BASE)
		return NULL;
	unsigned long idx = (unsigned long)(cookie - ASYNC_COOKIE_BASE) &
	                    0xffffffffUL;
	if (idx >= (unsigned long)e->nchunks * ASYNC__CHUNK)
		return NULL;
	struct async__op *op = &e->chunks[idx / ASYNC__CHUNK][idx % ASYNC__CHUNK];
	return op->cookie == cookie ? op : NULL;
}

void async__release(async_engine_t *e, struct async__op *op, unsigned hold)
{
	op->holds &= ~hold;
	if (op->holds == 0 && op->state == ASYNC__DONE)
		async__op_free(e, op);
}

/* ---- completion ---- */

void async__complete(async_engine_t *e, struct async__op *op, long res)
{
	struct async__owner *o = op->owner;

	op->res = res;
	*op->result = res;
	op->state = ASYNC__DONE;
	/* A number handed out again: what was known of it is stale. */
	if (op->call == ASYNC_OPENAT2)
		async__fd_forget(res);
	op->where = 0;
	if (op->call == ASYNC__CALL_BATCH) {
		/* Its members' completions, at once: the engine's own code,
		 * safe inside async_submit(), and what reaping promises. */
		op->cb(op->cb_arg, res);
		async__release(e, op, ASYNC__HOLD_CB);
		return;
	}
	/* The read-ahead is the engine's own: not in the count callers
	 * and the parallelism limit see. */
	if (op->call != ASYNC__CALL_DIR_AHEAD)
		e->inflight--;
	if (o) {
		o->pending--;
		if (o->waiting_all && o->pending == 0 && o->f)
			fibril_wake(o->f);
	}
	if (op->waiter && op->waiter != ASYNC__THREAD_WAITER)
		fibril_wake(op->waiter);
	if (op->holds & ASYNC__HOLD_CB) {
		/* Never from here: we may be inside async_submit(). */
		op->next = NULL;
		if (e->cb_tail)
			e->cb_tail->next = op;
		else
			e->cb_head = op;
		e->cb_tail = op;
	}
	/* Fibrils woken or callbacks queued: the host must come round. */
	async__kick(e);
}

int async__run_callbacks(async_engine_t *e, unsigned budget)
{
	int n = 0;

	while (e->cb_head && (!budget || (unsigned)n < budget)) {
		struct async__op *op = e->cb_head;
		e->cb_head = op->next;
		if (!e->cb_head)
			e->cb_tail = NULL;
		op->next = NULL;
		op->cb(op->cb_arg, op->res);
		async__release(e, op, ASYNC__HOLD_CB);
		n++;
	}
	return n;
}
