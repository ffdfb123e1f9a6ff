/*
 * fls: "ls -l" on the lookup engine: a directory's readdir results
 * filled in by asynchronous stat calls. Same columns as `LC_ALL=C ls
 * -l`: mode, links, owner, group, size, mtime, name, "-> target";
 * sorted by name.
 * Not shown: the ACL / SELinux marker after the mode (that needs one
 * more xattr call per file).
 *
 * Usage: fls [-a] [-L] [-w WINDOW] [-t THREADS] [DIR]
 *   -a  also list dotfiles, "." and ".." (ls -la)
 *   -L  LK_SCAN_LOOKUP_ATTRS: the attributes the name lookup brought back
 *       (one FUSE round trip per entry instead of two; see lookup.h)
 *   -w  statx calls in flight on FUSE and network file systems (default
 *       256); local ones take the library's local window (LK_LOCAL_WINDOW)
 *   -t  io-wq workers for the ring (default: the window, at most 256):
 *       on slow metadata the worker limit decides everything
 *       (docs/DESIGN.md, "io-wq worker limits")
 * Device files show their size (0), not "major, minor" (the engine keeps
 * no st_rdev).
 *
 * No fibrils: lk_scan_next() called outside a fibril drives the thread's
 * engine itself.
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fibril/async.h"
#include "fibril/lookup.h"

struct row {
	char *name;            /* name, then " -> target" for symlinks */
	uint64_t size, blocks;
	int64_t mtime;
	uint32_t mtime_nsec, nlink, uid, gid;
	uint16_t mode;
};

/* uid/gid -> name, cached (ls does the same). */
struct idname { uint32_t id; char *name; };
struct idcache { struct idname *v; size_t n; };

static const char *id_name(struct idcache *c, uint32_t id, int group)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].id == id)
			return c->v[i].name;
	const char *nm = NULL;
	if (group) {
		struct group *g = getgrgid(id);
		nm = g ? g->gr_name : NULL;
	} else {
		struct passwd *p = getpwuid(id);
		nm = p ? p->pw_name : NULL;
	}
	struct idname *v = realloc(c->v, (c->n + 1) * sizeof(*v));
	if (!v)
		exit(2);
	c->v = v;
	c->v[c->n].id = id;
	c->v[c->n].name = nm ? strdup(nm) : NULL;
	return c->v[c->n++].name;
}

