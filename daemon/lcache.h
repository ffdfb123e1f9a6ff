/*
 * The listing cache: per worker, the entries (names, types, sizes,
 * mtimes, modes) of recently listed directories, so that a listing of
 * one listed before, in any format, order or page, is rendered from
 * memory, with only the names changed since then stat'ed again. Kept correct by inotify (lcache.c says
 * how) and bounded by listing_cache_bytes per worker (least recently
 * used directories go first). Thread-local: everything runs on the
 * worker's thread but a fill's watches on its directory and names,
 * added on a pool thread (lcache.c).
 */
#ifndef FSD_LCACHE_H
#define FSD_LCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>
#include <sys/stat.h>

#include <fibril/lookup.h>

struct lc_dir;

/* A large directory: its own st_size this much or more (ext4 ~8,000
 * entries, tmpfs ~13,000). Its listing starts before the names are read
 * (listing.c), and the cache fills it only from its second listing
 * with no name come or gone between: its fill's watches cost more than
 * its scan (100,000 entries: 0.3 s before a 0.2 s scan), which a
 * directory listed once, or renamed into between listings, would pay
 * for nothing. */
#define LCACHE_LARGE_DIR_BYTES (256u * 1024)

/* A walk over a cached listing: its entry stays (unchanged) until
 * lcache_close(), and the walk may yield. */
struct lc_iter {
	struct lc_dir *d;
	const uint32_t *o;
	size_t i, end;
};
/* Starts a walk over the cached entries of the directory @dir (its
 * statx: the cache knows directories, not paths) in the order, page
 * (after, limit) and flags of @so. 1 when cached, else 0. Never parks. */
int lcache_open(struct lc_iter *it, const struct statx *dir, const struct lk_scan_opts *so);
/* Up to @max entries into @b; 0 at the end. @b zeroed by the caller
 * before the first call: only the fields the cache keeps are written
 * (name, type and mode, size, mtime). */
size_t lcache_next(struct lc_iter *it, struct lk_entry *b, size_t max);
/* The bytes of the names a whole walk of @it yields (with their NULs). */
size_t lcache_name_bytes(const struct lc_iter *it);
/* Ends a walk lcache_open() began (no-op after one). */
void lcache_close(struct lc_iter *it);

/* A rendered listing kept with a cached directory: the body of one
 * variant (format, order, coding, path) of the whole listing, sent by
 * every response asking for it until the directory's entry goes. */
struct lc_body {
	struct lc_body *next;
	char *variant;
	char *data;
	size_t len;
	char etag[32];
	unsigned refs;              /* the entry's, and one per response */
};
/* The body of @variant kept with the directory @it walks (a whole
 * listing), or NULL. Not a reference: take one to keep it. */
struct lc_body *lcache_body_find(const struct lc_iter *it, const char *variant);
/* Keeps @data (@len bytes, malloc'ed; taken over on success) with its
 * ETag as the body of @variant; the body (a reference for the caller)
 * or NULL (out of memory, too large, or the entry changed or dropped
 * since the walk began: @data is still the caller's). */
struct lc_body *lcache_body_keep(const struct lc_iter *it, const char *variant,
                                 char *data, size_t len, const char *etag);
void lcache_body_ref(struct lc_body *b);
/* Drops a reference (@b a struct lc_body: an MHD free callback). */
void lcache_body_unref(void *b);

enum { LC_NONE = 0, LC_FILL = 1, LC_BUSY = 2 };
/* On the request fibril, before the scan of the directory open as
 * @dirfd (@dir its statx) with @so opens. LC_FILL: *out is the fill,
 * whose directory and names lcache_fill_watch() must watch before the
 * scan opens (or lcache_fill_end() gives it up); the scan must be the
 * listing's own
 * (LK_SCAN_NO_SHARE: a running scan may have stat'ed before the
 * watches). LC_BUSY: another listing is filling it and nothing changed
 * since: lcache_wait(), then look in the cache again. LC_NONE: not to
 * be cached (a page, cache off, out of watches...). May yield. */
int lcache_fill_begin(int dirfd, const struct statx *dir, const struct lk_scan_opts *so,
                      struct lc_dir **out);
/* Watches the directory of the fill @d (open as @dirfd) and each of
 * its names, parking the fibril. 0, or -errno: the fill is then given up and @d freed; @what,
 * the path, is logged once for a directory with more entries than a
 * fill may watch, which is then not tried again while it is
 * unchanged. */
int lcache_fill_watch(struct lc_dir *d, int dirfd, const struct statx *dir, const char *what);
/* Parks until the fill lcache_fill_begin() reported ends (or
 * @deadline_ns, CLOCK_MONOTONIC). */
void lcache_wait(const struct statx *dir, const struct lk_scan_opts *so, uint64_t deadline_ns);
/* The entries the scan delivered, in any order. */
void lcache_fill_add(struct lc_dir *d, const struct lk_entry *e, size_t n);
/* The scan ended (@complete: all of it was delivered) or was given
 * up: the fill becomes an entry if nothing changed meanwhile. */
void lcache_fill_end(struct lc_dir *d, bool complete);

/* At the worker's teardown. */
void lcache_fini(void);

#endif
