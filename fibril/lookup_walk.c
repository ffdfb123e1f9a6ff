/*
 * lk_lookup(): lk_open() with credentials, case-insensitive matching
 * (LK_LOOKUP_NOCASE) and symlink reporting (LK_LOOKUP_STOP_SYMLINK).
 *
 * With either flag the path is walked by one function on a pool thread
 * (ASYNC_CALL, as the request's user): a handful of plain system calls
 * per component, one hand-off for the whole path. Every component is
 * opened from the root with openat2(RESOLVE_BENEATH) and the prefix
 * found so far, so ".." and escapes are the kernel's business exactly
 * as in lk_open(); a path is short, and the prefix is in the dcache.
 * The path as written is tried first in one openat2: the common case
 * (exact names, no symlink) costs that one call, made inline when the
 * path is in the dcache (RESOLVE_CACHED) and no other user's ids are
 * needed.
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fibril/lookup_int.h"
#include "fibril/async_mnt.h"

struct lk__walk {
	lk_root_t *root;           /* held by the op */
	unsigned flags;
	int oflags;
	lk_fold_fn fold;
	void *fold_arg;
	/* results, read by the engine's thread after completion */
	int fd;
	struct statx stx;
	char *path;
	int stopped;
	unsigned link_index;
	size_t link_offset, link_len, rest_offset;
	char *link_target;
	char relpath[];
};

/* A growing root-relative path ("" is the root). */
struct lk__sb {
	char *p;
	size_t len, cap;
};

static int sb_add(struct lk__sb *b, const char *s, size_t n)
{
	size_t need = b->len + 1 + n + 1;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		while (cap < need)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	if (b->len)
		b->p[b->len++] = '/';
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

static void sb_cut(struct lk__sb *b, size_t len)
{
	b->len = len;
	if (b->p)
		b->p[len] = 0;
}

static const char *sb_str(const struct lk__sb *b)
{
	return b->len ? b->p : ".";
}

static int w_open(const struct lk__walk *w, const char *path, int oflags)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned)oflags | O_CLOEXEC,
		.mode = ((oflags & O_CREAT) ||
			 (oflags & O_TMPFILE) == O_TMPFILE) ? 0644 : 0,
		.resolve = lk__resolve_flags(w->root),
	};
	if (w->flags & LK_LOOKUP_STOP_SYMLINK)
		how.resolve |= RESOLVE_NO_SYMLINKS;
	long fd = syscall(SYS_openat2, w->root->fd, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	async__fd_forget(fd);   /* may be another mount's: ask at its close */
	return (int)fd;
}

static bool is_link(int fd)
{
	struct statx stx;
	return statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE,
		     &stx) == 0 && S_ISLNK(stx.stx_mode);
}

static int w_finish(struct lk__walk *w, int fd, const char *path)
{
	int rc = lk__fstatx(fd, STATX_BASIC_STATS, &w->stx);
	if (rc == 0 && !(w->path = strdup(path)))
		rc = -ENOMEM;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	w->fd = fd;
	return 0;
}

/* Stopped at the symlink @fd (O_PATH of the link itself). */
static int w_report(struct lk__walk *w, int fd, const char *path,
		    const char *comp, size_t clen, unsigned idx,
		    const char *rest)
{
	char *t = malloc(PATH_MAX);
	if (!t) {
		close(fd);
		return -ENOMEM;
	}
	ssize_t n = readlinkat(fd, "", t, PATH_MAX - 1);
	if (n < 0) {
		int rc = -errno;
		free(t);
		close(fd);
		return rc;
	}
	t[n] = 0;
	int rc = statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
		       STATX_BASIC_STATS, &w->stx) < 0 ? -errno : 0;
	if (rc == 0 && !(w->path = strdup(path)))
		rc = -ENOMEM;
	if (rc < 0) {
		free(t);
		close(fd);
		return rc;
	}
	w->fd = fd;
	w->link_target = t;
	w->stopped = 1;
	w->link_index = idx;
	w->link_offset = (size_t)(comp - w->relpath);
	w->link_len = clen;
	w->rest_offset = (size_t)(rest - w->relpath);
	return 0;
}

/* Largest fold we take: 4 bytes per byte of a longest name. */
#define LK__KEY_MAX (4 * (NAME_MAX + 1))

/* Finds in @dir the name whose fold is @comp's: the byte-wise smallest
 * of them, unless @use_cache and the cache knows one. 0 and @out, or
 * -errno (-ENOENT: none; -EACCES: @dir may not be read). */
