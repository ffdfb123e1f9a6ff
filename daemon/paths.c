#include "first.h"

#include "daemon/paths.h"
#include "daemon/daemon.h"
#include "daemon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symlinks followed on one path, at most (the kernel's MAXSYMLINKS). */
#define PATHS_MAX_HOPS 40

/* ---- the roots ---- */

static int dup_root(int fd, enum lk_symlinks mode, lk_root_t **out)
{
	struct lk_root_opts o = { .symlinks = mode };
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (d < 0)
		return -errno;
	int r = lk_root_from_fd(d, &o, out);
	if (r < 0)
		close(d);
	return r;
}

/* The path /proc gives for @fd, in @out (absolute). 0 or -errno. */
static int fd_path(int fd, char *out, size_t outsz)
{
	char link[40];

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, out, outsz - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= outsz - 1)
		return -ENAMETOOLONG;
	out[n] = 0;
	return out[0] == '/' ? 0 : -ENOENT;     /* "... (deleted)", not a path */
}

static void report(conf_err_fn *err, void *arg, const struct conf *c, int line,
                   const char *path, const char *why)
{
	char msg[PATH_MAX + 256];

	snprintf(msg, sizeof msg, "%s:%d: allow %s: %s", c->file ? c->file : "fileserverd",
	         line, path, why);
	err(arg, msg);
}

int fsd_paths_open(struct fsd_server *s, conf_err_fn *err, void *arg)
{
	const struct conf *c = &s->conf;
	struct fsd_paths *p = calloc(1, sizeof *p);
	int errors = 0;

	s->paths = p;
	if (!p || (c->nallow && !(p->allow = calloc(c->nallow, sizeof *p->allow)))) {
		err(arg, "fileserverd: out of memory");
		return 1;
	}
	if (!s->lkroot)
		return 0;       /* the root failed: reported by the caller */
	if (dup_root(s->rootfd, LK_SYMLINKS_FOLLOW_ANY, &p->any) < 0) {
		err(arg, "fileserverd: cannot open the root again (out of descriptors?)");
		return 1;
	}
	if (c->symlinks == CONF_LINKS_OWNER) {
		struct lk_root_opts o = { .symlinks = LK_SYMLINKS_FOLLOW_ANY };
		int r = lk_root_open("/", &o, &p->sys);
		if (r < 0) {
			char msg[128];
			snprintf(msg, sizeof msg, "fileserverd: /: %s", strerror(-r));
			err(arg, msg);
			return 1;
		}
	}
	for (size_t i = 0; i < c->nallow; i++) {
		const struct conf_allow *a = &c->allow[i];
		struct fsd_allow *t = &p->allow[p->nallow];
		char real[PATH_MAX];
		int r = lk_root_open(a->path, NULL, &t->root);
		if (r == 0 && (r = fd_path(lk_root_fd(t->root), real, sizeof real)) == 0 &&
		    !(t->real = strdup(real)))
			r = -ENOMEM;
		if (r < 0) {
			report(err, arg, c, a->line, a->path, r == -ENOTDIR ? "not a directory"
			       : strerror(-r));
			if (t->root)
				lk_root_close(t->root);
			t->root = NULL;
			errors++;
			continue;
		}
		t->path = a->path;
		p->nallow++;
	}
	return errors;
}

void fsd_paths_close(struct fsd_server *s)
{
	struct fsd_paths *p = s->paths;

	if (!p)
		return;
	for (size_t i = 0; i < p->nallow; i++) {
		lk_root_close(p->allow[i].root);
		free(p->allow[i].real);
	}
	free(p->allow);
	if (p->any)
		lk_root_close(p->any);
	if (p->sys)
		lk_root_close(p->sys);
	free(p);
	s->paths = NULL;
}

void fsd_found_release(struct fsd_found *fo)
{
	if (fo->f.fd >= 0)
		close(fo->f.fd);
	fo->f.fd = -1;
	free(fo->path);
	fo->path = NULL;
}

/* ---- path text ---- */

/* "a" "/" "b" "/" "c", leaving out empty parts. malloc'd, or NULL. */
static char *join3(const char *a, size_t al, const char *b, const char *c)
{
	size_t bl = strlen(b), cl = strlen(c);
	char *s = malloc(al + bl + cl + 3), *o = s;

	if (!s)
		return NULL;
	memcpy(o, a, al);
	o += al;
	if (bl) {
		if (o > s)
			*o++ = '/';
		memcpy(o, b, bl);
		o += bl;
	}
	if (cl) {
		if (o > s)
			*o++ = '/';
		memcpy(o, c, cl);
		o += cl;
	}
	*o = 0;
	return s;
}

