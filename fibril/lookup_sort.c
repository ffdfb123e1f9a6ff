/* Ordering of a sorted scan: an index array over the compact records. */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fibril/lookup_int.h"

static bool is_dir(const struct lk__rec *r)
{
	if (r->state == REC_DONE && !r->err)
		return S_ISDIR(r->mode);
	return r->dtype == DT_DIR;
}

static int cmp(const void *pa, const void *pb, void *arg)
{
	const struct lk__flight *f = arg;
	const struct lk__rec *a = &f->recs[*(const uint32_t *)pa];
	const struct lk__rec *b = &f->recs[*(const uint32_t *)pb];
	/* The grouping is decided outside the reversal below: LK_SCAN_DESC
	 * reverses the key only (ls -r --group-directories-first). */
	if (f->flags & LK_SCAN_DIRS_FIRST) {
		bool da = is_dir(a), db = is_dir(b);
		if (da != db)
			return da ? -1 : 1;
	}
	int c = 0;
	if (f->keys) {
		/* Name order from the 8 bytes after the common prefix, without
		 * touching the names; equal keys (a longer shared prefix) fall
		 * through to strcmp. */
		uint64_t ka = f->keys[*(const uint32_t *)pa];
		uint64_t kb = f->keys[*(const uint32_t *)pb];
		if (ka != kb)
			c = ka < kb ? -1 : 1;
	} else if (f->sort == LK_SORT_SIZE) {
		/* Like ls -S and ls -t: largest/newest first, ties by name. */
		c = a->size < b->size ? 1 : a->size > b->size ? -1 : 0;
	} else if (f->sort == LK_SORT_MTIME) {
		c = a->mtime < b->mtime ? 1 : a->mtime > b->mtime ? -1
			: a->mtime_nsec < b->mtime_nsec ? 1
			: a->mtime_nsec > b->mtime_nsec ? -1 : 0;
	}
	if (!c)
		c = strcmp(a->name, b->name);
	return (f->flags & LK_SCAN_DESC) ? -c : c;
}

/* Name sorts: keys[i] holds the 8 bytes of record i's name after the
 * prefix all names share, big-endian (so integer order is byte order)
 * and zero-padded (the NUL sorts first, as in strcmp). Comparisons then
 * read one array instead of a record and a name each: the sort of a
 * 100,000-name directory was a quarter of the worker's time in a warm
 * listing over HTTP. 8 bytes per entry while the scan lives. Without
 * memory for it, names are compared as before. */
static void make_keys(struct lk__flight *f)
{
	if (f->sort != LK_SORT_NAME || f->nrec == 0)
		return;
	const char *first = f->recs[0].name;
	size_t lcp = f->recs[0].namelen;
	for (size_t i = 1; i < f->nrec && lcp; i++) {
		const char *n = f->recs[i].name;
		size_t k = 0;
		while (k < lcp && n[k] == first[k])
			k++;
		lcp = k;
	}
	f->keys = malloc(f->nrec * sizeof(*f->keys));
	if (!f->keys)
		return;
	for (size_t i = 0; i < f->nrec; i++) {
		const struct lk__rec *r = &f->recs[i];
		uint64_t k = 0;
		for (size_t j = 0; j < 8; j++) {
			size_t at = lcp + j;
			unsigned char ch = at < r->namelen ? (unsigned char)r->name[at] : 0;
			k = k << 8 | ch;
		}
		f->keys[i] = k;
	}
}

/* Collects the order; sorting happens on demand (lk__flight_sorted). */
void lk__flight_sort(struct lk__flight *f)
{
	if (f->nrec > UINT32_MAX) {
		f->err = -EOVERFLOW;
		return;
	}
	f->order = malloc((f->nrec ? f->nrec : 1) * sizeof(*f->order));
	if (!f->order) {
		f->err = -ENOMEM;
		return;
	}
	size_t n = 0;
	for (size_t i = 0; i < f->nrec; i++)
		/* Entries already known to have vanished are dropped here. */
		if (!(f->recs[i].state == REC_DONE && f->recs[i].err == -ENOENT))
			f->order[n++] = (uint32_t)i;
	f->norder = n;
	f->nsorted = 0;
	make_keys(f);
	f->nbounds = 0;
}