static int w_find(struct lk__walk *w, const char *dir, const char *comp,
		  size_t clen, bool use_cache, char out[NAME_MAX + 1],
		  bool *cached, struct lk__ckey *k, char *kbuf)
{
	k->klen = w->fold(comp, clen, kbuf, LK__KEY_MAX, w->fold_arg);
	if (k->klen > LK__KEY_MAX)
		return -ENOENT;
	int dfd = w_open(w, dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return dfd;
	struct statx d;
	int rc = lk__fstatx(dfd, STATX_INO, &d);
	if (rc < 0) {
		close(dfd);
		return rc;
	}
	k->dev = makedev(d.stx_dev_major, d.stx_dev_minor);
	k->ino = d.stx_ino;
	k->fold = w->fold;
	k->fold_arg = w->fold_arg;
	k->key = kbuf;
	*cached = use_cache && lk__cc_get(w->root, k, out, NAME_MAX + 1);
	if (*cached) {
		close(dfd);
		return 0;
	}
	enum { BUF = 32768 };
	char *buf = malloc(BUF), *nb = malloc(LK__KEY_MAX);
	bool found = false;
	rc = buf && nb ? 0 : -ENOMEM;
	while (rc == 0) {
		long n = syscall(SYS_getdents64, dfd, buf, (size_t)BUF);
		if (n <= 0) {
			rc = n < 0 ? -errno : 0;
			break;
		}
		for (long off = 0; off < n;) {
			struct { uint64_t ino; int64_t off; unsigned short reclen;
				 unsigned char type; char name[]; } *de =
				(void *)(buf + off);
			off += de->reclen;
			const char *nm = de->name;
			size_t nl = strlen(nm);
			if ((nl == 1 && nm[0] == '.') ||
			    (nl == 2 && nm[0] == '.' && nm[1] == '.'))
				continue;
			size_t fl = w->fold(nm, nl, nb, LK__KEY_MAX, w->fold_arg);
			if (fl != k->klen || memcmp(nb, kbuf, fl) != 0)
				continue;
			/* The name as written wins (it appeared since the
			 * exact open failed), then the byte-wise smallest. */
			if (!found || (nl == clen && memcmp(nm, comp, clen) == 0) ||
			    (strcmp(nm, out) < 0 &&
			     !(strlen(out) == clen && memcmp(out, comp, clen) == 0))) {
				memcpy(out, nm, nl + 1);
				found = true;
			}
		}
	}
	free(buf);
	free(nb);
	close(dfd);
	if (rc < 0)
		return rc;
	if (!found)
		return -ENOENT;
	lk__cc_put(w->root, k, out);
	return 0;
}

/* Opens @comp of @pfx with @oflags, matching it case-insensitively if
 * it is not there as written; appends the name found to @pfx. */
static int w_step(struct lk__walk *w, struct lk__sb *pfx, const char *comp,
		  size_t clen, int oflags)
{
	size_t base = pfx->len;
	bool nocase = w->flags & LK_LOOKUP_NOCASE;
	int fl = oflags;
	if (nocase)
		fl &= ~(O_CREAT | O_EXCL);  /* an existing match comes first */
	int rc = sb_add(pfx, comp, clen);
	if (rc < 0)
		return rc;
	bool excl = (oflags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);
	int fd = w_open(w, pfx->p, fl);
	if (fd >= 0 && excl && fl != oflags) {
		close(fd);
		return -EEXIST;
	}
	if (fd != -ENOENT || !nocase)
		return fd;
	sb_cut(pfx, base);
	char name[NAME_MAX + 1], kbuf[LK__KEY_MAX];
	struct lk__ckey k;
	bool cached;
	char *dir = strdup(sb_str(pfx));
	if (!dir)
		return -ENOMEM;
	rc = w_find(w, dir, comp, clen, true, name, &cached, &k, kbuf);
	for (int tries = 0; rc == 0; tries++) {
		rc = sb_add(pfx, name, strlen(name));
		if (rc < 0)
			break;
		fd = w_open(w, pfx->p, fl);
		if (fd >= 0 && excl) {
			close(fd);
			fd = -EEXIST;
		}
		if (fd != -ENOENT || !cached || tries) {
			free(dir);
			return fd;
		}
		/* The cached name went away: read the directory again. */
		sb_cut(pfx, base);
		lk__cc_del(w->root, &k);
		rc = w_find(w, dir, comp, clen, false, name, &cached, &k, kbuf);
	}
	free(dir);
	if (rc == -ENOENT && (oflags & O_CREAT)) {
		/* No match: create the name as written. */
		sb_cut(pfx, base);
		rc = sb_add(pfx, comp, clen);
		return rc < 0 ? rc : w_open(w, pfx->p, oflags);
	}
	return rc;
}

static int w_walk(struct lk__walk *w, struct lk__sb *pfx)
{
	bool stop = w->flags & LK_LOOKUP_STOP_SYMLINK;
	const char *p = w->relpath;
	unsigned idx = 0;

	for (;; idx++) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *comp = p;
		while (*p && *p != '/')
			p++;
		size_t clen = (size_t)(p - comp);
		const char *rest = p;
		while (*rest == '/')
			rest++;
		bool last = !*rest;
		if (clen == 1 && comp[0] == '.')
			continue;
		if (clen == 2 && comp[0] == '.' && comp[1] == '.') {
			int rc = sb_add(pfx, comp, clen);
			if (rc < 0)
				return rc;
			continue;
		}
		int fl = last ? w->oflags : O_PATH | (stop ? O_NOFOLLOW : 0);
		int fd = w_step(w, pfx, comp, clen, fl);
		if (fd == -ELOOP && stop) {
			/* The last component: is it a symlink itself? */
			fd = w_open(w, pfx->p, O_PATH | O_NOFOLLOW);
			if (fd >= 0 && !is_link(fd)) {
				close(fd);
				fd = -ELOOP;
			}
			if (fd < 0)
				return fd;
			return w_report(w, fd, pfx->p, comp, clen, idx, rest);
		}
		if (fd < 0)
			return fd;
		/* O_PATH|O_NOFOLLOW asks for a trailing link itself. */
		if (stop && !(last && (w->oflags & O_NOFOLLOW)) && is_link(fd))
			return w_report(w, fd, pfx->p, comp, clen, idx, rest);
		if (last)
			return w_finish(w, fd, pfx->p);
		close(fd);
	}
	/* Ended on ".", ".." or nothing: open what the prefix names. */
	int fd = w_open(w, sb_str(pfx), w->oflags);
	return fd < 0 ? fd : w_finish(w, fd, pfx->len ? pfx->p : "");
}

