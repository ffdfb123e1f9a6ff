#include "first.h"

/*
 * The listing cache (lcache.h): the entries of recently listed
 * directories, kept correct by inotify like the small-file cache and
 * sharing its watches (fcache_watch.c).
 *
 * Correctness: a directory is watched (names coming and going, its own
 * attributes, and its entries' writes and attribute changes as they are
 * reported through it) before its names are read for the fill, and each
 * of those names then gets a watch on its own inode before the scan
 * stats it: a file's size, mtime or mode changing through another name
 * (a hard link elsewhere, made before or after the fill) is reported
 * by that watch, which a watch on the directory alone would not see; a
 * subdirectory's watch reports the entries that change its mtime and
 * size. A name that appears after the names were read is a create event
 * on the directory. An event on a filled entry that names one of its
 * entries (the directory's, with the name; an entry's own watch) has
 * that name stat'ed again, and watched again first where it may lead
 * to another inode, before the next use (lcache_patch.c); any other
 * event on the directory drops the entry, a fill hit by any event is
 * not kept, a queue overflow or a change to the mount table drops
 * everything, and events are applied before every use. Not cached:
 * directories off the root's file system, or all of them when inotify
 * cannot see its changes (lk_fs_local), listings with a symlink whose
 * target would be shown (its target can change without any event here)
 * or an entry whose stat failed, and directories with more entries than
 * the watch budget (other directories are dropped to make room for one
 * within it).
 */

#include "daemon/lcache.h"
#include "daemon/lcache_int.h"
#include "daemon/daemon.h"
#include "daemon/fcache_int.h"
#include "daemon/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fibril/async.h>
#include <fibril/fibril.h>

/* Watches linked between two yields of the fill (other requests run). */
#define LC_YIELD 4096u

struct lc_state {
	struct lc_dir *head, *tail; /* LRU of filled entries */
	struct lc_dir **bucket;
	size_t nbuckets, n, bytes;
	struct lc_dir *doomed;
	unsigned long epoch;
	dev_t root_dev;             /* the only file system cached */
	bool off;
};

static __thread struct lc_state *lc;
static __thread struct lc_dir *fills;

/* The directory itself, not its path: a path that leads elsewhere
 * later (a parent renamed, a directory replaced) finds nothing. */
static char *make_key(const struct statx *d, unsigned flags)
{
	char *k = malloc(64);

	if (k)
		snprintf(k, 64, "%u:%x:%x:%llx", flags & (LK_SCAN_DOTFILES | LK_SCAN_NO_LINKS),
		         d->stx_dev_major, d->stx_dev_minor, (unsigned long long)d->stx_ino);
	return k;
}

static void unwatch_all(struct lc_dir *d)
{
	fcw_unwatch(&d->ddep);
	for (size_t i = 0; i < d->nents; i++)
		fcw_unwatch(&d->ents[i].dep);
	for (struct lc_ent *e = d->xents; e; e = e->xnext)
		fcw_unwatch(&e->dep);
}

/* What is made from the records: rendered bodies and other orders. */
static void derived_free(struct lc_dir *d)
{
	for (struct lc_body *b = d->bodies, *nx; b; b = nx) {
		nx = b->next;
		lcache_body_unref(b);
	}
	d->bodies = NULL;
	d->nbodies = 0;
	for (size_t i = 0; i < LC_NORDERS; i++) {
		free(d->order[i]);
		d->order[i] = NULL;
	}
}

static void dir_free(struct lc_dir *d)
{
	derived_free(d);
	unwatch_all(d);
	lcp_free(d);
	free(d->ents);
	free(d->wnames);
	free(d->recs);
	free(d->names);
	free(d->key);
	free(d);
}

static void unlink_dir(struct lc_dir *d)
{
	struct lc_dir **pp = &lc->bucket[lc_hash(d->key) & (lc->nbuckets - 1)];

	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == d) {
			*pp = d->hnext;
			break;
		}
	if (d->prev)
		d->prev->next = d->next;
	else
		lc->head = d->next;
	if (d->next)
		d->next->prev = d->prev;
	else
		lc->tail = d->prev;
	lc->n--;
	lc->bytes -= d->bytes;
}

/* Out of the table already: freed, or, while a walk reads it, no
 * longer watched and freed when the last walk ends. */
static void release(struct lc_dir *d)
{
	if (!d->pins) {
		dir_free(d);
		return;
	}
	unwatch_all(d);
	d->orphan = true;
	fsd_log(LOG_DEBUG, "listing cache: an entry dropped while %u renders read it", d->pins);
}

