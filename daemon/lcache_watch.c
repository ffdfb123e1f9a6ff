#include "first.h"

/*
 * The listing cache's fill off the worker (lcache_int.h): a
 * directory's watch added, then its names read by a pool thread, then
 * a watch on each name from threads whose working directory is the
 * directory; and, on the worker,
 * the directories whose names were more than a fill may watch, so that
 * they are not read again while unchanged.
 */

#include "daemon/lcache_int.h"
#include "daemon/fcache_int.h"
#include "daemon/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* ---- on a pool thread ---- */

/* The names of the directory, up to max + 1, by a descriptor of its
 * own. */
static long read_names(struct lcw_job *j)
{
	int dfd = openat(j->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;
	long rc = 0;

	if (!dir) {
		rc = -errno;
		if (dfd >= 0)
			close(dfd);
		return rc;
	}
	while (j->names <= j->max && (de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		size_t l = strlen(de->d_name) + 1;
		if (j->alen + l > j->acap) {
			size_t cap = j->acap ? j->acap * 2 : 65536;
			char *v = realloc(j->arena, cap);
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			j->arena = v;
			j->acap = cap;
		}
		memcpy(j->arena + j->alen, de->d_name, l);
		j->alen += l;
		j->names++;
	}
	closedir(dir);
	/* The arena is kept with the entry: a directory of a few names
	 * should not hold the 64 KiB it started with. */
	if (rc == 0 && j->arena && j->alen < j->acap) {
		char *v = realloc(j->arena, j->alen ? j->alen : 1);
		if (v) {
			j->arena = v;
			j->acap = j->alen ? j->alen : 1;
		}
	}
	return rc;
}

/* One thread's share of the names: arena[off, end), its watches from
 * wds[first] on (and the offsets of their names from woff[first]). */
struct lcw_part {
	struct lcw_job *j;
	size_t off, end, first, n;
	long rc;
};

/* A watch on each name of @p, on the name as it is now, which is what
 * the scan that follows will stat; by a name in the working directory
 * when @dirfd is AT_FDCWD. */
static long watch_each(struct lcw_part *p, int dirfd)
{
	const char *a = p->j->arena;

	for (size_t off = p->off; off < p->end; off += strlen(a + off) + 1) {
		int wd = fcw_add_entry_watch(p->j->ifd, dirfd, a + off);
		if (wd == -ENOENT)
			continue;       /* gone: the directory's watch says so */
		if (wd < 0)
			return wd;
		p->j->woff[p->first + p->n] = off;
		p->j->wds[p->first + p->n++] = wd;
	}
	return 0;
}

/* A thread of its own, whose working directory is the directory: a
 * name looked up there costs half of one through /proc/self/fd
 * (0.43 s against 0.84 for 100,000 new watches). Its fs_struct goes
 * with it. */
static void *watch_thread(void *arg)
{
	struct lcw_part *p = arg;

	if (unshare(CLONE_FS) == 0 && fchdir(p->j->dirfd) == 0)
		p->rc = watch_each(p, AT_FDCWD);
	else
		p->rc = watch_each(p, p->j->dirfd);
	return NULL;
}

/* Watches added by this many threads at most, each a share of the
 * names: inotify_add_watch spends most of its time looking the name up,
 * outside the inotify instance's lock (100,000 new watches: 0.26 s from
 * one thread, 0.14-0.18 s from two on two CPUs). */
#define LCW_THREADS 4
/* ... and only for this many names or more (a thread costs ~30 us). */
#define LCW_SPLIT 4096u

static long add_watches(struct lcw_job *j)
{
	struct lcw_part part[LCW_THREADS];
	pthread_t t[LCW_THREADS];
	bool own[LCW_THREADS] = { false };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t k = j->names < LCW_SPLIT || cpus < 2 ? 1
	         : cpus < LCW_THREADS ? (size_t)cpus : LCW_THREADS;
	long rc = 0;

	j->wds = malloc((j->names ? j->names : 1) * sizeof *j->wds);
	j->woff = malloc((j->names ? j->names : 1) * sizeof *j->woff);
	if (!j->wds || !j->woff)
		return -ENOMEM;
	/* Shares of about alen / k bytes, each from the start of a name,
	 * its watches where its first name is counted. */
	size_t off = 0, counted = 0;
	for (size_t i = 0; i < k; i++) {
		size_t end = i + 1 == k ? j->alen : j->alen * (i + 1) / k;
		part[i] = (struct lcw_part){ .j = j, .off = off, .first = counted };
		while (off < end) {
			off += strlen(j->arena + off) + 1;
			counted++;
		}
		part[i].end = off;
	}
	pthread_attr_t a;
	if (pthread_attr_init(&a) == 0) {
		pthread_attr_setstacksize(&a, 64 * 1024);
		for (size_t i = 0; i < k; i++)
			own[i] = pthread_create(&t[i], &a, watch_thread, &part[i]) == 0;
		pthread_attr_destroy(&a);
	}
	for (size_t i = 0; i < k; i++) {
		if (own[i])
			pthread_join(t[i], NULL);
		else
			part[i].rc = watch_each(&part[i], j->dirfd);
	}
	/* The watches side by side (a share skips the names gone). Every
	 * watch added is handed over, even after a failure: the worker
	 * links them all, or they would stay in the kernel. */
	j->n = 0;
	for (size_t i = 0; i < k; i++) {
		memmove(j->wds + j->n, j->wds + part[i].first, part[i].n * sizeof *j->wds);
		memmove(j->woff + j->n, j->woff + part[i].first, part[i].n * sizeof *j->woff);
		j->n += part[i].n;
		if (part[i].rc < 0 && rc == 0)
			rc = part[i].rc;
	}
	return rc;
}

long lcw_job_run(void *arg)
{
	struct lcw_job *j = arg;

	switch (j->step) {
	case LCW_DIR:
		j->dwd = fcw_add_listing_watch(j->ifd, j->dirfd);
		return j->dwd < 0 ? j->dwd : 0;
	case LCW_READ:
		return read_names(j);
	default:
		return add_watches(j);
	}
}

/* ---- on the worker: notes on directories ---- */

/* A directory as it was when noted: any name coming or going changes
 * its mtime and ctime. */
struct lcw_note {
	dev_t dev;
	uint64_t ino;
	struct statx_timestamp mtime, ctime;
	size_t names;               /* too large: read, up to the limit + 1 */
	bool used;
};

/* Too large to watch: not tried again while unchanged and the limit
 * as it was. Large and listed once: filled by the next listing if
 * unchanged. */
#define LCW_NBIG 16
#define LCW_NSEEN 64
static __thread struct lcw_note big[LCW_NBIG], seen[LCW_NSEEN];
static __thread unsigned big_next, seen_next;

static struct lcw_note *note_find(struct lcw_note *v, unsigned n, const struct statx *dir)
{
	dev_t dev = makedev(dir->stx_dev_major, dir->stx_dev_minor);

	for (unsigned i = 0; i < n; i++)
		if (v[i].used && v[i].ino == dir->stx_ino && v[i].dev == dev)
			return &v[i];
	return NULL;
}

static bool note_same(const struct lcw_note *n, const struct statx *dir)
{
	return n->mtime.tv_sec == dir->stx_mtime.tv_sec &&
	       n->mtime.tv_nsec == dir->stx_mtime.tv_nsec &&
	       n->ctime.tv_sec == dir->stx_ctime.tv_sec &&
	       n->ctime.tv_nsec == dir->stx_ctime.tv_nsec;
}

static void note_set(struct lcw_note *n, const struct statx *dir, size_t names)
{
	*n = (struct lcw_note){
		.dev = makedev(dir->stx_dev_major, dir->stx_dev_minor),
		.ino = dir->stx_ino, .mtime = dir->stx_mtime,
		.ctime = dir->stx_ctime, .names = names, .used = true,
	};
}

bool lcw_too_big(const struct statx *dir, size_t max)
{
	struct lcw_note *b = note_find(big, LCW_NBIG, dir);

	/* (a changed one stays noted, so that it is logged only once) */
	return b && note_same(b, dir) && b->names > max;
}

void lcw_note_big(const struct statx *dir, size_t names, size_t max, const char *what)
{
	struct lcw_note *b = note_find(big, LCW_NBIG, dir);

	if (!b) {
		b = &big[big_next++ % LCW_NBIG];
		fsd_log(LOG_NOTICE, "listing cache: %s not cached: more than "
		        "%zu entries (watches to spare: fcache_watches, "
		        "fs.inotify.max_user_watches; listing_cache_bytes)",
		        what, max);
	}
	note_set(b, dir, names);
}

bool lcw_listed_before(const struct statx *dir)
{
	struct lcw_note *n = note_find(seen, LCW_NSEEN, dir);

	if (n && note_same(n, dir))
		return true;
	note_set(n ? n : &seen[seen_next++ % LCW_NSEEN], dir, 0);
	return false;
}
