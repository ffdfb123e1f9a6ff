/* Roots, groups, counters and resolution beneath a root (lk_open*). */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fibril/lookup_int.h"
#include "fibril/async_mnt.h"

__thread struct lk_stats lk__st;

FIBRIL_API void lk_stats(struct lk_stats *out)
{
	*out = lk__st;
}

/* ---- roots ---- */

FIBRIL_API int lk_root_from_fd(int dirfd, const struct lk_root_opts *o,
			       lk_root_t **out)
{
	struct statx stx;
	int rc = lk__fstatx(dirfd, STATX_TYPE | STATX_INO, &stx);
	if (rc < 0)
		return rc;
	if (!S_ISDIR(stx.stx_mode))
		return -ENOTDIR;
	lk_root_t *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = dirfd;
	r->refs = 1;
	/* Opens beneath a remote root are never tried inline. */
	r->local = async__fd_local(dirfd) > 0;
	if (o) {
		if (o->symlinks != LK_SYMLINKS_FOLLOW_BENEATH &&
		    o->symlinks != LK_SYMLINKS_NEVER &&
		    o->symlinks != LK_SYMLINKS_FOLLOW_ANY) {
			free(r);
			return -EINVAL;
		}
		r->symlinks = o->symlinks;
		r->flags = o->flags;
	}
	r->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	r->ino = stx.stx_ino;
	*out = r;
	return 0;
}

FIBRIL_API int lk_root_open(const char *path, const struct lk_root_opts *o,
			    lk_root_t **out)
{
	if (!path || !out)
		return -EINVAL;
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = lk_root_from_fd(fd, o, out);
	if (rc < 0)
		close(fd);
	return rc;
}

FIBRIL_API int lk_root_fd(const lk_root_t *r)
{
	return r->fd;
}

void lk__root_ref(lk_root_t *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

FIBRIL_API lk_root_t *lk_root_ref(lk_root_t *r)
{
	lk__root_ref(r);
	return r;
}

FIBRIL_API void lk_root_close(lk_root_t *r)
{
	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	close(r->fd);
	lk__cc_free(r->cc);
	free(r);
}

uint64_t lk__resolve_flags(const lk_root_t *r)
{
	uint64_t f = RESOLVE_NO_MAGICLINKS;
	if (r->symlinks != LK_SYMLINKS_FOLLOW_ANY)
		f |= RESOLVE_BENEATH;
	if (r->symlinks == LK_SYMLINKS_NEVER)
		f |= RESOLVE_NO_SYMLINKS;
	return f;
}

/* ---- groups ---- */

FIBRIL_API int lk_group_new(lk_group_t **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

int lk__group_join(lk_group_t *g, struct lk__member *m,
		   void (*cancel)(struct lk__member *))
{
	m->cancel = cancel;
	m->g = NULL;
	if (!g)
		return 0;
	if (g->cancelled)
		return -ECANCELED;
	m->g = g;
	m->prev = NULL;
	m->next = g->head;
	if (g->head)
		g->head->prev = m;
	g->head = m;
	return 0;
}

void lk__group_leave(struct lk__member *m)
{
	if (!m->g)
		return;
	if (m->prev)
		m->prev->next = m->next;
	else
		m->g->head = m->next;
	if (m->next)
		m->next->prev = m->prev;
	m->g = NULL;
}

FIBRIL_API void lk_group_cancel(lk_group_t *g)
{
	g->cancelled = true;
	/* A member's cancel may run user callbacks that close other members:
	 * rescan from the head after each call instead of holding a next. */
	for (;;) {
		struct lk__member *m = g->head;
		while (m && m->cancel_seen)
			m = m->next;
		if (!m)
			break;
		m->cancel_seen = true;
		m->cancel(m);
	}
}

FIBRIL_API void lk_group_free(lk_group_t *g)
{
	if (!g)
		return;
	lk_group_cancel(g);
	while (g->head)
		lk__group_leave(g->head);
	free(g);
}

/* ---- async helpers ---- */

long lk__submit(const lk_cred_t *cred, unsigned long flags, long *res,
		long call, const unsigned long *args,
		void (*cb)(void *, long), void *arg)
{
	struct async__cred *old = async__cred_use(lk__x(cred));
	long r = async_submit_cb(flags, res, call, args, cb, arg);
	async__cred_use(old);
	if (r != -ENXIO)
		return r;
	*res = async__exec_as(lk__x(cred), call, args);
	return 0;
}

void lk__wait(struct fibril_waitq *wq)
{
	if (fibril_self()) {
		fibril_waitq_wait(wq, 0);
		return;
	}
	async_engine_t *e = async_engine_current();
	if (!e)
		return;
	/* Reap first: with DEFER_TASKRUN the fd may stay quiet although
	 * completions are waiting for this thread to enter the kernel. */
	if (async_engine_process(e, 0) > 0)
		return;
	struct pollfd p = { .fd = async_engine_fd(e), .events = POLLIN };
	poll(&p, 1, async_engine_timeout_ms(e));
	async_engine_process(e, 0);
}

int lk__fstatx(int fd, unsigned mask, struct statx *stx)
{
	/* Cached attributes: right after an open they are fresh, and a FUSE
	 * or NFS getattr round trip here would block the thread. */
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, mask, stx) < 0)
		return -errno;
	return 0;
}