/* The path as written, without "." and empty components. */
static int w_norm(const char *relpath, struct lk__sb *b)
{
	int rc = 0;
	for (const char *p = relpath; rc == 0 && *p;) {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		if (p > c && !(p - c == 1 && c[0] == '.'))
			rc = sb_add(b, c, (size_t)(p - c));
	}
	return rc;
}

/* The pool thread's job (as the request's user). */
static long w_run(void *arg)
{
	struct lk__walk *w = arg;
	struct lk__sb pfx = { 0 };
	int rc = w_norm(w->relpath, &pfx);
	if (rc < 0) {
		free(pfx.p);
		return rc;
	}
	int fl = w->oflags;
	if (w->flags & LK_LOOKUP_NOCASE)
		fl &= ~(O_CREAT | O_EXCL);
	int fd = w_open(w, sb_str(&pfx), fl);
	if (fd >= 0 && (w->oflags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL) &&
	    fl != w->oflags) {
		close(fd);
		fd = -EEXIST;
	}
	if (fd >= 0) {
		rc = w_finish(w, fd, pfx.len ? pfx.p : "");
	} else if ((fd == -ENOENT && (w->flags & LK_LOOKUP_NOCASE)) ||
		   (fd == -ELOOP && (w->flags & LK_LOOKUP_STOP_SYMLINK))) {
		sb_cut(&pfx, 0);
		rc = w_walk(w, &pfx);
	} else {
		rc = fd;
	}
	free(pfx.p);
	return rc;
}

/* ---- the operation ---- */

static void walk_free(struct lk__walk *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->path);
	free(w->link_target);
	free(w);
}

/* Moves the results into @l. */
static void walk_take(struct lk__walk *w, struct lk_lookup *l)
{
	memset(l, 0, sizeof(*l));
	l->file.fd = w->fd;
	l->file.stx = w->stx;
	l->path = w->path;
	l->stopped = w->stopped;
	l->link_index = w->link_index;
	l->link_offset = w->link_offset;
	l->link_len = w->link_len;
	l->rest_offset = w->rest_offset;
	l->link_target = w->link_target;
	w->fd = -1;
	w->path = w->link_target = NULL;
}