/* Is @dir ("/x/y", or "/") a prefix of @path at a component boundary?
 * Returns the length of @path it covers, or -1. */
static long covers(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return 0;
	if (strncmp(dir, path, n) || (path[n] && path[n] != '/'))
		return -1;
	return (long)n;
}

/* Appends the component @c (@cl bytes) to the absolute path @h of @n
 * bytes, lexically: "" and "." add nothing, ".." drops the last
 * component (never the root). Returns the new length. */
static size_t path_push(char *h, size_t n, const char *c, size_t cl)
{
	if (!cl || (cl == 1 && c[0] == '.'))
		return n;
	if (cl == 2 && c[0] == '.' && c[1] == '.') {
		while (n > 0 && h[n - 1] != '/')
			n--;
		return n > 0 ? n - 1 : 0;
	}
	h[n++] = '/';
	memcpy(h + n, c, cl);
	return n + cl;
}

/*
 * The absolute path a symlink's target names, as far as its text tells:
 * @base (absolute, every component a directory, not a symlink: the
 * root's real path and the link's directory) for a relative target,
 * then its components, "." dropped and ".." applied while all before it
 * is known not to be a symlink. From a ".." after a component of the
 * target (which may be a symlink, whose ".." is not the text's) on, the
 * target is left in *raw, for the kernel to resolve beneath the tree
 * found. *left: absolute, or climbed above @rootlen bytes of @base.
 */
static char *target_abs(const char *base, size_t rootlen, const char *target,
                        const char **raw, bool *left)
{
	size_t bl = strlen(base);
	char *h = malloc(bl + strlen(target) + 2);
	size_t n = 0, known = 0;
	const char *p = target;

	if (!h)
		return NULL;
	*left = target[0] == '/';
	if (!*left) {
		memcpy(h, base, bl);
		n = known = bl;
	}
	while (*p) {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t cl = (size_t)(p - c);
		bool up = cl == 2 && c[0] == '.' && c[1] == '.';
		if (up && n > known) {
			p = c;
			break;
		}
		n = path_push(h, n, c, cl);
		if (up) {
			known = n;
			if (n < rootlen)
				*left = true;
		}
	}
	h[n] = 0;
	*raw = p;
	return h;
}

/* @path's directory part ("a/b" of "a/b/link"), ".." applied: every
 * component before a link the walk stopped at is a directory. Appended
 * to @out (holding @n bytes, an absolute path or ""). */
static size_t dir_of(const char *path, char *out, size_t n)
{
	const char *end = strrchr(path, '/');
	const char *p = path;

	if (!end)
		return n;
	while (p < end) {
		const char *c = p;
		while (p < end && *p != '/')
			p++;
		size_t cl = (size_t)(p - c);
		if (p < end)
			p++;
		n = path_push(out, n, c, cl);
	}
	out[n] = 0;
	return n;
}

/* ---- beneath, with allow trees ---- */

/* The widest allow tree holding @abs (by its configured or its real
 * path), and the length of @abs it covers. */
static const struct fsd_allow *allow_for(const char *abs, size_t *skip)
{
	const struct fsd_paths *p = fsd->paths;
	const struct fsd_allow *best = NULL;
	long bn = 0;

	for (size_t i = 0; i < p->nallow; i++) {
		long a = covers(p->allow[i].path, abs), b = covers(p->allow[i].real, abs);
		long n = a < 0 ? b : a;
		/* the shorter prefix is the wider tree */
		if (n >= 0 && (!best || n < bn)) {
			best = &p->allow[i];
			bn = n;
		}
	}
	*skip = (size_t)bn;
	return best;
}

/* A hop of walk_links(): the symlink @l stopped at, reached by @p on
 * *root. Returns 0 with *next (the path to walk on, malloc'd, on the
 * *root it may change), 1 with *out filled, or -errno. */
typedef int paths_hop_fn(struct fsd_req *rq, const char *p, const struct lk_lookup *l,
                         lk_root_t **root, char **next, struct fsd_found *out);

/* Each symlink on @rel, stopped at on @root and followed by @hop, until
 * a path without one is found (or PATHS_MAX_HOPS of them). */