/* ---- arena ---- */

char *lk__arena_put(struct lk__arena *a, const char *s, size_t len,
		    uint64_t idx)
{
	struct lk__ablk *b = a->tail;
	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > 65536 - sizeof(*b) ? len + 1
			: 65536 - sizeof(*b);
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = NULL;
		b->used = 0;
		b->cap = cap;
		if (a->tail)
			a->tail->next = b;
		else
			a->head = b;
		a->tail = b;
	}
	char *p = b->data + b->used;
	memcpy(p, s, len);
	p[len] = 0;
	b->used += len + 1;
	b->last = idx;
	return p;
}

void lk__arena_release(struct lk__arena *a, uint64_t below)
{
	/* Keep the tail: it is still being filled. */
	while (a->head && a->head != a->tail && a->head->last < below) {
		struct lk__ablk *b = a->head;
		a->head = b->next;
		free(b);
	}
}

void lk__arena_free(struct lk__arena *a)
{
	while (a->head) {
		struct lk__ablk *b = a->head;
		a->head = b->next;
		free(b);
	}
	a->tail = NULL;
}

/* ---- lk_open ---- */

void lk__op_free(struct lk_op *op)
{
	async__cred_drop(op->cred);
	lk__group_leave(&op->m);
	lk_root_close(op->root);
	lk__st.live_ops--;
	free(op);
}

static void op_cb(void *arg, long res)
{
	struct lk_op *op = arg;
	op->res = res;
	op->cookie = 0;
	int rc = (int)res;
	if (res >= 0) {
		op->file.fd = (int)res;
		rc = lk__fstatx(op->file.fd, STATX_BASIC_STATS, &op->file.stx);
		if (rc < 0 || op->cancelled) {
			async__close_fd(op->file.fd);
			op->file.fd = -1;
		}
	}
	if (op->cancelled)
		rc = -ECANCELED;
	op->res = rc;
	op->done = true;
	if (op->abandoned) {
		lk__op_free(op);
		return;
	}
	if (op->cb) {
		lk_open_cb cb = op->cb;
		void *cbarg = op->arg;
		struct lk_file f = op->file;
		lk__op_free(op);
		cb(cbarg, rc, rc == 0 ? &f : NULL);
		return;
	}
	fibril_waitq_wake_all(&op->wq);
}

static void op_cancel_member(struct lk__member *m)
{
	lk_op_cancel((struct lk_op *)m);
}

FIBRIL_API void lk_op_cancel(lk_op_t *op)
{
	if (!op || op->done || op->cancelled)
		return;
	op->cancelled = true;
	if (op->cookie > 0)
		async_cancel(op->cookie);
	fibril_waitq_wake_all(&op->wq);
}

/* Inline attempt: 1 = not cached (go async), 0 = done (*out), < 0 error.
 * A cached walk still ends in the file system's ->open, a round trip on
 * FUSE or NFS: only beneath a local root, and RESOLVE_NO_XDEV stops a
 * path that crosses into another mount (-EXDEV), which goes async. */
static int open_inline(lk_root_t *r, const char *path, struct open_how *how,
		       struct lk_file *out)
{
	if (!r->local)
		return 1;
	struct open_how h = *how;
	h.resolve |= RESOLVE_CACHED | RESOLVE_NO_XDEV;
	h.flags = async__open_nowait_flags(h.flags);
	long fd = syscall(SYS_openat2, r->fd, path, &h, sizeof(h));
	if (fd < 0)
		return errno == EAGAIN || errno == EXDEV ||
		       async__open_nowait_refused(-errno, how->flags) ? 1 : -errno;
	async__fd_forget(fd);
	int rc = lk__fstatx((int)fd, STATX_BASIC_STATS, &out->stx);
	if (rc < 0) {
		close((int)fd);
		return rc;
	}
	if (async__open_nowait_keep((int)fd, how->flags, out->stx.stx_mode))
		return 1;
	out->fd = (int)fd;
	lk__st.opens_inline++;
	return 0;
}