static void walk_cb(void *arg, long res)
{
	struct lk_op *op = arg;
	op->cookie = 0;
	op->res = op->cancelled ? -ECANCELED : res;
	op->done = true;
	if (op->abandoned) {
		walk_free(op->walk);
		lk__op_free(op);
		return;
	}
	if (op->lcb) {
		lk_lookup_cb cb = op->lcb;
		void *cbarg = op->arg;
		int rc = (int)op->res;
		struct lk_lookup l;
		if (rc == 0)
			walk_take(op->walk, &l);
		walk_free(op->walk);
		lk__op_free(op);
		cb(cbarg, rc, rc == 0 ? &l : NULL);
		return;
	}
	fibril_waitq_wake_all(&op->wq);
}

static void walk_cancel_member(struct lk__member *m)
{
	lk_op_cancel((struct lk_op *)m);
}

/* The path as written, all in the dcache and no symlink when that is
 * asked for: done here, without a hand-off (as lk_open's inline try).
 * 0 done, 1 not. As another user it is left to the pool thread, whose
 * ids are switched anyway. */
static int walk_inline(lk_root_t *r, const char *relpath,
		       const struct lk_lookup_opts *o, struct lk_lookup *out)
{
	if (o->cred || (o->oflags & (O_CREAT | O_TRUNC | __O_TMPFILE)) ||
	    !r->local)
		return 1;
	struct lk__sb b = { 0 };
	struct open_how how = {
		.flags = (uint64_t)(unsigned)o->oflags | O_CLOEXEC,
		.resolve = lk__resolve_flags(r) | RESOLVE_CACHED |
			RESOLVE_NO_XDEV,
	};
	if (o->flags & LK_LOOKUP_STOP_SYMLINK)
		how.resolve |= RESOLVE_NO_SYMLINKS;
	if (w_norm(relpath, &b) < 0) {
		free(b.p);
		return 1;
	}
	uint64_t asked = how.flags;
	how.flags = async__open_nowait_flags(how.flags);
	long fd = syscall(SYS_openat2, r->fd, sb_str(&b), &how, sizeof(how));
	async__fd_forget(fd);
	if (fd >= 0 && lk__fstatx((int)fd, STATX_BASIC_STATS, &out->file.stx) < 0) {
		close((int)fd);
		fd = -1;
	} else if (fd >= 0 && async__open_nowait_keep((int)fd, asked, out->file.stx.stx_mode)) {
		fd = -1;        /* (closed by it) */
	}
	if (fd < 0 || !(out->path = strdup(b.len ? b.p : ""))) {
		if (fd >= 0)
			close((int)fd);
		free(b.p);
		return 1;
	}
	free(b.p);
	out->file.fd = (int)fd;
	lk__st.opens_inline++;
	return 0;
}

/* A path that must name a directory: one ending in "/" or "/." (the
 * walk drops empty and "." components, the kernel would not). */
static bool w_wants_dir(const char *relpath)
{
	size_t n = strlen(relpath);

	return n && (relpath[n - 1] == '/' ||
		     (relpath[n - 1] == '.' && (n == 1 || relpath[n - 2] == '/')));
}

/* 0 done (*out), 1 pending (*opp), or -errno. */
static int walk_start(lk_root_t *r, const char *relpath,
		      const struct lk_lookup_opts *o, struct lk_lookup *out,
		      lk_lookup_cb cb, void *arg, lk_op_t **opp)
{
	if (o->group && o->group->cancelled)
		return -ECANCELED;
	/* What lk_open() would answer for the path as written. */
	if (relpath[0] == '/' && (lk__resolve_flags(r) & RESOLVE_BENEATH))
		return -EXDEV;
	struct lk_lookup_opts dir_opts;
	if (w_wants_dir(relpath)) {
		/* (open(2): creating "name/" is EISDIR; "name/." names a
		 * directory that exists, or nothing) */
		if ((o->oflags & O_CREAT) && relpath[strlen(relpath) - 1] == '/')
			return -EISDIR;
		dir_opts = *o;
		/* A link before a final slash is followed, as the kernel
		 * does: O_NOFOLLOW would refuse it. */
		dir_opts.oflags = (o->oflags | O_DIRECTORY) & ~(O_NOFOLLOW | O_CREAT | O_EXCL);
		o = &dir_opts;
	}
	if (walk_inline(r, relpath, o, out) == 0)
		return 0;
	size_t len = strlen(relpath);
	struct lk__walk *w = calloc(1, sizeof(*w) + len + 1);
	struct lk_op *op = calloc(1, sizeof(*op) + 1);
	if (!w || !op) {
		free(w);
		free(op);
		return -ENOMEM;
	}
	memcpy(w->relpath, relpath, len + 1);
	w->root = r;
	w->fd = -1;
	w->flags = o->flags;
	w->oflags = o->oflags;
	w->fold = o->fold ? o->fold : lk_fold_utf8;
	w->fold_arg = o->fold_arg;
	op->walk = w;
	op->lcb = cb;
	op->arg = arg;
	op->file.fd = -1;
	op->root = r;
	op->cred = async__cred_hold(lk__x(o->cred));
	lk__root_ref(r);
	lk__st.live_ops++;
	lk__st.opens_async++;
	lk__group_join(o->group, &op->m, walk_cancel_member);
	unsigned long a[2] = { (unsigned long)w_run, (unsigned long)w };
	long c = lk__submit(o->cred, 0, &op->res, ASYNC_CALL, a, walk_cb, op);
	if (c <= 0) {
		int rc = (int)(c < 0 ? c : op->res);
		if (rc == 0)
			walk_take(w, out);
		walk_free(w);
		lk__op_free(op);
		return rc;
	}
	op->cookie = c;
	*opp = op;
	return 1;
}