static int walk_links(struct fsd_req *rq, lk_root_t *root, const char *rel,
                      paths_hop_fn *hop, struct fsd_found *out)
{
	struct lk_lookup_opts o = { .oflags = O_PATH, .flags = LK_LOOKUP_STOP_SYMLINK,
	                            .group = rq->group };
	char *p = strdup(rel);
	int r = p ? 0 : -ENOMEM;

	for (unsigned hops = 0; r == 0; hops++) {
		struct lk_lookup l;
		if (hops > PATHS_MAX_HOPS) {
			r = -ELOOP;
			break;
		}
		r = lk_lookup(root, p, &o, &l);
		if (r < 0)
			break;
		if (!l.stopped) {
			out->f = l.file;
			l.file.fd = -1;
			lk_lookup_release(&l);
			out->root = root;
			out->path = p;
			out->where = FSD_AT_LINKED;
			return 0;
		}
		char *next = NULL;
		r = hop(rq, p, &l, &root, &next, out);
		lk_lookup_release(&l);
		free(p);
		p = next;
		if (r == 1)
			return 0;
	}
	free(p);
	return r;
}

/* Beneath with allow trees: the target and the rest of @p lead beneath
 * the root again (0, *next) or into an allow tree (1, *out). */
static int beneath_hop(struct fsd_req *rq, const char *p, const struct lk_lookup *l,
                       lk_root_t **lkroot, char **next, struct fsd_found *out)
{
	(void)lkroot;
	char root[PATH_MAX], *base;
	const char *raw, *rest = p + l->rest_offset;
	bool left;
	int r = fd_path(fsd->rootfd, root, sizeof root);

	if (r < 0)
		return r == -ENOENT ? -EACCES : r;
	size_t rootlen = strcmp(root, "/") ? strlen(root) : 0;
	base = malloc(rootlen + strlen(l->path) + 2);
	if (!base)
		return -ENOMEM;
	memcpy(base, root, rootlen);
	base[rootlen] = 0;
	dir_of(l->path, base, rootlen);
	char *abs = target_abs(base, rootlen, l->link_target, &raw, &left);
	free(base);
	if (!abs)
		return -ENOMEM;
	if (!left) {
		/* still beneath the root: walk on there */
		*next = join3(abs + rootlen + (abs[rootlen] == '/'),
		              strlen(abs + rootlen + (abs[rootlen] == '/')), raw, rest);
		free(abs);
		return *next ? 0 : -ENOMEM;
	}
	size_t skip;
	const struct fsd_allow *t = allow_for(abs, &skip);
	if (!t) {
		free(abs);
		return -EXDEV;
	}
	const char *in = abs + skip + (abs[skip] == '/');
	char *tp = join3(in, strlen(in), raw, rest);
	free(abs);
	if (!tp)
		return -ENOMEM;
	/* The tree's own symlinks: the kernel's, beneath it. */
	r = lk_open(t->root, tp, O_PATH, rq->group, &out->f);
	if (r < 0) {
		free(tp);
		return r;
	}
	out->root = t->root;
	out->path = tp;
	out->where = FSD_AT_ALLOW;
	out->tree = t;
	return 1;
}

/* A path with a symlink that leaves the root, under beneath with allow
 * trees: each symlink on it stopped at and followed here. */
static int walk_beneath(struct fsd_req *rq, const char *rel, struct fsd_found *out)
{
	return walk_links(rq, fsd->lkroot, rel, beneath_hop, out);
}

/* ---- if_owner_match ---- */

/* Each symlink on the path, stopped at: followed when its owner owns
 * what its target resolves to. Relative targets stay on the root that
 * follows anywhere (".." may climb above the root there, as the kernel
 * would take it), absolute ones go on from "/". */
static int owner_hop(struct fsd_req *rq, const char *p, const struct lk_lookup *l,
                     lk_root_t **root, char **next, struct fsd_found *out)
{
	struct lk_lookup_opts so = { .group = rq->group };
	const char *tg = l->link_target, *slash = strrchr(l->path, '/');
	char *tp;
	int r;

	(void)out;
	if (tg[0] == '/') {
		*root = fsd->paths->sys;
		while (*tg == '/')
			tg++;
		tp = strdup(tg);
	} else
		tp = join3(l->path, slash ? (size_t)(slash - l->path) : 0, tg, "");
	struct statx st;
	r = tp ? lk_stat(*root, tp, &so, &st) : -ENOMEM;
	if (r == 0 && st.stx_uid != l->file.stx.stx_uid) {
		fsd_log(LOG_INFO, "symlink %s: owner %u, its target's %u: not followed "
		        "(symlinks = if_owner_match)", l->path,
		        (unsigned)l->file.stx.stx_uid, (unsigned)st.stx_uid);
		r = -EACCES;
	}
	if (r == 0) {
		*next = join3(tp, strlen(tp), p + l->rest_offset, "");
		if (!*next)
			r = -ENOMEM;
	}
	free(tp);
	return r;
}

