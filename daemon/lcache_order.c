/* The orders of a cached directory other than name order: sorted by
 * keys, with no comparison of names. */
#include "first.h"

#include "daemon/lcache_int.h"

#include <stdlib.h>
#include <string.h>

#include <fibril/lookup.h>

/* One record to order: its keys, most significant first (the group,
 * k1, k2), and its place in name order. */
struct lco_item {
	uint64_t k1;
	uint32_t k2;
	uint32_t idx;
	uint8_t group;
};

/* Passes, least significant byte first: k2's four, k1's eight, the
 * group. */
#define LCO_PASSES 13

/* One stable pass of @n items from @a to @b on byte @p, placed by
 * @count, its histogram. */
static void pass(const struct lco_item *a, struct lco_item *b, size_t n, unsigned p,
                 const size_t *count)
{
	size_t pos[256], sum = 0;

	for (unsigned v = 0; v < 256; v++) {
		pos[v] = sum;
		sum += count[v];
	}
	if (p < 4) {
		for (size_t i = 0; i < n; i++)
			b[pos[a[i].k2 >> (8 * p) & 0xff]++] = a[i];
	} else if (p < 12) {
		for (size_t i = 0; i < n; i++)
			b[pos[a[i].k1 >> (8 * (p - 4)) & 0xff]++] = a[i];
	} else {
		for (size_t i = 0; i < n; i++)
			b[pos[a[i].group]++] = a[i];
	}
}

/*
 * The records are in name order already, and every order breaks its
 * ties by name (ascending, or descending under LK_SCAN_DESC): the
 * items go in in that order, and a stable sort on the keys alone keeps
 * it among equal keys. A least-significant-digit radix sort is stable
 * and compares nothing; a pass whose byte is the same for every item
 * (the high bytes of most sizes) is skipped. 100,000 records: a few
 * passes over 2 MB, where qsort compared names ~1.7 million times.
 */
uint32_t *lco_order(const struct lc_rec *recs, size_t n, unsigned sort, unsigned flags)
{
	bool desc = flags & LK_SCAN_DESC, dirs = flags & LK_SCAN_DIRS_FIRST;
	struct lco_item *a = malloc((n ? n : 1) * sizeof *a);
	struct lco_item *b = malloc((n ? n : 1) * sizeof *b);
	uint32_t *o = malloc((n ? n : 1) * sizeof *o);
	size_t (*count)[256] = calloc(LCO_PASSES, sizeof *count);

	if (!a || !b || !o || !count) {
		free(o);
		o = NULL;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t at = desc ? n - 1 - i : i;
		const struct lc_rec *r = &recs[at];
		struct lco_item *it = &a[i];
		/* Largest and newest first, as ls -S and ls -t; LK_SCAN_DESC
		 * reverses the keys, not the grouping. */
		uint64_t k1 = 0;
		uint32_t k2 = 0;
		if (sort == LK_SORT_SIZE) {
			k1 = ~r->size;
		} else if (sort == LK_SORT_MTIME) {
			k1 = ~((uint64_t)r->mtime ^ (UINT64_C(1) << 63));
			k2 = ~r->mtime_nsec;
		}
		it->k1 = desc ? ~k1 : k1;
		it->k2 = desc ? ~k2 : k2;
		it->group = dirs && !S_ISDIR(r->mode);
		it->idx = (uint32_t)at;
		for (unsigned j = 0; j < 4; j++)
			count[j][it->k2 >> (8 * j) & 0xff]++;
		for (unsigned j = 0; j < 8; j++)
			count[4 + j][it->k1 >> (8 * j) & 0xff]++;
		count[12][it->group]++;
	}
	for (unsigned p = 0; p < LCO_PASSES; p++) {
		/* (a byte all items share leaves the order as it is) */
		size_t nz = 0;
		for (unsigned v = 0; v < 256 && nz < 2; v++)
			nz += count[p][v] != 0;
		if (nz < 2)
			continue;
		pass(a, b, n, p, count[p]);
		struct lco_item *t = a;
		a = b;
		b = t;
	}
	for (size_t i = 0; i < n; i++)
		o[i] = a[i].idx;
out:
	free(a);
	free(b);
	free(count);
	return o;
}