static const struct lk_lookup_opts lk__no_opts;

FIBRIL_API int lk_lookup(lk_root_t *r, const char *relpath,
			 const struct lk_lookup_opts *o, struct lk_lookup *out)
{
	if (!r || !out)
		return -EINVAL;
	if (!o)
		o = &lk__no_opts;
	if (!relpath)
		relpath = "";
	memset(out, 0, sizeof(*out));
	out->file.fd = -1;
	if (o->flags & ~(LK_LOOKUP_NOCASE | LK_LOOKUP_STOP_SYMLINK))
		return -EINVAL;
	if (!o->flags)
		return lk__open_wait(r, relpath, o->oflags, o->group, o->cred,
				     &out->file);
	lk_op_t *op = NULL;
	int rc = walk_start(r, relpath, o, out, NULL, NULL, &op);
	if (rc != 1)
		return rc;
	if (!lk__op_wait(op))
		return -ECANCELED;      /* the pool thread still owns the walk */
	rc = (int)op->res;
	if (rc == 0)
		walk_take(op->walk, out);
	walk_free(op->walk);
	lk__op_free(op);
	return rc;
}

/* lk_open_start's completion, handed on as an lk_lookup. */
struct lk__adapt {
	lk_lookup_cb cb;
	void *arg;
};

static void adapt_cb(void *arg, int res, const struct lk_file *f)
{
	struct lk__adapt a = *(struct lk__adapt *)arg;
	free(arg);
	struct lk_lookup l;
	memset(&l, 0, sizeof(l));
	if (res == 0)
		l.file = *f;
	a.cb(a.arg, res, res == 0 ? &l : NULL);
}

FIBRIL_API int lk_lookup_start(lk_root_t *r, const char *relpath,
			       const struct lk_lookup_opts *o,
			       struct lk_lookup *out, lk_lookup_cb cb,
			       void *arg, lk_op_t **opp)
{
	lk_op_t *dummy;
	if (!cb)
		return -EINVAL;
	if (!o)
		o = &lk__no_opts;
	if (!relpath)
		relpath = "";
	if (!opp)
		opp = &dummy;
	memset(out, 0, sizeof(*out));
	out->file.fd = -1;
	if (o->flags & ~(LK_LOOKUP_NOCASE | LK_LOOKUP_STOP_SYMLINK))
		return -EINVAL;
	if (o->flags)
		return walk_start(r, relpath, o, out, cb, arg, opp);
	struct lk__adapt *a = malloc(sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->cb = cb;
	a->arg = arg;
	int rc = lk__open_start(r, relpath, o->oflags, o->group, o->cred,
				&out->file, adapt_cb, a, opp);
	if (rc != 1)
		free(a);
	return rc;
}

FIBRIL_API void lk_lookup_release(struct lk_lookup *l)
{
	if (!l)
		return;
	if (l->file.fd >= 0)
		async__close_fd(l->file.fd);
	l->file.fd = -1;
	free(l->path);
	free(l->link_target);
	l->path = l->link_target = NULL;
}

FIBRIL_API int lk_stat(lk_root_t *r, const char *relpath,
		       const struct lk_lookup_opts *o, struct statx *stx)
{
	struct lk_lookup_opts so = o ? *o : lk__no_opts;
	struct lk_lookup l;
	if (!stx)
		return -EINVAL;
	so.oflags = O_PATH | (so.oflags & O_NOFOLLOW);
	int rc = lk_lookup(r, relpath, &so, &l);
	if (rc < 0)
		return rc;
	if (l.stopped)
		rc = -ELOOP;
	else
		*stx = l.file.stx;
	lk_lookup_release(&l);
	return rc;
}
