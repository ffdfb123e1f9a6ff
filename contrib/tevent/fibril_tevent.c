/*
 * libfibril-tevent: the host (engine fd, timer, kick) and the requests on
 * paths and fds. Scans are in fibril_tevent_scan.c.
 *
 * Every request owns a hidden operation object (struct ftev__op) that is
 * not a talloc child of the request: it holds whatever the kernel or a
 * pool thread may still write (statx, read buffer, link buffer, the fd
 * being opened). When the request goes away first, the operation is
 * cancelled and orphaned; its completion then closes a late fd and
 * frees it.
 *
 * An fd opened for nobody is closed through the engine
 * (async_close_nowait), not on the loop: on FUSE, NFS or CIFS close(2)
 * waits for the server's flush, and the loop would wait with it. The
 * O_PATH fds of stats and readlinks are closed here: such a close sends
 * the file system nothing.
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fibril/fibril.h"
#include "contrib/tevent/fibril_tevent_int.h"

/* ---- the host ---- */

/* Bounds the completions one wake-up reaps; what is left makes the
 * engine's timeout 0 and we come straight back. */
#define FTEV__BUDGET 1024

static void ftev__run(struct ftev *ft);

static void ftev__on_imm(struct tevent_context *ev, struct tevent_immediate *im,
                      void *arg)
{
	(void)ev;
	(void)im;
	ftev__run(arg);
}

static void ftev__on_fd(struct tevent_context *ev, struct tevent_fd *fde,
                     uint16_t flags, void *arg)
{
	(void)ev;
	(void)fde;
	(void)flags;
	ftev__run(arg);
}

static void ftev__on_timer(struct tevent_context *ev, struct tevent_timer *te,
                        struct timeval now, void *arg)
{
	struct ftev *ft = arg;

	(void)ev;
	(void)now;
	if (ft->tm == te)
		ft->tm = NULL;  /* tevent frees a timer once it has fired */
	ftev__run(ft);
}

/* Drops the events that would reach the engine, which is gone. */
static void ftev__let_go(struct ftev *ft)
{
	TALLOC_FREE(ft->fde);   /* closes our duplicate of its fd */
	TALLOC_FREE(ft->tm);
	ft->e = NULL;
}

/* The engine, or NULL once it has been destroyed. The public API's only
 * sign of that is the thread's current engine: an engine is current
 * from its creation, ftev_attach() insists on it, and
 * async_engine_destroy() clears it. */
static async_engine_t *ftev__engine(struct ftev *ft)
{
	if (ft->e && async_engine_current() != ft->e)
		ftev__let_go(ft);
	return ft->e;
}

static void ftev__rearm(struct ftev *ft)
{
	if (!ftev__engine(ft))
		return;
	int a = async_engine_timeout_ms(ft->e);
	int b = fibril_sched_timeout_ms();
	int t = a < 0 ? b : b < 0 ? a : a < b ? a : b;

	TALLOC_FREE(ft->tm);
	if (t == 0) {
		tevent_schedule_immediate(ft->im, ft->ev, ftev__on_imm, ft);
	} else if (t > 0) {
		ft->tm = tevent_add_timer(ft->ev, ft,
		                          tevent_timeval_current_ofs(t / 1000, (t % 1000) * 1000),
		                          ftev__on_timer, ft);
	}
}

void ftev__complete(struct ftev *ft, struct tevent_req *req, int err)
{
	if (ft->nready == ft->capready) {
		size_t cap = ft->capready ? ft->capready * 2 : 64;
		struct ftev__ready *r = talloc_realloc(ft, ft->ready,
		                                       struct ftev__ready, cap);
		if (!r) {
			/* Still never from inside the engine: an immediate. */
			tevent_req_defer_callback(req, ft->ev);
			if (err)
				tevent_req_error(req, err);
			else
				tevent_req_done(req);
			return;
		}
		ft->ready = r;
		ft->capready = cap;
	}
	ft->ready[ft->nready].req = req;
	ft->ready[ft->nready].err = err;
	ft->nready++;
	if (!ft->in_run)
		tevent_schedule_immediate(ft->im, ft->ev, ftev__on_imm, ft);
}

void ftev__forget(struct ftev *ft, struct tevent_req *req)
{
	for (size_t i = 0; i < ft->nready; i++)
		if (ft->ready[i].req == req)
			ft->ready[i].req = NULL;
}