static void drop(struct lc_dir *d)
{
	unlink_dir(d);
	release(d);
}

static void fire(struct fcw_dep *dep)
{
	struct lc_dir *d = dep->owner;

	if (d->filling) {
		d->bad = d->changed = true; /* the fill's end throws it away */
		return;
	}
	/* A name changed: stat'ed again before the next use. */
	if (d->patching) {
		if (!lcp_note(d, dep))
			d->bad = true;
		return;
	}
	if (!d->doomed && !lcp_note(d, dep)) {
		d->doomed = true;
		d->doomed_next = lc->doomed;
		lc->doomed = d;
	}
}

static void drop_all(void)
{
	while (lc->head)
		drop(lc->head);
}

/* Applies the events reported since the last sync. */
static void sync_events(void)
{
	int all = fcw_sync(false);
	struct lc_dir *d;

	while ((d = lc->doomed)) {
		lc->doomed = d->doomed_next;
		drop(d);
	}
	if (all || lc->epoch != fcw_epoch())
		drop_all();
	lc->epoch = fcw_epoch();
}

static bool enabled(void)
{
	if (lc)
		return !lc->off;
	lc = calloc(1, sizeof *lc);
	if (!lc)
		return false;
	lc->off = true;
	struct stat st;
	if (!fsd->conf.listing_cache_bytes || !fsd->lkroot ||
	    lk_fs_local(fsd->rootfd) != 1 || fstat(fsd->rootfd, &st) < 0)
		return false;
	lc->root_dev = st.st_dev;
	lc->nbuckets = 256;
	lc->bucket = calloc(lc->nbuckets, sizeof *lc->bucket);
	if (!lc->bucket)
		return false;
	/* The small-file cache set the budget if it runs first. */
	if (fcw_init(fcw_default_budget(), NULL) < 0)
		return false;
	lc->epoch = fcw_epoch();
	lc->off = false;
	return true;
}

void lcache_fini(void)
{
	if (!lc)
		return;
	if (!lc->off) {
		drop_all();
		fcw_fini();
	}
	free(lc->bucket);
	free(lc);
	lc = NULL;
}

static struct lc_dir *find(const char *key)
{
	for (struct lc_dir *d = lc->bucket[lc_hash(key) & (lc->nbuckets - 1)]; d; d = d->hnext)
		if (!strcmp(d->key, key))
			return d;
	return NULL;
}

/* ---- the orders ---- */

/* Name order, the records' own. */
static int rec_qcmp(const void *a, const void *b)
{
	return strcmp(((const struct lc_rec *)a)->name, ((const struct lc_rec *)b)->name);
}

/* The positions of @d's records in the order of @so; NULL for name
 * order ascending (the records' own) or out of memory (*fail). */
static const uint32_t *order_of(struct lc_dir *d, const struct lk_scan_opts *so, bool *fail)
{
	unsigned fl = so->flags & (LK_SCAN_DESC | LK_SCAN_DIRS_FIRST);
	unsigned sort = so->sort == LK_SORT_NONE ? LK_SORT_NAME : (unsigned)so->sort;
	size_t i = (size_t)sort * 4 + (fl & LK_SCAN_DESC ? 2 : 0) + (fl & LK_SCAN_DIRS_FIRST ? 1 : 0);

	*fail = false;
	if (sort == LK_SORT_NAME && !fl)
		return NULL;
	if (!d->order[i]) {
		uint32_t *o = lco_order(d->recs, d->nrec, sort, fl);
		if (!o) {
			*fail = true;
			return NULL;
		}
		d->order[i] = o;
		d->bytes += d->nrec * sizeof *o;
		lc->bytes += d->nrec * sizeof *o;
	}
	return d->order[i];
}

static void evict(void)
{
	while (lc->bytes > fsd->conf.listing_cache_bytes && lc->tail)
		drop(lc->tail);
}