static int walk_owner(struct fsd_req *rq, const char *rel, struct fsd_found *out)
{
	return walk_links(rq, fsd->paths->any, rel, owner_hop, out);
}

/* ---- resolution ---- */

int fsd_paths_resolve(struct fsd_req *rq, const char *rel, struct fsd_found *out)
{
	const struct fsd_paths *ps = fsd->paths;
	lk_root_t *root = fsd->lknolinks;
	int r = -ELOOP;

	memset(out, 0, sizeof *out);
	out->f.fd = -1;
	out->where = FSD_AT_PLAIN;
	/* The common case first: no symlink on the path, one lookup. */
	if (root)
		r = lk_open(root, rel, O_PATH, rq->group, &out->f);
	if (r == -ELOOP && (!ps || fsd->conf.symlinks != CONF_LINKS_NEVER)) {
		out->where = FSD_AT_LINKED;
		switch (ps ? fsd->conf.symlinks : CONF_LINKS_BENEATH) {
		case CONF_LINKS_BENEATH:
			root = fsd->lkroot;
			r = lk_open(root, rel, O_PATH, rq->group, &out->f);
			if (r == -EXDEV && ps && ps->nallow)
				return walk_beneath(rq, rel, out);
			break;
		case CONF_LINKS_FOLLOW:
			root = ps->any;
			r = lk_open(root, rel, O_PATH, rq->group, &out->f);
			break;
		case CONF_LINKS_OWNER:
			return walk_owner(rq, rel, out);
		case CONF_LINKS_NEVER:
			break;
		}
	}
	if (r < 0)
		return r;
	out->root = root;
	out->path = strdup(rel);
	if (!out->path) {
		fsd_found_release(out);
		return -ENOMEM;
	}
	return 0;
}

/* @path (absolute) beneath @dir (absolute): its form "/x/y" ("/" for
 * @dir itself) in @path, and true; false when it is not beneath. */
static bool strip_dir(const char *dir, char *path)
{
	long n = covers(dir, path);

	if (n < 0)
		return false;
	if (!path[n])
		memcpy(path, "/", 2);
	else
		memmove(path, path + n, strlen(path + n) + 1);
	return true;
}

int fsd_paths_judged(const struct fsd_found *fo, char *out, size_t outsz)
{
	char dir[PATH_MAX];
	int r = fd_path(fo->f.fd, out, outsz);

	if (r == 0)
		r = fd_path(fsd->rootfd, dir, sizeof dir);
	if (r < 0) {
		fsd_log(LOG_ERR, "cannot tell where a symlink leads (/proc/self/fd: %s): "
		        "refused", strerror(-r));
		return -EACCES;
	}
	if (strip_dir(dir, out))
		return 1;
	if (fo->where != FSD_AT_ALLOW)
		return 0;       /* follow, if_owner_match: the absolute path */
	if (fd_path(lk_root_fd(fo->tree->root), dir, sizeof dir) < 0 || !strip_dir(dir, out)) {
		fsd_log(LOG_ERR, "a path resolved outside its allow tree %s (a mount "
		        "moved?): refused", fo->tree->path);
		return -EACCES;
	}
	return 0;
}

lk_root_t *fsd_paths_scan_root(const struct fsd_found *fo, const char *rel,
                               const char *judged, int beneath, int dirfd,
                               const char **scanpath, int *err)
{
	lk_root_t *r;

	*err = 0;
	*scanpath = rel;
	if (fo->where == FSD_AT_PLAIN) {
		/* under never a listing shows no target: none is followed */
		bool never = fsd->paths && fsd->conf.symlinks == CONF_LINKS_NEVER;
		return lk_root_ref(never && fsd->lknolinks ? fsd->lknolinks : fsd->lkroot);
	}
	if (beneath || fo->where == FSD_AT_ALLOW) {
		/* by where it is: a symlink's relative target is relative to
		 * the real directory, and a scan started again (a second
		 * pass) finds the same one */
		*scanpath = judged[1] ? judged + 1 : ".";
		return lk_root_ref(beneath ? fsd->lkroot : fo->tree->root);
	}
	*scanpath = ".";
	*err = dup_root(dirfd, LK_SYMLINKS_FOLLOW_BENEATH, &r);
	return *err < 0 ? NULL : r;
}