int lk__open_start(lk_root_t *r, const char *relpath, int oflags,
		   lk_group_t *g, const lk_cred_t *cred, struct lk_file *out,
		   lk_open_cb cb, void *arg, lk_op_t **opp)
{
	if (!relpath || !*relpath)
		relpath = ".";
	if (g && g->cancelled)
		return -ECANCELED;
	struct open_how how = {
		.flags = (uint64_t)(unsigned)oflags | O_CLOEXEC,
		.mode = ((oflags & O_CREAT) ||
			 (oflags & O_TMPFILE) == O_TMPFILE) ? 0644 : 0,
		.resolve = lk__resolve_flags(r),
	};
	/* As another user the ring tries the cached walk first itself (with
	 * that user's personality), which costs less than switching this
	 * thread's ids around an attempt. */
	int rc = cred ? 1 : open_inline(r, relpath, &how, out);
	if (rc <= 0)
		return rc;
	size_t len = strlen(relpath);
	struct lk_op *op = calloc(1, sizeof(*op) + len + 1);
	if (!op)
		return -ENOMEM;
	memcpy(op->path, relpath, len + 1);
	op->how = how;
	op->cb = cb;
	op->arg = arg;
	op->file.fd = -1;
	op->root = r;
	op->cred = async__cred_hold(lk__x(cred));
	lk__root_ref(r);
	lk__st.live_ops++;
	lk__st.opens_async++;
	lk__group_join(g, &op->m, op_cancel_member);
	unsigned long args[4] = { (unsigned long)r->fd, (unsigned long)op->path,
				  (unsigned long)&op->how, sizeof(op->how) };
	unsigned long fl = 0;
#ifdef ASYNC_F_NOINLINE
	fl = ASYNC_F_NOINLINE;   /* our RESOLVE_CACHED attempt just failed */
#endif
	long c = lk__submit(cred, fl, &op->res, ASYNC_OPENAT2, args, op_cb, op);
	if (c <= 0) {
		/* Done now (or not submitted): report inline, no callback. */
		long res = c < 0 ? c : op->res;
		rc = (int)res;
		if (res >= 0) {
			out->fd = (int)res;
			rc = lk__fstatx(out->fd, STATX_BASIC_STATS, &out->stx);
			if (rc < 0)
				async__close_fd(out->fd);
		}
		lk__op_free(op);
		return rc;
	}
	op->cookie = c;
	if (opp)
		*opp = op;
	return 1;
}

FIBRIL_API int lk_open_start(lk_root_t *r, const char *relpath, int oflags,
			     lk_group_t *g, struct lk_file *out,
			     lk_open_cb cb, void *arg, lk_op_t **opp)
{
	if (!cb)
		return -EINVAL;
	return lk__open_start(r, relpath, oflags, g, NULL, out, cb, arg, opp);
}

bool lk__op_wait(lk_op_t *op)
{
	while (!op->done && !op->cancelled)
		lk__wait(&op->wq);
	if (!op->done) {
		/* Cancelled while the kernel or a pool thread still owns the
		 * op's buffers: it frees itself when they report back. */
		op->abandoned = true;
		return false;
	}
	return true;
}

int lk__open_wait(lk_root_t *r, const char *relpath, int oflags,
		  lk_group_t *g, const lk_cred_t *cred, struct lk_file *out)
{
	lk_op_t *op = NULL;
	int rc = lk__open_start(r, relpath, oflags, g, cred, out, NULL, NULL,
				&op);
	if (rc != 1)
		return rc;
	if (!lk__op_wait(op))
		return -ECANCELED;
	rc = (int)op->res;
	if (rc == 0)
		*out = op->file;
	lk__op_free(op);
	return rc;
}

FIBRIL_API int lk_open(lk_root_t *r, const char *relpath, int oflags,
		       lk_group_t *g, struct lk_file *out)
{
	if (!r || !out)
		return -EINVAL;
	return lk__open_wait(r, relpath, oflags, g, NULL, out);
}