int lcache_open(struct lc_iter *it, const struct statx *dir, const struct lk_scan_opts *so)
{
	if (!enabled() || (so->after && (so->sort != LK_SORT_NAME ||
	                                 (so->flags & LK_SCAN_DIRS_FIRST))))
		return 0;
	sync_events();
	char *key = make_key(dir, so->flags);
	struct lc_dir *d = key ? find(key) : NULL;
	free(key);
	/* (changed: patched by lcache_fill_begin() first) */
	if (!d || d->npend)
		return 0;
	bool fail;
	const uint32_t *o = order_of(d, so, &fail);
	if (fail)
		return 0;
	/* the newest use first */
	if (d != lc->head) {
		d->prev->next = d->next;
		if (d->next)
			d->next->prev = d->prev;
		else
			lc->tail = d->prev;
		d->prev = NULL;
		d->next = lc->head;
		lc->head->prev = d;
		lc->head = d;
	}
	size_t start = 0, end = d->nrec;
	if (so->after) {
		/* strictly after the cursor in name order (either way) */
		bool desc = so->flags & LK_SCAN_DESC;
		size_t lo = 0, hi = d->nrec;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int c = strcmp(d->recs[o ? o[mid] : mid].name, so->after);
			if (desc)
				c = -c;
			if (c <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		start = lo;
	}
	if (so->limit && end - start > so->limit)
		end = start + so->limit;
	*it = (struct lc_iter){ .d = d, .o = o, .i = start, .end = end };
	d->pins++;
	/* (a new order counted: the bound holds after the listing) */
	return 1;
}

void lcache_close(struct lc_iter *it)
{
	struct lc_dir *d = it->d;

	if (!d)
		return;
	it->d = NULL;
	if (--d->pins)
		return;
	if (d->orphan)
		dir_free(d);
	else
		fibril_waitq_wake_all(&d->pinq);
}

size_t lcache_next(struct lc_iter *it, struct lk_entry *b, size_t max)
{
	size_t n = 0;

	for (; n < max && it->i < it->end; n++, it->i++) {
		const struct lc_rec *c = &it->d->recs[it->o ? it->o[it->i] : it->i];
		/* An order other than the records' own reads them at random:
		 * ask for the ones a few steps on, then their names. */
		if (it->o && it->i + 16 < it->end) {
			__builtin_prefetch(&it->d->recs[it->o[it->i + 16]]);
			__builtin_prefetch(it->d->recs[it->o[it->i + 8]].name);
		}
		b[n].name = c->name;
		b[n].namelen = c->namelen;
		b[n].stx.stx_mode = (uint16_t)c->mode;
		b[n].stx.stx_size = c->size;
		b[n].stx.stx_mtime.tv_sec = c->mtime;
		b[n].stx.stx_mtime.tv_nsec = c->mtime_nsec;
	}
	if (!n)
		evict();
	return n;
}

size_t lcache_name_bytes(const struct lc_iter *it)
{
	return it->d->names_len - it->d->names_dead;
}

/* ---- rendered bodies ---- */

/* Variants kept per directory (formats x codings, mostly). */
#define LC_MAX_BODIES 6u

void lcache_body_ref(struct lc_body *b)
{
	b->refs++;
}

void lcache_body_unref(void *p)
{
	struct lc_body *b = p;

	if (--b->refs)
		return;
	free(b->data);
	free(b->variant);
	free(b);
}

struct lc_body *lcache_body_find(const struct lc_iter *it, const char *variant)
{
	for (struct lc_body *b = it->d->bodies; b; b = b->next)
		if (!strcmp(b->variant, variant))
			return b;
	return NULL;
}

static size_t body_bytes(const struct lc_body *b)
{
	return sizeof *b + strlen(b->variant) + b->len;
}

struct lc_body *lcache_body_keep(const struct lc_iter *it, const char *variant,
                                 char *data, size_t len, const char *etag)
{
	struct lc_dir *d = it->d;
	struct lc_body *b;

	/* (room for the entries and a few variants besides; none for an
	 * entry changed, or out of the table, since the walk began) */
	if (d->orphan || d->patching || d->npend ||
	    len > fsd->conf.listing_cache_bytes / 4 || lcache_body_find(it, variant) ||
	    !(b = calloc(1, sizeof *b)))
		return NULL;
	if (!(b->variant = strdup(variant))) {
		free(b);
		return NULL;
	}
	b->data = data;
	b->len = len;
	snprintf(b->etag, sizeof b->etag, "%s", etag);
	b->refs = 2;
	if (d->nbodies == LC_MAX_BODIES) {
		struct lc_body **pp = &d->bodies;
		while ((*pp)->next)
			pp = &(*pp)->next;
		d->bytes -= body_bytes(*pp);
		lc->bytes -= body_bytes(*pp);
		lcache_body_unref(*pp);
		*pp = NULL;
		d->nbodies--;
	}
	b->next = d->bodies;
	d->bodies = b;
	d->nbodies++;
	d->bytes += body_bytes(b);
	lc->bytes += body_bytes(b);
	evict();                    /* (the walk keeps its entry, if dropped) */
	return b;
}

/* ---- filling ---- */

/* The most names a fill may watch: the watch budget, and what
 * listing_cache_bytes holds (an entry costs its record, name and watch:
 * ~160 bytes). */
static size_t fill_max(void)
{
	size_t budget = fcw_budget();
	size_t bytes_max = fsd->conf.listing_cache_bytes / 160;

	return budget < bytes_max ? budget : bytes_max;
}

/* Watches every name of the directory open as @fd (itself watched
 * already), before the scan stats them. A 100,000-entry directory
 * takes 0.1-0.3 s of inotify_add_watch: that runs on a pool thread,
 * and the worker only links the descriptors it got, a few thousand
 * between two yields. An event that came for one of them before it was
 * linked makes the fill bad (fcw_foreign_events()). 0, or -errno (the
 * fill is given up). */
static int watch_names(struct lc_dir *d, int fd, size_t *names)
{
	size_t budget = fcw_budget();
	struct lcw_job j = { .ifd = fcw_ifd(), .dirfd = fd, .max = fill_max(), .step = LCW_DIR };

	/* The names first: a directory that cannot have its watches then
	 * costs a read of up to the budget's worth of names, not a watch
	 * on each and their removal (0.6 s for 100,000). Room is made by
	 * dropping the least recently used directories, as for memory.
	 * No watch is removed from here on: those of the directory's last
	 * entry, dropped by the change that brought this fill, are taken
	 * up again rather than removed and added anew, and removing 1,000
	 * per request while the pool read the names held up the worker's
	 * other clients (a small file's p99 3.9 ms during fills, 11 with
	 * it). */
	fcw_foreign_begin();
	unsigned long ev0 = fcw_foreign_events();
	/* The directory's watch is linked before its names are read: a
	 * name created from then on is an event on it. (Adding it walks
	 * the directory's cached entries, 9 ms for 100,000: off the worker,
	 * like the rest.) */
	int rc = (int)fibril_call(lcw_job_run, &j);
	if (rc == 0 && fcw_link(j.dwd, &d->ddep) < 0)
		rc = -ENOMEM;
	if (rc == 0) {
		j.step = LCW_READ;
		rc = (int)fibril_call(lcw_job_run, &j);
	}
	*names = j.names;
	if (rc == 0 && j.names > j.max)
		rc = -ENOSPC;
	while (rc == 0 && fcw_count() + j.names > budget && lc->tail)
		drop(lc->tail);
	if (rc == 0 && fcw_count() + j.names > budget)
		rc = -ENOSPC;
	if (rc < 0) {
		fcw_foreign_end();
		free(j.arena);
		return rc;
	}
	j.step = LCW_NAMES;
	rc = (int)fibril_call(lcw_job_run, &j);
	d->ents = calloc(j.n ? j.n : 1, sizeof *d->ents);
	for (size_t i = 0; i < j.n; i++) {
		struct lc_ent tmp = { 0 }, *e = d->ents ? &d->ents[d->nents] : &tmp;
		e->dep = (struct fcw_dep){ .owner = d, .fire = fire };
		e->name = j.arena + (j.woff ? j.woff[i] : 0);
		/* Linked even when the fill fails: unlinked, the watch would
		 * stay in the kernel with nobody to remove it. */
		if (fcw_link(j.wds[i], &e->dep) < 0)
			rc = -ENOMEM;
		else if (e == &tmp)
			fcw_unwatch(&tmp.dep);
		else
			d->nents++;
		if ((i + 1) % LC_YIELD == 0)
			fibril_yield();
	}
	if (!d->ents)
		rc = -ENOMEM;
	if (fcw_foreign_events() != ev0)
		d->bad = true;
	fcw_foreign_end();
	free(j.wds);
	free(j.woff);
	d->wnames = j.arena;        /* the entries' names */
	d->wnames_cap = j.acap;
	if (rc == 0 && fcw_count() > budget)
		rc = -ENOSPC;
	return rc;
}

/* A fill or patch of @key in progress that nothing has changed under
 * yet. */
static struct lc_dir *clean_fill(const char *key)
{
	for (struct lc_dir *d = fills; d; d = d->fnext)
		if (!d->bad && d->epoch == fcw_epoch() && !strcmp(d->key, key))
			return d;
	return NULL;
}

static void fill_release(struct lc_dir *d)
{
	for (struct lc_dir **pp = &fills; *pp; pp = &(*pp)->fnext)
		if (*pp == d) {
			*pp = d->fnext;
			break;
		}
	fibril_waitq_wake_all(&d->waiters);
}

/* Into the table, the newest; room made for it. */
static void link_dir(struct lc_dir *d)
{
	size_t h = lc_hash(d->key) & (lc->nbuckets - 1);

	d->hnext = lc->bucket[h];
	lc->bucket[h] = d;
	d->prev = NULL;
	d->next = lc->head;
	if (lc->head)
		lc->head->prev = d;
	lc->head = d;
	if (!lc->tail)
		lc->tail = d;
	lc->n++;
	lc->bytes += d->bytes;
	evict();
}

/* Patch rounds before a directory that keeps changing is let go. */
#define LC_PATCH_ROUNDS 4
/* The longest a patch waits for the walks of the records it replaces. */
#define LC_PIN_WAIT_NS 2000000000ull

/* Applies the changes noted in the cached @d (open as @dirfd), out of
 * the table meanwhile: a listing that comes then waits for it as for a
 * fill. Afterwards @d is back in the table, or gone. */
static void patch(struct lc_dir *d, int dirfd)
{
	size_t noted = d->npend;
	int rc = 0, round;

	unlink_dir(d);
	d->patching = true;
	d->epoch = fcw_epoch();
	d->fnext = fills;
	fills = d;
	uint64_t deadline = fibril_now_ns() + LC_PIN_WAIT_NS;
	if (d->pins)
		fsd_log(LOG_DEBUG, "listing cache: a patch waits for %u walks", d->pins);
	while (d->pins && rc == 0)
		if (fibril_waitq_wait(&d->pinq, deadline) < 0 && fibril_now_ns() >= deadline)
			rc = -ETIMEDOUT;
	for (round = 0; rc == 0 && d->npend && !d->bad; round++) {
		rc = round < LC_PATCH_ROUNDS ? lcp_apply(d, dirfd) : -EAGAIN;
		/* what came meanwhile: noted for another round */
		if (rc == 0)
			sync_events();
	}
	fill_release(d);
	d->patching = false;
	if (rc == 0 && (d->bad || d->epoch != fcw_epoch()))
		rc = -ESTALE;
	if (rc < 0) {
		fsd_log(LOG_DEBUG, "listing cache: %zu events not applied (%s)", noted,
		        strerror(-rc));
		release(d);
		return;
	}
	derived_free(d);
	d->bytes = lcp_bytes(d);
	fsd_log(LOG_DEBUG, "listing cache: %zu events applied in %d rounds", noted, round);
	link_dir(d);
}

int lcache_fill_begin(int dirfd, const struct statx *dir, const struct lk_scan_opts *so,
                      struct lc_dir **out)
{
	*out = NULL;
	if (!enabled())
		return LC_NONE;
	char *key = make_key(dir, so->flags);
	if (!key)
		return LC_NONE;
	sync_events();
	struct lc_dir *d = find(key);
	/* Names changed since it was cached: patched, then looked up again
	 * (sort=none never comes from the cache). */
	if (d && d->npend && so->sort != LK_SORT_NONE) {
		free(key);
		patch(d, dirfd);
		return LC_BUSY;
	}
	/* Only on the root's file system, known to be local (inotify sees
	 * only the changes this kernel makes): asking another one (a FUSE
	 * or NFS mount beneath the root) would block the worker. */
	if (d || clean_fill(key) || so->after || so->limit ||
	    makedev(dir->stx_dev_major, dir->stx_dev_minor) != lc->root_dev ||
	    lcw_too_big(dir, fill_max()) ||
	    /* (last: it notes this listing) */
	    (dir->stx_size >= LCACHE_LARGE_DIR_BYTES && !lcw_listed_before(dir))) {
		int r = !d && clean_fill(key) ? LC_BUSY : LC_NONE;
		free(key);
		return r;
	}
	d = calloc(1, sizeof *d);
	if (!d) {
		free(key);
		return LC_NONE;
	}
	d->key = key;
	d->flags = so->flags & (LK_SCAN_DOTFILES | LK_SCAN_NO_LINKS);
	d->filling = true;
	d->epoch = fcw_epoch();
	d->fnext = fills;
	fills = d;
	d->ddep = (struct fcw_dep){ .owner = d, .fire = fire };
	*out = d;
	return LC_FILL;
}

int lcache_fill_watch(struct lc_dir *d, int dirfd, const struct statx *dir, const char *what)
{
	size_t names = 0;
	int rc = watch_names(d, dirfd, &names);

	if (rc == -ENOSPC && names > fill_max())
		lcw_note_big(dir, names, fill_max(), what);
	if (rc < 0) {
		fsd_log(LOG_DEBUG, "listing cache: no fill (%s)", strerror(-rc));
		fill_release(d);
		dir_free(d);
	}
	return rc;
}

void lcache_wait(const struct statx *dir, const struct lk_scan_opts *so, uint64_t deadline_ns)
{
	char *key = make_key(dir, so->flags);
	struct lc_dir *d = key ? clean_fill(key) : NULL;

	free(key);
	if (d)
		fibril_waitq_wait(&d->waiters, deadline_ns);
}

void lcache_fill_add(struct lc_dir *d, const struct lk_entry *e, size_t n)
{
	if (!d || d->bad)
		return;
	for (size_t i = 0; i < n; i++) {
		/* A shown link target can change without an event here; so
		 * can a mount point, whose attributes are the mounted file
		 * system's (a FUSE or network one tells inotify nothing). */
		if (e[i].err || e[i].link || (S_ISLNK(e[i].stx.stx_mode) && e[i].target_mode) ||
		    (e[i].stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
			d->bad = true;
			return;
		}
		if (d->nrec == d->caprec) {
			size_t cap = d->caprec ? d->caprec * 2 : 64;
			struct lc_rec *v = realloc(d->recs, cap * sizeof *v);
			if (!v) {
				d->bad = true;
				return;
			}
			d->recs = v;
			d->caprec = cap;
		}
		if (d->names_len + e[i].namelen + 1 > d->names_cap) {
			size_t cap = d->names_cap ? d->names_cap * 2 : 4096;
			while (cap < d->names_len + e[i].namelen + 1)
				cap *= 2;
			char *v = realloc(d->names, cap);
			if (!v) {
				d->bad = true;
				return;
			}
			d->names = v;
			d->names_cap = cap;
		}
		memcpy(d->names + d->names_len, e[i].name, e[i].namelen + 1);
		/* (offsets until the end: the arena moves while it grows) */
		d->recs[d->nrec++] = (struct lc_rec){
			.name = (const char *)(uintptr_t)d->names_len,
			.namelen = (uint32_t)e[i].namelen,
			.mode = e[i].stx.stx_mode,
			.size = e[i].stx.stx_size,
			.mtime = e[i].stx.stx_mtime.tv_sec,
			.mtime_nsec = e[i].stx.stx_mtime.tv_nsec,
		};
		d->names_len += e[i].namelen + 1;
	}
}

void lcache_fill_end(struct lc_dir *d, bool complete)
{
	if (!d)
		return;
	fill_release(d);
	/* The events up to now: one that hit the fill marks it bad. */
	if (complete && !d->bad)
		sync_events();
	/* (events lost to an overflow, or a mount: it may be stale) */
	if (!complete || d->bad || d->epoch != fcw_epoch() || find(d->key)) {
		fsd_log(LOG_DEBUG, "listing cache: a fill of %zu entries not kept (%s)", d->nrec,
		        !complete ? "not listed to the end"
		        : d->changed ? "changed meanwhile"
		        : d->bad ? "an entry not to cache"
		        : "cached already, or all dropped meanwhile");
		dir_free(d);
		return;
	}
	for (size_t i = 0; i < d->nrec; i++)
		d->recs[i].name = d->names + (uintptr_t)d->recs[i].name;
	/* Records in name order, whatever order the scan had (an empty
	 * directory has none, and no array). */
	if (d->nrec)
		qsort(d->recs, d->nrec, sizeof *d->recs, rec_qcmp);
	d->filling = false;
	d->bytes = lcp_bytes(d);
	if (d->bytes > fsd->conf.listing_cache_bytes) {
		fsd_log(LOG_DEBUG, "listing cache: a fill of %zu entries not kept (%zu bytes)",
		        d->nrec, d->bytes);
		dir_free(d);
		return;
	}
	fsd_log(LOG_DEBUG, "listing cache: a fill of %zu entries kept", d->nrec);
	link_dir(d);
}
