#include "first.h"

/*
 * The listing cache's fill off the worker (lcache_int.h): a
 * directory's names read by a pool thread, then a watch on each from a
 * thread whose working directory is the directory; and, on the worker,
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
	return rc;
}

/* A watch on each name read, on the name as it is now, which is what
 * the scan that follows will stat; by a name in the working directory
 * when @dirfd is AT_FDCWD. */
static long watch_each(struct lcw_job *j, int dirfd)
{
	for (size_t off = 0; off < j->alen; off += strlen(j->arena + off) + 1) {
		int wd = fcw_add_entry_watch(j->ifd, dirfd, j->arena + off);
		if (wd == -ENOENT)
			continue;       /* gone: the directory's watch says so */
		if (wd < 0)
			return wd;
		j->wds[j->n++] = wd;
	}
	return 0;
}

/* A thread of its own, whose working directory is the directory: a
 * name looked up there costs half of one through /proc/self/fd
 * (0.43 s against 0.84 for 100,000 new watches). Its fs_struct goes
 * with it. */
static void *watch_thread(void *arg)
{
	struct lcw_job *j = arg;

	if (unshare(CLONE_FS) == 0 && fchdir(j->dirfd) == 0)
		j->rc = watch_each(j, AT_FDCWD);
	else
		j->rc = watch_each(j, j->dirfd);
	return NULL;
}

static long add_watches(struct lcw_job *j)
{
	pthread_attr_t a;
	pthread_t t;
	bool own = false;

	j->wds = malloc((j->names ? j->names : 1) * sizeof *j->wds);
	if (!j->wds)
		return -ENOMEM;
	if (pthread_attr_init(&a) == 0) {
		pthread_attr_setstacksize(&a, 64 * 1024);
		own = pthread_create(&t, &a, watch_thread, j) == 0;
		pthread_attr_destroy(&a);
	}
	if (!own)
		return watch_each(j, j->dirfd);
	pthread_join(t, NULL);
	return j->rc;
}

long lcw_job_run(void *arg)
{
	struct lcw_job *j = arg;

	return j->read ? read_names(j) : add_watches(j);
}

/* ---- on the worker: directories too large to watch ---- */

/* A directory whose fill found more names than a fill may watch: not
 * tried again while its mtime and ctime (any name coming or going
 * changes them) and the limit stay as they were. */
struct lcw_big {
	dev_t dev;
	uint64_t ino;
	struct statx_timestamp mtime, ctime;
	size_t names;               /* read, up to the limit + 1 */
};
#define LCW_NBIG 16

static __thread struct lcw_big big[LCW_NBIG];
static __thread unsigned big_next;

static bool ts_eq(struct statx_timestamp a, struct statx_timestamp b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static struct lcw_big *big_find(const struct statx *dir)
{
	dev_t dev = makedev(dir->stx_dev_major, dir->stx_dev_minor);

	for (unsigned i = 0; i < LCW_NBIG; i++)
		if (big[i].names && big[i].dev == dev && big[i].ino == dir->stx_ino)
			return &big[i];
	return NULL;
}

bool lcw_too_big(const struct statx *dir, size_t max)
{
	struct lcw_big *b = big_find(dir);

	/* (a changed one stays noted, so that it is logged only once) */
	return b && ts_eq(b->mtime, dir->stx_mtime) && ts_eq(b->ctime, dir->stx_ctime) &&
	       b->names > max;
}

void lcw_note_big(const struct statx *dir, size_t names, size_t max, const char *what)
{
	struct lcw_big *b = big_find(dir);

	if (!b) {
		b = &big[big_next++ % LCW_NBIG];
		fsd_log(LOG_NOTICE, "listing cache: %s not cached: more than "
		        "%zu entries (watches to spare: fcache_watches, "
		        "fs.inotify.max_user_watches; listing_cache_bytes)",
		        what, max);
	}
	*b = (struct lcw_big){
		.dev = makedev(dir->stx_dev_major, dir->stx_dev_minor),
		.ino = dir->stx_ino, .mtime = dir->stx_mtime,
		.ctime = dir->stx_ctime, .names = names,
	};
}

/* ---- on the worker: large directories listed once ---- */

/* A large directory listed while its mtime and ctime were these. */
struct lcw_seen {
	dev_t dev;
	uint64_t ino;
	struct statx_timestamp mtime, ctime;
};
#define LCW_NSEEN 64

static __thread struct lcw_seen seen[LCW_NSEEN];
static __thread unsigned seen_next;

bool lcw_listed_before(const struct statx *dir)
{
	dev_t dev = makedev(dir->stx_dev_major, dir->stx_dev_minor);
	struct lcw_seen *n = NULL;

	for (unsigned i = 0; i < LCW_NSEEN && !n; i++)
		if (seen[i].ino == dir->stx_ino && seen[i].dev == dev)
			n = &seen[i];
	if (n && ts_eq(n->mtime, dir->stx_mtime) && ts_eq(n->ctime, dir->stx_ctime))
		return true;
	if (!n)
		n = &seen[seen_next++ % LCW_NSEEN];
	*n = (struct lcw_seen){ .dev = dev, .ino = dir->stx_ino,
	                        .mtime = dir->stx_mtime, .ctime = dir->stx_ctime };
	return false;
}