/* Segments this small are sorted whole. */
#define SMALL_SEG 32
/* Partition depth beyond which a segment is sorted whole (bad pivots). */
#define MAX_BOUNDS 96

static uint32_t pick(struct lk__flight *f, size_t lo, size_t hi)
{
	/* Median of three pseudo-random positions: directory order may be
	 * sorted or reversed (tmpfs), which a fixed choice would hit. */
	uint64_t x = (uint64_t)lo * 0x9e3779b97f4a7c15u ^ hi ^ (uintptr_t)f;
	size_t n = hi - lo, i[3];
	for (int k = 0; k < 3; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		i[k] = lo + (size_t)(x % n);
	}
	uint32_t *o = f->order;
	uint32_t a = o[i[0]], b = o[i[1]], c = o[i[2]];
	if (cmp(&a, &b, f) > 0) { uint32_t t = a; a = b; b = t; }
	if (cmp(&b, &c, f) > 0) { uint32_t t = b; b = c; c = t; }
	if (cmp(&a, &b, f) > 0) { uint32_t t = a; a = b; b = t; }
	return b == o[i[1]] ? (uint32_t)i[1] : b == o[i[0]] ? (uint32_t)i[0] : (uint32_t)i[2];
}

/* Puts order[lo..hi) around a pivot; returns the pivot's final place. */
static size_t partition(struct lk__flight *f, size_t lo, size_t hi)
{
	uint32_t *o = f->order, t;
	size_t p = pick(f, lo, hi);
	t = o[p]; o[p] = o[hi - 1]; o[hi - 1] = t;
	uint32_t pv = o[hi - 1];
	size_t i = lo;
	for (size_t j = lo; j < hi - 1; j++)
		if (cmp(&o[j], &pv, f) < 0) {
			t = o[i]; o[i] = o[j]; o[j] = t;
			i++;
		}
	o[hi - 1] = o[i];
	o[i] = pv;
	return i;
}

/*
 * Makes order[0..k) final (at least; k is clamped to norder) and returns
 * how many positions are. Incremental quicksort (Paredes and Navarro,
 * 2006): only the segment holding the next position is partitioned, and
 * the pivots' final places stay on a stack for later. Getting the first
 * window of n names costs about 2n comparisons instead of n log n
 * (100,000 names: the first entries 30 ms sooner); the whole order costs
 * what a quicksort does, spread over the reader's progress, one segment
 * at a time.
 */
size_t lk__flight_sorted(struct lk__flight *f, size_t k)
{
	if (k > f->norder)
		k = f->norder;
	while (f->nsorted < k) {
		size_t lo = f->nsorted;
		size_t hi = f->nbounds ? f->bounds[f->nbounds - 1] : f->norder;
		if (lo == hi) {
			/* A pivot: already in its place. */
			f->nsorted++;
			f->nbounds--;
			continue;
		}
		if (hi - lo <= SMALL_SEG || f->nbounds >= MAX_BOUNDS) {
			qsort_r(f->order + lo, hi - lo, sizeof(*f->order), cmp, f);
			f->nsorted = hi;
			continue;
		}
		if (f->nbounds == f->capbounds) {
			unsigned cap = f->capbounds ? f->capbounds * 2 : 32;
			uint32_t *v = realloc(f->bounds, cap * sizeof(*v));
			if (!v) {
				/* Sort the segment whole instead. */
				qsort_r(f->order + lo, hi - lo, sizeof(*f->order), cmp, f);
				f->nsorted = hi;
				continue;
			}
			f->bounds = v;
			f->capbounds = cap;
		}
		f->bounds[f->nbounds++] = (uint32_t)partition(f, lo, hi);
	}
	return f->nsorted;
}

/* First index whose name comes strictly after @after in the scan's order
 * (LK_SORT_NAME without LK_SCAN_DIRS_FIRST: validated by the caller). */
size_t lk__scan_start_index(struct lk__flight *f, const char *after)
{
	bool desc = f->flags & LK_SCAN_DESC;
	size_t lo = 0, hi = lk__flight_sorted(f, f->norder);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(f->recs[f->order[mid]].name, after);
		if (desc)
			c = -c;
		if (c <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