/* Finishes the queued requests, in completion order; their callbacks
 * may queue more (which this loop then finishes too) or free others,
 * or free the ftev itself (*freed: then nothing of it may be touched). */
static void ftev__notify(struct ftev *ft, const bool *freed)
{
	for (size_t i = 0; i < ft->nready; i++) {
		struct tevent_req *req = ft->ready[i].req;
		int err = ft->ready[i].err;
		if (!req)
			continue;
		ft->ready[i].req = NULL;
		if (err)
			tevent_req_error(req, err);
		else
			tevent_req_done(req);
		if (*freed)
			return;
	}
	ft->nready = 0;
}

static void ftev__run(struct ftev *ft)
{
	/* A callback run from here may free the ftev, and one of them may
	 * run a nested loop that comes back here: the destructor sets the
	 * innermost flag, and each run hands it on to the one below. */
	bool freed = false;
	bool *outer = ft->freed;

	ft->freed = &freed;
	if (ftev__engine(ft)) {
		ft->in_run = true;
		async_engine_process(ft->e, FTEV__BUDGET);
		fibril_sched_run();
		if (!freed)
			ft->in_run = false;
	}
	if (!freed)
		ftev__notify(ft, &freed);
	if (freed) {
		if (outer)
			*outer = true;
		return;
	}
	ft->freed = outer;
	ftev__rearm(ft);
}

/* The engine's kick: schedule a run, never make it from here. */
static void ftev__kick(void *arg)
{
	struct ftev *ft = arg;

	tevent_schedule_immediate(ft->im, ft->ev, ftev__on_imm, ft);
}

static int ftev__host_destructor(struct ftev *ft)
{
	if (ft->freed)
		*ft->freed = true;
	if (ftev__engine(ft))
		async_engine_set_kick(ft->e, NULL, NULL);
	return 0;
}

/* The fd event watches a duplicate of the engine's fd: the engine may
 * be destroyed first, closing its own, and tevent must not be left
 * watching a number that something else may reuse. */
