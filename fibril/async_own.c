/*
 * The engine's own calls, which no caller waits for: the directory
 * read-ahead of a readdir-then-stat loop (its policy: async_ahead.c) and
 * closes of descriptors on mounts where close may block (async_mnt.h;
 * async_close_nowait() offers them to embedders).
 * Both complete through callbacks of their own; a call the backend never
 * ran (cancelled at destroy) is finished by its callback here.
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "fibril/async_int.h"
#include "fibril/async_mnt.h"

/* ---- directory read-ahead for readdir-then-stat loops ---- */

/* The pool thread closes the descriptor after reading; one the pool
 * never ran (cancelled at destroy) is closed here. */
static void async__ahead_done(void *arg, long res)
{
	if (res == -ECANCELED)
		close((int)(intptr_t)arg);
}

/* Queues async__ahead_read() of @dfd's directory on the pool (the policy
 * that asks for it: async_ahead.c). */
void async__ahead_start(async_engine_t *e, long dfd)
{
	/* Opened here, not on the pool thread: the caller may close @dfd
	 * (closedir) while the read-ahead runs. */
	int fd = openat((int)dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct async__op *op = async__op_alloc(e);
	if (!op) {
		close(fd);
		return;
	}
	op->call = ASYNC__CALL_DIR_AHEAD;
	op->args[0] = (unsigned long)fd;
	op->result = &op->res;
	op->cb = async__ahead_done;
	op->cb_arg = (void *)(intptr_t)fd;
	op->holds = ASYNC__HOLD_CB;
	if (async__pool_submit(e, op, false) < 0) {
		async__op_discard(e, op);
		close(fd);
		return;
	}
	/* Now, not at the next flush: the loop may not flush until its
	 * wait_for_async(), when the read-ahead is moot. */
	async__pool_flush(e);
}

/* ---- closing off the caller's thread (async_mnt.h) ---- */

/* A close the backend never ran (cancelled at destroy) is done here. */
static void async__close_done(void *arg, long res)
{
	if (res == -ECANCELED)
		close((int)(intptr_t)arg);
}

void async__close_fd(int fd)
{
	async_engine_t *e = async__cur;

	if (fd < 0)
		return;
	bool local = async__fd_known_local(fd);
	async__fd_forget(fd);
	if (!e || e->destroying || local || async__fd_local(fd) != 0) {
		close(fd);
		return;
	}
	struct async__op *op = async__op_alloc(e);
	if (!op) {
		close(fd);
		return;
	}
	op->call = ASYNC_CLOSE;
	op->args[0] = (unsigned long)fd;
	op->result = &op->res;
	op->cb = async__close_done;
	op->cb_arg = (void *)(intptr_t)fd;
	op->holds = ASYNC__HOLD_CB;
	e->inflight++;
	bool ring = e->ring && async__uring_supports(e, ASYNC_CLOSE, op->args);
	int rc;
	if (ring) {
		op->where = ASYNC__IN_RING;
		rc = async__uring_submit(e, op);
	} else {
		rc = async__pool_submit(e, op, false);
	}
	if (rc < 0) {
		e->inflight--;
		async__op_discard(e, op);
		close(fd);
		return;
	}
	/* Now: the ring submits lazily, and the pool hands over in batches. */
	if (ring)
		async__uring_flush(e);
	else
		async__pool_flush(e);
}

void async_close_nowait(int fd)
{
	async__close_fd(fd);
}
