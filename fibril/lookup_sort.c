/* Ordering of a sorted scan: (key, index) pairs over the compact records. */
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

/* The full order of records @a and @b: what a key cannot tell apart. */
static int rec_cmp(const struct lk__flight *f, uint32_t ia, uint32_t ib)
{
	const struct lk__rec *a = &f->recs[ia];
	const struct lk__rec *b = &f->recs[ib];
	/* The grouping is decided outside the reversal below: LK_SCAN_DESC
	 * reverses the key only (ls -r --group-directories-first). */
	if (f->flags & LK_SCAN_DIRS_FIRST) {
		bool da = is_dir(a), db = is_dir(b);
		if (da != db)
			return da ? -1 : 1;
	}
	int c = 0;
	if (f->sort == LK_SORT_SIZE) {
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

/* Keys first: they sit next to the indexes being moved, so most
 * comparisons read one cache line the partition already touches. */
static inline int ord_cmp(const struct lk__flight *f, const struct lk__ord *a,
			  const struct lk__ord *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return rec_cmp(f, a->idx, b->idx);
}

static int ord_cmp_r(const void *a, const void *b, void *f)
{
	return ord_cmp(f, a, b);
}

/* Names of order[lo..hi) the prefix is taken from, spread over it. */
#define PREFIX_SAMPLES 32

/* Name sorts: the prefix most names of order[lo..hi) share, that of up
 * to PREFIX_SAMPLES of them spread over it (all of them in a short
 * segment); 0 for other sorts. A few names without it ("README" among
 * "IMG_0001.jpg"...) then leave it as long as it is for the rest. */
static size_t sample_prefix(const struct lk__flight *f, size_t lo, size_t hi,
			    const char **pfx)
{
	*pfx = "";
	if (f->sort != LK_SORT_NAME || lo >= hi)
		return 0;
	size_t n = hi - lo, step = n > PREFIX_SAMPLES ? n / PREFIX_SAMPLES : 1;
	const struct lk__rec *r0 = &f->recs[f->order[lo].idx];
	size_t lcp = r0->namelen;
	for (size_t i = lo + step; i < hi && lcp; i += step) {
		const char *nm = f->recs[f->order[i].idx].name;
		size_t k = 0;
		while (k < lcp && nm[k] == r0->name[k])
			k++;
		lcp = k;
	}
	*pfx = r0->name;
	return lcp;
}

/*
 * Each position's key: a 64-bit number whose order is the scan's order
 * wherever two keys differ, so that equal keys alone need rec_cmp.
 * Names: in the top two bits, where the name stands against the
 * sampled prefix (before every name that has it, among them, after
 * them); below, 62 bits of the 8 bytes after that prefix (of the name's
 * first 8 bytes when it lacks it), big-endian (integer order is byte
 * order) and zero-padded (the NUL sorts first, as in strcmp). Sizes
 * and times (with their nanoseconds): largest/newest first.
 * LK_SCAN_DESC flips the key; LK_SCAN_DIRS_FIRST puts the group in the
 * top bit and keeps the key's upper 63 bits. Sorting a 100,000-name
 * directory through an index array and a comparison function takes a
 * fifth of the worker's CPU in a warm listing over HTTP; with keys most
 * comparisons are one integer compare.
 */
static uint64_t key_of(const struct lk__flight *f, const struct lk__rec *r,
		       const char *pfx, size_t lcp)
{
	uint64_t k = 0;
	if (f->sort == LK_SORT_NAME) {
		size_t from = lcp;
		uint64_t region = 1;
		if (lcp && (r->namelen < lcp || memcmp(r->name, pfx, lcp))) {
			/* outside the prefix's names: all before or all after */
			size_t m = r->namelen < lcp ? r->namelen : lcp;
			region = memcmp(r->name, pfx, m) > 0 ? 2 : 0;
			from = 0;
		}
		for (size_t j = 0; j < 8; j++) {
			size_t at = from + j;
			unsigned char ch = at < r->namelen ? (unsigned char)r->name[at] : 0;
			k = k << 8 | ch;
		}
		k = region << 62 | k >> 2;
	} else if (f->sort == LK_SORT_SIZE) {
		k = UINT64_MAX - r->size;
	} else if (f->sort == LK_SORT_MTIME) {
		/* Seconds and nanoseconds in one number for the seconds
		 * that fit 34 bits (1970 to 2514); the others at either end,
		 * where rec_cmp tells them apart. Files made together often
		 * share their second. */
		const int64_t top = INT64_C(1) << 34;
		uint64_t ns = r->mtime_nsec < (1u << 30) ? r->mtime_nsec : (1u << 30) - 1;
		uint64_t t = r->mtime < 0 ? 0
			: r->mtime >= top ? UINT64_MAX >> 30 << 30 | ((1u << 30) - 1)
			: (uint64_t)r->mtime << 30 | ns;
		k = UINT64_MAX - t;
	}
	if (f->flags & LK_SCAN_DESC)
		k = ~k;
	if (f->flags & LK_SCAN_DIRS_FIRST)
		k = (uint64_t)!is_dir(r) << 63 | k >> 1;
	return k;
}

static void make_keys(struct lk__flight *f, size_t lo, size_t hi)
{
	const char *pfx;
	size_t lcp = sample_prefix(f, lo, hi, &pfx);
	for (size_t i = lo; i < hi; i++)
		f->order[i].key = key_of(f, &f->recs[f->order[i].idx], pfx, lcp);
}

/* When every key of order[lo..hi) is the same and the order is by
 * name, its names share more than the prefix their keys were cut after
 * (names that differ only far into them, "trip-day-one-0001.jpg" and
 * "trip-day-one-0002.jpg"): keys from the bytes after the segment's
 * own prefix tell them apart again. The segment lies between two
 * pivots, so its order does not depend on keys outside it. */
static void rekey(struct lk__flight *f, size_t lo, size_t hi)
{
	const struct lk__ord *o = f->order;
	uint64_t k = o[lo].key;
	if (f->sort != LK_SORT_NAME || o[hi - 1].key != k || o[lo + (hi - lo) / 2].key != k)
		return;
	for (size_t i = lo + 1; i < hi - 1; i++)
		if (o[i].key != k)
			return;
	make_keys(f, lo, hi);
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
			f->order[n++].idx = (uint32_t)i;
	f->norder = n;
	f->nsorted = 0;
	make_keys(f, 0, n);
	f->nbounds = 0;
}

/* Segments this small are sorted whole. */
#define SMALL_SEG 32
/* Partition depth beyond which a segment is sorted whole (bad pivots). */
#define MAX_BOUNDS 96

static size_t pick(struct lk__flight *f, size_t lo, size_t hi)
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
	const struct lk__ord *o = f->order;
	size_t a = i[0], b = i[1], c = i[2], t;
	if (ord_cmp(f, &o[a], &o[b]) > 0) { t = a; a = b; b = t; }
	if (ord_cmp(f, &o[b], &o[c]) > 0) { t = b; b = c; c = t; }
	if (ord_cmp(f, &o[a], &o[b]) > 0) { t = a; a = b; b = t; }
	return b;
}

static inline void ord_swap(struct lk__ord *a, struct lk__ord *b)
{
	struct lk__ord t = *a;
	*a = *b;
	*b = t;
}

/* Puts order[lo..hi) around a pivot; returns the pivot's final place.
 * Without a branch on the comparison (order[i..j) holds what is not
 * below the pivot, and each element is written either way): on names
 * in directory order a branch guesses wrong half the time, and the
 * partitions took a tenth of the worker's CPU in a 100,000-entry
 * listing. Equal keys, rare, take the full comparison. */
static size_t partition(struct lk__flight *f, size_t lo, size_t hi)
{
	struct lk__ord *o = f->order;
	ord_swap(&o[pick(f, lo, hi)], &o[hi - 1]);
	const struct lk__ord pv = o[hi - 1];
	size_t i = lo;
	for (size_t j = lo; j < hi - 1; j++) {
		const struct lk__ord t = o[j];
		size_t below = t.key < pv.key;
		if (__builtin_expect(t.key == pv.key, 0))
			below = rec_cmp(f, t.idx, pv.idx) < 0;
		o[j] = o[i];
		o[i] = t;
		i += below;
	}
	ord_swap(&o[i], &o[hi - 1]);
	return i;
}

/* A short segment, in place (insertion sort: no call per comparison). */
static void sort_small(struct lk__flight *f, size_t lo, size_t hi)
{
	struct lk__ord *o = f->order;
	for (size_t i = lo + 1; i < hi; i++) {
		struct lk__ord v = o[i];
		size_t j = i;
		for (; j > lo && ord_cmp(f, &o[j - 1], &v) > 0; j--)
			o[j] = o[j - 1];
		o[j] = v;
	}
}

/* Room for one more pivot on the stack. */
static bool bounds_room(struct lk__flight *f)
{
	if (f->nbounds < f->capbounds)
		return true;
	unsigned cap = f->capbounds ? f->capbounds * 2 : 32;
	uint32_t *v = realloc(f->bounds, cap * sizeof(*v));
	if (!v)
		return false;
	f->bounds = v;
	f->capbounds = cap;
	return true;
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
		if (hi - lo <= SMALL_SEG) {
			sort_small(f, lo, hi);
			f->nsorted = hi;
			continue;
		}
		if (f->nbounds >= MAX_BOUNDS || !bounds_room(f)) {
			/* Bad pivots, or no memory for the stack: the segment
			 * whole. */
			qsort_r(f->order + lo, hi - lo, sizeof(*f->order),
				ord_cmp_r, f);
			f->nsorted = hi;
			continue;
		}
		rekey(f, lo, hi);
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
		int c = strcmp(f->recs[f->order[mid].idx].name, after);
		if (desc)
			c = -c;
		if (c <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