static int ftev__watch(struct ftev *ft)
{
	int fd = fcntl(async_engine_fd(ft->e), F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ft->fde = tevent_add_fd(ft->ev, ft, fd, TEVENT_FD_READ, ftev__on_fd, ft);
	if (!ft->fde) {
		close(fd);
		return -ENOMEM;
	}
	tevent_fd_set_auto_close(ft->fde);
	return 0;
}

int ftev_attach(struct tevent_context *ev, async_engine_t *e, struct ftev **out)
{
	if (!ev || !e || !out)
		return -EINVAL;
	if (e != async_engine_current())
		return -EINVAL;
	struct ftev *ft = talloc_zero(ev, struct ftev);
	if (!ft)
		return -ENOMEM;
	ft->ev = ev;
	ft->e = e;
	ft->im = tevent_create_immediate(ft);
	int rc = ft->im ? ftev__watch(ft) : -ENOMEM;
	if (rc < 0) {
		talloc_free(ft);
		return rc;
	}
	async_engine_set_kick(e, ftev__kick, ft);
	talloc_set_destructor(ft, ftev__host_destructor);
	tevent_schedule_immediate(ft->im, ev, ftev__on_imm, ft);
	*out = ft;
	return 0;
}

struct tevent_context *ftev_context(const struct ftev *ft)
{
	return ft->ev;
}

async_engine_t *ftev_engine(const struct ftev *ft)
{
	return ft->e && async_engine_current() == ft->e ? ft->e : NULL;
}

/* ---- operations ---- */

enum ftev__kind { X__OPEN, X__STAT, X__READLINK, X__FSTAT, X__PREAD };

struct ftev__op {
	struct tevent_req *req;   /* NULL once the request is gone */
	struct ftev *ft;
	enum ftev__kind kind;
	bool in_send;             /* completing inside _send: post, not defer */
	lk_op_t *lkop;            /* pending open */
	long cookie;              /* pending async call */
	long result;              /* the async call's result slot (live) */
	struct lk_file f;         /* f.fd < 0: none */
	struct lk_lookup lk;      /* lk_lookup_start's (live) result */
	struct statx stx;         /* live for ASYNC_STATX */
	uint8_t *buf;             /* live for reads; a talloc child */
};

struct ftev__state {
	struct ftev *ft;
	struct ftev__op *op;         /* pending operation, else NULL */
	long res;
	struct lk_file f;         /* f.fd < 0 when none or taken */
	struct statx stx;
	uint8_t *buf;
};

static void ftev__finish(struct ftev__op *op, long res)
{
	struct tevent_req *req = op->req;

	if (!req) {
		if (op->f.fd >= 0)
			async_close_nowait(op->f.fd);
		talloc_free(op);
		return;
	}
	struct ftev__state *st = tevent_req_data(req, struct ftev__state);
	st->op = NULL;
	st->res = res;
	if (res >= 0) {
		st->f = op->f;
		st->stx = op->kind == X__FSTAT ? op->stx : op->f.stx;
		if (op->buf)
			st->buf = talloc_steal(st, op->buf);
	} else if (op->f.fd >= 0) {
		async_close_nowait(op->f.fd);
	}
	bool in_send = op->in_send;
	struct ftev *ft = op->ft;
	talloc_free(op);
	if (!in_send) {
		ftev__complete(ft, req, res < 0 ? (int)-res : 0);
		return;
	}
	if (res < 0)
		tevent_req_error(req, (int)-res);
	else
		tevent_req_done(req);
}

static void ftev__call_cb(void *arg, long res)
{
	struct ftev__op *op = arg;

	op->cookie = 0;
	if (op->kind == X__READLINK) {
		close(op->f.fd);
		op->f.fd = -1;
		if (res >= 0)
			op->buf[res] = 0;
	}
	ftev__finish(op, res);
}

static void ftev__submit(struct ftev__op *op, long call, const unsigned long *args)
{
	long rc = async_submit_cb(0, &op->result, call, args, ftev__call_cb, op);
	if (rc > 0)
		op->cookie = rc;
	else
		ftev__call_cb(op, rc < 0 ? rc : op->result);
}

/* The path is open (res 0, op->f filled) or failed. */
static void ftev__opened(struct ftev__op *op, int res)
{
	if (res < 0) {
		ftev__finish(op, res);
		return;
	}
	switch (op->kind) {
	case X__STAT:
		close(op->f.fd);
		op->f.fd = -1;
		ftev__finish(op, 0);
		return;
	case X__READLINK:
		if (!S_ISLNK(op->f.stx.stx_mode) || !op->req) {
			close(op->f.fd);
			op->f.fd = -1;
			ftev__finish(op, op->req ? -EINVAL : -ECANCELED);
			return;
		}
		op->buf = talloc_size(op, PATH_MAX + 1);
		if (!op->buf) {
			ftev__call_cb(op, -ENOMEM);
			return;
		}
		unsigned long a[4] = { (unsigned long)op->f.fd, (unsigned long)"",
		                       (unsigned long)op->buf, PATH_MAX };
		ftev__submit(op, ASYNC_READLINKAT, a);
		return;
	default:
		ftev__finish(op, 0);
	}
}

static void ftev__open_cb(void *arg, int res, const struct lk_file *f)
{
	struct ftev__op *op = arg;

	op->lkop = NULL;
	if (res == 0)
		op->f = *f;
	ftev__opened(op, res);
}

/* Takes the file of the finished lookup @l into @op: 0, or -ELOOP for
 * a stat or readlink whose walk stopped at a symlink
 * (LK_LOOKUP_STOP_SYMLINK), as lk_stat() answers: the file open then is
 * the link's, not the path's. A lookup hands the stop to its caller. */
static int ftev__took(struct ftev__op *op, struct lk_lookup *l)
{
	bool stop = l->stopped && op->kind != X__OPEN;

	op->f = l->file;
	l->file.fd = -1;
	lk_lookup_release(l);
	if (!stop)
		return 0;
	close(op->f.fd);        /* (O_PATH: reaches no file system) */
	op->f.fd = -1;
	return -ELOOP;
}

static void ftev__lookup_cb(void *arg, int res, struct lk_lookup *l)
{
	struct ftev__op *op = arg;

	op->lkop = NULL;
	if (res == 0)
		res = ftev__took(op, l);
	ftev__opened(op, res);
}

static void ftev__cancel(struct ftev__op *op)
{
	if (op->lkop)
		lk_op_cancel(op->lkop);
	else if (op->cookie)
		async_cancel(op->cookie);
}

static bool ftev__cancel_fn(struct tevent_req *req)
{
	struct ftev__state *st = tevent_req_data(req, struct ftev__state);

	if (!st->op)
		return false;
	ftev__cancel(st->op);
	return true;
}

static void ftev__cleanup_fn(struct tevent_req *req, enum tevent_req_state state)
{
	struct ftev__state *st = tevent_req_data(req, struct ftev__state);

	if (state != TEVENT_REQ_RECEIVED)
		return;
	ftev__forget(st->ft, req);
	if (st->op) {
		struct ftev__op *op = st->op;
		st->op = NULL;
		op->req = NULL;   /* its completion frees it */
		ftev__cancel(op);
	}
	if (st->f.fd >= 0) {
		async_close_nowait(st->f.fd);
		st->f.fd = -1;
	}
}

static struct tevent_req *ftev__new(TALLOC_CTX *mem, struct ftev *ft,
                                 enum ftev__kind kind, struct ftev__op **opp)
{
	struct ftev__state *st;
	struct tevent_req *req = tevent_req_create(mem, &st, struct ftev__state);
	if (!req)
		return NULL;
	st->f.fd = -1;
	st->ft = ft;
	struct ftev__op *op = talloc_zero(NULL, struct ftev__op);
	if (!op) {
		talloc_free(req);
		return NULL;
	}
	op->req = req;
	op->ft = ft;
	op->kind = kind;
	op->f.fd = -1;
	op->in_send = true;
	st->op = op;
	tevent_req_set_cleanup_fn(req, ftev__cleanup_fn);
	tevent_req_set_cancel_fn(req, ftev__cancel_fn);
	*opp = op;
	return req;
}

/* Ends a _send: posts a request that finished inside it. */
static struct tevent_req *ftev__sent(struct tevent_req *req, struct ftev *ft)
{
	struct ftev__state *st = tevent_req_data(req, struct ftev__state);

	if (st->op)
		st->op->in_send = false;
	if (!tevent_req_is_in_progress(req))
		return tevent_req_post(req, ft->ev);
	return req;
}

static struct tevent_req *ftev__open_any(TALLOC_CTX *mem, struct ftev *ft,
                                      enum ftev__kind kind, lk_root_t *r,
                                      const char *path, int oflags,
                                      lk_group_t *g,
                                      const struct lk_lookup_opts *o)
{
	struct ftev__op *op;
	struct tevent_req *req = ftev__new(mem, ft, kind, &op);
	if (!req)
		return NULL;
	int rc;
	if (o) {
		struct lk_lookup_opts lo = *o;
		lo.oflags = oflags;
		rc = lk_lookup_start(r, path, &lo, &op->lk, ftev__lookup_cb, op,
		                     &op->lkop);
		if (rc == 0)
			rc = ftev__took(op, &op->lk);
	} else {
		rc = lk_open_start(r, path, oflags, g, &op->f, ftev__open_cb, op,
		                   &op->lkop);
	}
	if (rc == 1)
		return ftev__sent(req, ft);
	op->lkop = NULL;
	ftev__opened(op, rc);
	return ftev__sent(req, ft);
}

struct tevent_req *ftev_open_send(TALLOC_CTX *mem, struct ftev *ft,
                                  lk_root_t *r, const char *path, int oflags,
                                  lk_group_t *g)
{
	return ftev__open_any(mem, ft, X__OPEN, r, path, oflags, g, NULL);
}

struct tevent_req *ftev_lookup_send(TALLOC_CTX *mem, struct ftev *ft,
                                    lk_root_t *r, const char *path,
                                    const struct lk_lookup_opts *o)
{
	static const struct lk_lookup_opts none = { .oflags = O_RDONLY };
	const struct lk_lookup_opts *lo = o ? o : &none;
	return ftev__open_any(mem, ft, X__OPEN, r, path, lo->oflags, NULL, lo);
}

static long ftev__recv(struct tevent_req *req)
{
	enum tevent_req_state state;
	uint64_t err;

	if (tevent_req_is_error(req, &state, &err)) {
		if (state == TEVENT_REQ_USER_ERROR)
			return -(long)err;
		return state == TEVENT_REQ_NO_MEMORY ? -ENOMEM : -ETIMEDOUT;
	}
	struct ftev__state *st = tevent_req_data(req, struct ftev__state);
	return st->res;
}

int ftev_open_recv(struct tevent_req *req, struct lk_file *out)
{
	struct ftev__state *st = tevent_req_data(req, struct ftev__state);
	long rc = ftev__recv(req);

	if (rc >= 0) {
		*out = st->f;
		st->f.fd = -1;
	}
	tevent_req_received(req);
	return rc < 0 ? (int)rc : 0;
}

struct tevent_req *ftev_stat_send(TALLOC_CTX *mem, struct ftev *ft,
                                  lk_root_t *r, const char *path,
                                  unsigned flags,
                                  const struct lk_lookup_opts *o)
{
	int of = O_PATH | ((flags & FTEV_NOFOLLOW) ? O_NOFOLLOW : 0);
	return ftev__open_any(mem, ft, X__STAT, r, path, of, NULL, o);
}

static int ftev__stx_recv(struct tevent_req *req, struct statx *out)
{
	long rc = ftev__recv(req);

	struct ftev__state *st = tevent_req_data(req, struct ftev__state);
	if (rc >= 0)
		*out = st->stx;
	tevent_req_received(req);
	return rc < 0 ? (int)rc : 0;
}

int ftev_stat_recv(struct tevent_req *req, struct statx *out)
{
	return ftev__stx_recv(req, out);
}

struct tevent_req *ftev_readlink_send(TALLOC_CTX *mem, struct ftev *ft,
                                      lk_root_t *r, const char *path,
                                      const struct lk_lookup_opts *o)
{
	return ftev__open_any(mem, ft, X__READLINK, r, path,
	                   O_PATH | O_NOFOLLOW, NULL, o);
}

int ftev_readlink_recv(struct tevent_req *req, TALLOC_CTX *mem,
                       char **target)
{
	struct ftev__state *st = tevent_req_data(req, struct ftev__state);
	long rc = ftev__recv(req);

	if (rc >= 0)
		*target = (char *)talloc_steal(mem, st->buf);
	tevent_req_received(req);
	return rc < 0 ? (int)rc : 0;
}

struct tevent_req *ftev_fstat_send(TALLOC_CTX *mem, struct ftev *ft, int fd)
{
	struct ftev__op *op;
	struct tevent_req *req = ftev__new(mem, ft, X__FSTAT, &op);
	if (!req)
		return NULL;
	unsigned long a[5] = { (unsigned long)(long)fd, (unsigned long)"",
	                       AT_EMPTY_PATH, STATX_BASIC_STATS,
	                       (unsigned long)&op->stx };
	ftev__submit(op, ASYNC_STATX, a);
	return ftev__sent(req, ft);
}

int ftev_fstat_recv(struct tevent_req *req, struct statx *out)
{
	return ftev__stx_recv(req, out);
}

struct tevent_req *ftev_pread_send(TALLOC_CTX *mem, struct ftev *ft, int fd,
                                   size_t count, uint64_t offset)
{
	struct ftev__op *op;
	struct tevent_req *req = ftev__new(mem, ft, X__PREAD, &op);
	if (!req)
		return NULL;
	if (count > SSIZE_MAX || offset > INT64_MAX) {
		ftev__finish(op, -EINVAL);
		return ftev__sent(req, ft);
	}
	op->buf = talloc_size(op, count ? count : 1);
	if (!op->buf) {
		ftev__finish(op, -ENOMEM);
		return ftev__sent(req, ft);
	}
	unsigned long a[4] = { (unsigned long)(long)fd, (unsigned long)op->buf,
	                       (unsigned long)count, (unsigned long)offset };
	ftev__submit(op, ASYNC_PREAD, a);
	return ftev__sent(req, ft);
}

ssize_t ftev_pread_recv(struct tevent_req *req, TALLOC_CTX *mem, uint8_t **buf)
{
	struct ftev__state *st = tevent_req_data(req, struct ftev__state);
	long rc = ftev__recv(req);

	if (rc >= 0)
		*buf = rc > 0 ? talloc_steal(mem, st->buf) : NULL;
	tevent_req_received(req);
	return rc;
}
