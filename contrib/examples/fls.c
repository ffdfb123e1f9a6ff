/*
 * fls: "ls -l" on the lookup engine: the 2007 fibril discussion's
 * "something *really* simple like ls", its readdir results filled in
 * by asynchronous stat calls. Same columns as `LC_ALL=C ls -l`: mode,
 * links, owner, group, size, mtime, name, "-> target"; sorted by name.
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

int main(int argc, char **argv)
{
	int all = 0, lookup_attrs = 0, opt;
	unsigned window = 256, workers = 0;
	while ((opt = getopt(argc, argv, "aLw:t:")) != -1) {
		switch (opt) {
		case 'a': all = 1; break;
		case 'L': lookup_attrs = 1; break;
		case 'w': window = (unsigned)atoi(optarg); break;
		case 't': workers = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: fls [-a] [-L] [-w WINDOW] [-t THREADS] [DIR]\n");
			return 2;
		}
	}
	const char *dir = optind < argc ? argv[optind] : ".";

	struct async_engine_opts eo = { 0 };
	eo.iowq_bounded = workers ? workers : (window < 256 ? window : 256);
	eo.max_inflight = window * 2 + 64;
	eo.log = quiet;
	async_engine_t *e;
	int rc = async_engine_create(&eo, &e);
	if (rc < 0) {
		fprintf(stderr, "fls: engine: %s\n", strerror(-rc));
		return 2;
	}
	lk_root_t *root;
	rc = lk_root_open(dir, NULL, &root);
	if (rc < 0) {
		fprintf(stderr, "fls: cannot access '%s': %s\n", dir, strerror(-rc));
		return 2;
	}
	struct lk_scan_opts so = {
		.sort = LK_SORT_NAME,
		.window = window,
		.flags = (all ? LK_SCAN_DOTFILES | LK_SCAN_DOTDOT : 0) |
			(lookup_attrs ? LK_SCAN_LOOKUP_ATTRS : 0),
	};
	lk_scan_t *s;
	rc = lk_scan_open(root, "", &so, &s);

	struct row *rows = NULL;
	size_t n = 0, cap = 0;
	const struct lk_entry *ents;
	size_t k;
	int status = 0;
	while (rc >= 0 && (rc = lk_scan_next(s, &ents, &k)) == 1) {
		for (size_t i = 0; i < k; i++) {
			const struct lk_entry *en = &ents[i];
			if (en->err) {
				fprintf(stderr, "fls: cannot access '%s/%s': %s\n",
					dir, en->name, strerror(-en->err));
				status = 1;
				continue;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 1024;
				rows = realloc(rows, cap * sizeof(*rows));
				if (!rows)
					return 2;
			}
			struct row *r = &rows[n++];
			if (en->link) {
				size_t l = en->namelen + 4 + strlen(en->link) + 1;
				r->name = malloc(l);
				if (r->name)
					snprintf(r->name, l, "%s -> %s", en->name, en->link);
			} else {
				r->name = strdup(en->name);
			}
			if (!r->name)
				return 2;
			if (!strcmp(en->name, "..")) {
				/* The engine never looks above its root; ls -a
				 * shows the real parent, so ask for it here. */
				char pp[4096];
				struct stat st;
				snprintf(pp, sizeof(pp), "%s/..", dir);
				if (lstat(pp, &st) == 0) {
					r->mode = st.st_mode;
					r->nlink = st.st_nlink;
					r->uid = st.st_uid;
					r->gid = st.st_gid;
					r->size = st.st_size;
					r->blocks = st.st_blocks;
					r->mtime = st.st_mtim.tv_sec;
					r->mtime_nsec = st.st_mtim.tv_nsec;
					continue;
				}
			}
			r->mode = en->stx.stx_mode;
			r->nlink = en->stx.stx_nlink;
			r->uid = en->stx.stx_uid;
			r->gid = en->stx.stx_gid;
			r->size = en->stx.stx_size;
			r->blocks = en->stx.stx_blocks;
			r->mtime = en->stx.stx_mtime.tv_sec;
			r->mtime_nsec = en->stx.stx_mtime.tv_nsec;
		}
	}
	if (rc < 0) {
		fprintf(stderr, "fls: cannot open directory '%s': %s\n", dir,
			strerror(-rc));
		return 2;
	}
	lk_scan_close(s);
	lk_root_close(root);
	async_engine_destroy(e);

	/* Column widths over everything, as ls does. */
	struct idcache users = { 0 }, groups = { 0 };
	int wl = 1, wu = 1, wg = 1, ws = 1;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		struct row *r = &rows[i];
		total += r->blocks;
		int w;
		if ((w = digits(r->nlink)) > wl) wl = w;
		if ((w = id_width(&users, r->uid, 0)) > wu) wu = w;
		if ((w = id_width(&groups, r->gid, 1)) > wg) wg = w;
		if ((w = digits(r->size)) > ws) ws = w;
	}
	static char obuf[1 << 16];
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	printf("total %llu\n", (unsigned long long)((total + 1) / 2));

	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	/* GNU ls: "recent" is within the last half Gregorian year. */
	int64_t six_months_ago = now.tv_sec - 31556952 / 2;
	int64_t last_t = INT64_MIN;
	int last_recent = -1;
	char tbuf[64] = "";
	for (size_t i = 0; i < n; i++) {
		struct row *r = &rows[i];
		char mb[11];
		mode_string(r->mode, mb);
		int recent = r->mtime > six_months_ago &&
			(r->mtime < now.tv_sec ||
			 (r->mtime == now.tv_sec && (long)r->mtime_nsec <= now.tv_nsec));
		if (r->mtime != last_t || recent != last_recent) {
			time_t t = (time_t)r->mtime;
			struct tm tm;
			localtime_r(&t, &tm);
			strftime(tbuf, sizeof(tbuf),
				 recent ? "%b %e %H:%M" : "%b %e  %Y", &tm);
			last_t = r->mtime;
			last_recent = recent;
		}
		const char *un = id_name(&users, r->uid, 0);
		const char *gn = id_name(&groups, r->gid, 1);
		printf("%s %*u ", mb, wl, r->nlink);
		if (un)
			printf("%-*s ", wu, un);
		else
			printf("%*u ", wu, r->uid);
		if (gn)
			printf("%-*s ", wg, gn);
		else
			printf("%*u ", wg, r->gid);
		printf("%*llu %s %s\n", ws, (unsigned long long)r->size, tbuf,
		       r->name);
		free(r->name);
	}
	free(rows);
	for (size_t i = 0; i < users.n; i++)
		free(users.v[i].name);
	for (size_t i = 0; i < groups.n; i++)
		free(groups.v[i].name);
	free(users.v);
	free(groups.v);
	fflush(stdout);
	return status;
}
