/*
 * The listing cache's fill, the part off the worker (lcache_watch.c):
 * a directory's names read on a pool thread and each watched before
 * the scan stats it; and the directories found too large to watch.
 */
#ifndef FSD_LCACHE_INT_H
#define FSD_LCACHE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* One fill's work for lcw_job_run(): nothing of the worker's own
 * (thread-local) state is touched there. */
struct lcw_job {
	int ifd, dirfd;             /* fcw_ifd(); the directory */
	size_t max;                 /* more names than this: none watched */
	bool read;                  /* read the names, else watch them */
	size_t names;               /* read */
	char *arena;                /* ... one after another, with their NULs */
	size_t alen, acap;
	size_t n;
	int *wds;                   /* the watches added, to link */
	long rc;
};
/* For fibril_call(): reads the names of @arg's directory (up to max +
 * 1) or watches each name read (fcw_add_entry_watch()). 0 or -errno;
 * the caller frees arena and wds. */
long lcw_job_run(void *arg);

/* True when a fill of @dir would find more than @max names, as the
 * last one did, and the directory has not changed since. Worker. */
bool lcw_too_big(const struct statx *dir, size_t max);
/* Notes that a fill of @dir found @names, more than @max; logged once
 * per directory, with @what (its path). Worker. */
void lcw_note_big(const struct statx *dir, size_t names, size_t max, const char *what);

/* True when the large directory @dir was listed before and no name in
 * it has come or gone since (its mtime and ctime are the same); else
 * notes this listing and returns false. Worker. */
bool lcw_listed_before(const struct statx *dir);

#endif