static void mode_string(unsigned m, char *b)
{
	b[0] = S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISCHR(m) ? 'c'
		: S_ISBLK(m) ? 'b' : S_ISFIFO(m) ? 'p' : S_ISSOCK(m) ? 's' : '-';
	static const char rwx[] = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		b[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	if (m & S_ISUID)
		b[3] = (m & S_IXUSR) ? 's' : 'S';
	if (m & S_ISGID)
		b[6] = (m & S_IXGRP) ? 's' : 'S';
	if (m & S_ISVTX)
		b[9] = (m & S_IXOTH) ? 't' : 'T';
	b[10] = 0;
}

static int digits(uint64_t v)
{
	int n = 1;
	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static int id_width(struct idcache *c, uint32_t id, int group)
{
	const char *nm = id_name(c, id, group);
	return nm ? (int)strlen(nm) : digits(id);
}

static void quiet(int level, const char *msg, void *arg)
{
	if (level <= 4)   /* LOG_WARNING and worse */
		fprintf(stderr, "fls: %s\n", msg);
}

struct opts {
	int all, lookup_attrs;
	unsigned window, workers;
	const char *dir;
};

static void parse_args(int argc, char **argv, struct opts *o)
{
	int opt;

	*o = (struct opts){ .window = 256 };
	while ((opt = getopt(argc, argv, "aLw:t:")) != -1) {
		switch (opt) {
		case 'a': o->all = 1; break;
		case 'L': o->lookup_attrs = 1; break;
		case 'w': o->window = (unsigned)atoi(optarg); break;
		case 't': o->workers = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: fls [-a] [-L] [-w WINDOW] [-t THREADS] [DIR]\n");
			exit(2);
		}
	}
	o->dir = optind < argc ? argv[optind] : ".";
}

static void row_attrs(struct row *r, const struct statx *stx)
{
	r->mode = stx->stx_mode;
	r->nlink = stx->stx_nlink;
	r->uid = stx->stx_uid;
	r->gid = stx->stx_gid;
	r->size = stx->stx_size;
	r->blocks = stx->stx_blocks;
	r->mtime = stx->stx_mtime.tv_sec;
	r->mtime_nsec = stx->stx_mtime.tv_nsec;
}

/* The engine never looks above its root; ls -a shows the real parent,
 * so "..", when listed, is asked for here. 0: filled in. */
static int row_parent(struct row *r, const char *dir)
{
	char pp[4096];
	struct statx stx;

	snprintf(pp, sizeof(pp), "%s/..", dir);
	if (statx(AT_FDCWD, pp, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) < 0)
		return -1;
	row_attrs(r, &stx);
	return 0;
}

/* Fills @r from @en: its name (with " -> target") and attributes. */
static void row_fill(struct row *r, const struct lk_entry *en, const char *dir)
{
	if (en->link) {
		size_t l = en->namelen + 4 + strlen(en->link) + 1;
		r->name = malloc(l);
		if (r->name)
			snprintf(r->name, l, "%s -> %s", en->name, en->link);
	} else {
		r->name = strdup(en->name);
	}
	if (!r->name)
		exit(2);
	if (strcmp(en->name, "..") || row_parent(r, dir) < 0)
		row_attrs(r, &en->stx);
}

/* Lists o->dir into *@rows (sorted by name). Returns 0, 1 if some entry
 * could not be stat-ed (reported), 2 if the directory could not be. */
static int scan(const struct opts *o, struct row **rows, size_t *n)
{
	struct async_engine_opts eo = { 0 };
	async_engine_t *e;
	lk_root_t *root;
	lk_scan_t *s;
	const struct lk_entry *ents;
	size_t k, cap = 0;
	int rc, status = 0;

	eo.iowq_bounded = o->workers ? o->workers : (o->window < 256 ? o->window : 256);
	eo.max_inflight = o->window * 2 + 64;
	eo.log = quiet;
	if ((rc = async_engine_create(&eo, &e)) < 0) {
		fprintf(stderr, "fls: engine: %s\n", strerror(-rc));
		return 2;
	}
	if ((rc = lk_root_open(o->dir, NULL, &root)) < 0) {
		fprintf(stderr, "fls: cannot access '%s': %s\n", o->dir, strerror(-rc));
		return 2;
	}
	struct lk_scan_opts so = {
		.sort = LK_SORT_NAME,
		.window = o->window,
		.flags = (o->all ? LK_SCAN_DOTFILES | LK_SCAN_DOTDOT : 0) |
			(o->lookup_attrs ? LK_SCAN_LOOKUP_ATTRS : 0),
	};
	rc = lk_scan_open(root, "", &so, &s);
	while (rc >= 0 && (rc = lk_scan_next(s, &ents, &k)) == 1) {
		for (size_t i = 0; i < k; i++) {
			if (ents[i].err) {
				fprintf(stderr, "fls: cannot access '%s/%s': %s\n",
					o->dir, ents[i].name, strerror(-ents[i].err));
				status = 1;
				continue;
			}
			if (*n == cap) {
				cap = cap ? cap * 2 : 1024;
				if (!(*rows = realloc(*rows, cap * sizeof(**rows))))
					exit(2);
			}
			row_fill(&(*rows)[(*n)++], &ents[i], o->dir);
		}
	}
	if (rc < 0) {
		fprintf(stderr, "fls: cannot open directory '%s': %s\n", o->dir,
			strerror(-rc));
		return 2;
	}
	lk_scan_close(s);
	lk_root_close(root);
	async_engine_destroy(e);
	return status;
}

struct widths { int links, user, group, size; };

/* Column widths over every row, as ls does; returns the total blocks. */
static uint64_t measure(const struct row *rows, size_t n, struct idcache *users,
                        struct idcache *groups, struct widths *w)
{
	uint64_t total = 0;
	int x;

	*w = (struct widths){ 1, 1, 1, 1 };
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		total += r->blocks;
		if ((x = digits(r->nlink)) > w->links) w->links = x;
		if ((x = id_width(users, r->uid, 0)) > w->user) w->user = x;
		if ((x = id_width(groups, r->gid, 1)) > w->group) w->group = x;
		if ((x = digits(r->size)) > w->size) w->size = x;
	}
	return total;
}

/* The time column: "Mon dd HH:MM" within the last half Gregorian year
 * (as GNU ls), else "Mon dd  YYYY". Rows sorted by name often share a
 * time: the last one formatted is kept in @c. */
struct tcol { int64_t t; int recent; char buf[64]; };

static const char *time_column(struct tcol *c, const struct row *r,
                               const struct timespec *now)
{
	int64_t six_months_ago = now->tv_sec - 31556952 / 2;
	int recent = r->mtime > six_months_ago &&
		(r->mtime < now->tv_sec ||
		 (r->mtime == now->tv_sec && (long)r->mtime_nsec <= now->tv_nsec));

	if (r->mtime != c->t || recent != c->recent) {
		time_t t = (time_t)r->mtime;
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(c->buf, sizeof(c->buf), recent ? "%b %e %H:%M" : "%b %e  %Y", &tm);
		c->t = r->mtime;
		c->recent = recent;
	}
	return c->buf;
}

static void print_rows(const struct row *rows, size_t n, struct idcache *users,
                       struct idcache *groups)
{
	static char obuf[1 << 16];
	struct widths w;
	struct timespec now;
	struct tcol tc = { .t = INT64_MIN, .recent = -1 };

	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	printf("total %llu\n",
	       (unsigned long long)((measure(rows, n, users, groups, &w) + 1) / 2));
	clock_gettime(CLOCK_REALTIME, &now);
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const char *un = id_name(users, r->uid, 0);
		const char *gn = id_name(groups, r->gid, 1);
		char mb[11];

		mode_string(r->mode, mb);
		printf("%s %*u ", mb, w.links, r->nlink);
		if (un)
			printf("%-*s ", w.user, un);
		else
			printf("%*u ", w.user, r->uid);
		if (gn)
			printf("%-*s ", w.group, gn);
		else
			printf("%*u ", w.group, r->gid);
		printf("%*llu %s %s\n", w.size, (unsigned long long)r->size,
		       time_column(&tc, r, &now), r->name);
	}
	fflush(stdout);
}

static void idcache_free(struct idcache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].name);
	free(c->v);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct row *rows = NULL;
	struct idcache users = { 0 }, groups = { 0 };
	size_t n = 0;
	int status;

	parse_args(argc, argv, &o);
	if ((status = scan(&o, &rows, &n)) == 2)
		return 2;
	print_rows(rows, n, &users, &groups);
	for (size_t i = 0; i < n; i++)
		free(rows[i].name);
	free(rows);
	idcache_free(&users);
	idcache_free(&groups);
	return status;
}
