/*
 * The listing cache's parts: a cached directory's records (lcache.c);
 * the fill off the worker (lcache_watch.c), a directory's names read on
 * a pool thread and each watched before the scan stats it, and the
 * directories found too large to watch; and the changes an entry's
 * events name, applied to its records (lcache_patch.c); its orders
 * other than by name (lcache_order.c).
 */
#ifndef FSD_LCACHE_INT_H
#define FSD_LCACHE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "daemon/fcache_int.h"

#include <fibril/fibril.h>

struct lc_body;

/* FNV-1a of a string: the table of directories, and of names. */
static inline size_t lc_hash(const char *k)
{
	size_t h = 1469598103934665603ull;
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ull;
	return h;
}

struct lc_rec {
	const char *name;
	uint32_t namelen, mode;
	uint64_t size;
	int64_t mtime;
	uint32_t mtime_nsec;
};

/* An entry's own watch, and the name it was watched by. */
struct lc_ent {
	struct fcw_dep dep;
	const char *name;
	struct lc_ent *xnext;       /* watched by a patch: its own allocation */
};

/* A name an event named, to stat again (and watch again: @renew). */
struct lc_pend {
	char *name;
	bool renew;
};

/* The orders kept: sort (4) x desc x dirs-first. */
#define LC_NORDERS 16

struct lc_dir {
	struct lc_dir *hnext, *prev, *next;   /* table; LRU (head: newest) */
	struct lc_dir *doomed_next;
	char *key;                  /* flags, device, inode */
	unsigned flags;             /* LK_SCAN_DOTFILES, LK_SCAN_NO_LINKS */
	size_t bytes;
	bool doomed, filling, bad;
	bool patching;              /* out of the table while a patch runs */
	bool changed;               /* bad: an event came during the fill */
	unsigned long epoch;        /* fcw_epoch() when the fill began */
	struct lc_dir *fnext;       /* fills and patches in progress */
	struct fibril_waitq waiters;/* listings waiting for either */
	size_t nrec, caprec;
	struct lc_rec *recs;        /* in name order once filled */
	uint32_t *order[LC_NORDERS];
	char *names;                /* arena */
	size_t names_len, names_cap, names_dead;
	struct lc_body *bodies;     /* rendered, newest first */
	unsigned nbodies;
	struct fcw_dep ddep;        /* the directory */
	size_t nents;
	struct lc_ent *ents;        /* its entries, as the fill watched them */
	char *wnames;               /* ... by these names */
	size_t wnames_cap;
	struct lc_ent *xents;       /* watched by patches since */
	size_t nxents;
	struct lc_ent **htab;       /* the entries' watches by name (patches) */
	size_t hcap, hused;
	struct lc_pend *pend;       /* noted since the last patch */
	size_t npend, cappend;
	unsigned pins;              /* walks in progress (lcache_open()) */
	bool orphan;                /* dropped while pinned: freed at the last */
	struct fibril_waitq pinq;   /* a patch waiting for the walks to end */
};

/* ---- lcache_order.c ---- */

/* The positions of @n records in name order (@recs) in the order of
 * @sort (LK_SORT_NAME, _SIZE, _MTIME) and @flags (LK_SCAN_DESC,
 * LK_SCAN_DIRS_FIRST), the order lookup_sort.c gives a scan; malloc'ed,
 * NULL when out of memory. */
uint32_t *lco_order(const struct lc_rec *recs, size_t n, unsigned sort, unsigned flags);

/* ---- lcache_patch.c, on the worker ---- */

/* From fire(), for a filled directory: notes the name the event on
 * @dep names (a name of the directory's own event, or the entry whose
 * watch @dep is), to be stat'ed again before the next use. False when
 * no patch can apply it (the directory's own attributes, too many
 * changes at once): the directory must go. */
bool lcp_note(struct lc_dir *d, struct fcw_dep *dep);
/* Applies what was noted: the names watched anew where they may lead
 * to another inode, then stat'ed, on a pool thread; the records updated,
 * added or removed. Events that came meanwhile are noted as usual, for
 * another round. 0, or -errno: the directory cannot stay cached (out of
 * memory, a symlink whose target would be shown, a failed stat...).
 * Its orders and bodies are then the caller's to drop. May yield. */
int lcp_apply(struct lc_dir *d, int dirfd);
/* What @d holds, for listing_cache_bytes. */
size_t lcp_bytes(const struct lc_dir *d);
/* Frees the patch state (the watches are the caller's). */
void lcp_free(struct lc_dir *d);

/* One fill's work for lcw_job_run(): nothing of the worker's own
 * (thread-local) state is touched there. */
struct lcw_job {
	int ifd, dirfd;             /* fcw_ifd(); the directory */
	size_t max;                 /* more names than this: none watched */
	enum { LCW_DIR, LCW_READ, LCW_NAMES } step;
	int dwd;                    /* LCW_DIR: the directory's watch */
	size_t names;               /* read */
	char *arena;                /* ... one after another, with their NULs */
	size_t alen, acap;
	size_t n;
	int *wds;                   /* the watches added, to link */
	size_t *woff;               /* ... the names they were added by */
	long rc;
};
/* For fibril_call(), one step: watches @arg's directory
 * (fcw_add_listing_watch(), into dwd, for the caller to link), reads its
 * names (up to max + 1), or watches each name read
 * (fcw_add_entry_watch()). 0 or -errno; the caller frees arena, wds and
 * woff. */
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
