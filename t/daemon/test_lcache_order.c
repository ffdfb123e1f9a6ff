/* lcache_order.c against the comparison it stands for: lookup_sort.c's
 * order (ties by name, LK_SCAN_DESC reversing all but the grouping),
 * sorted with qsort over random records full of ties. */
#include "first.h"

#include "daemon/lcache_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fibril/lookup.h>

#include "t/tmain.h"

static unsigned ref_sort, ref_flags;
static const struct lc_rec *ref_recs;

static int ref_cmp(const void *pa, const void *pb)
{
	const struct lc_rec *a = &ref_recs[*(const uint32_t *)pa];
	const struct lc_rec *b = &ref_recs[*(const uint32_t *)pb];
	if (ref_flags & LK_SCAN_DIRS_FIRST) {
		bool da = S_ISDIR(a->mode), db = S_ISDIR(b->mode);
		if (da != db)
			return da ? -1 : 1;
	}
	int c = 0;
	if (ref_sort == LK_SORT_SIZE)
		c = a->size < b->size ? 1 : a->size > b->size ? -1 : 0;
	else if (ref_sort == LK_SORT_MTIME)
		c = a->mtime < b->mtime ? 1 : a->mtime > b->mtime ? -1
			: a->mtime_nsec < b->mtime_nsec ? 1
			: a->mtime_nsec > b->mtime_nsec ? -1 : 0;
	if (!c)
		c = strcmp(a->name, b->name);
	return (ref_flags & LK_SCAN_DESC) ? -c : c;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lc_rec *)a)->name, ((const struct lc_rec *)b)->name);
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* @n records in name order: sizes and times from a few values (ties),
 * or spread over the whole range of their types. */
static struct lc_rec *records(size_t n, bool wide, uint64_t seed, char **names)
{
	struct lc_rec *r = calloc(n ? n : 1, sizeof *r);
	*names = malloc(n * 24 + 1);
	ck_assert(r && *names);
	for (size_t i = 0; i < n; i++) {
		char *nm = *names + i * 24;
		uint64_t v = rnd(&seed);
		snprintf(nm, 24, "n%08x-%06u", (unsigned)(v >> 20), (unsigned)(i % 1000000));
		r[i].name = nm;
		r[i].namelen = (uint32_t)strlen(nm);
		r[i].mode = v % 5 ? S_IFREG | 0644 : S_IFDIR | 0755;
		v = rnd(&seed);
		if (wide) {
			r[i].size = v;
			r[i].mtime = (int64_t)rnd(&seed);
			r[i].mtime_nsec = (uint32_t)(rnd(&seed) % 1000000000u);
		} else {
			static const uint64_t sizes[] = { 0, 1, 255, 256, 4096, 1u << 24,
				UINT64_C(1) << 40, UINT64_MAX };
			static const int64_t times[] = { INT64_MIN, -86400, -1, 0, 1,
				1700000000, INT64_MAX };
			r[i].size = sizes[v % 8];
			r[i].mtime = times[v / 8 % 7];
			r[i].mtime_nsec = (uint32_t)(v / 56 % 3) * 499999999u;
		}
	}
	qsort(r, n, sizeof *r, name_cmp);
	return r;
}

static void check(const struct lc_rec *r, size_t n)
{
	static const unsigned sorts[] = { LK_SORT_NAME, LK_SORT_SIZE, LK_SORT_MTIME };
	uint32_t *want = malloc((n ? n : 1) * sizeof *want);

	ck_assert_ptr_nonnull(want);
	for (size_t s = 0; s < 3; s++) {
		for (unsigned fl = 0; fl < 4; fl++) {
			unsigned flags = (fl & 1 ? LK_SCAN_DESC : 0) | (fl & 2 ? LK_SCAN_DIRS_FIRST : 0);
			for (size_t i = 0; i < n; i++)
				want[i] = (uint32_t)i;
			ref_sort = sorts[s];
			ref_flags = flags;
			ref_recs = r;
			qsort(want, n, sizeof *want, ref_cmp);
			uint32_t *got = lco_order(r, n, sorts[s], flags);
			ck_assert_ptr_nonnull(got);
			for (size_t i = 0; i < n; i++)
				ck_assert_msg(got[i] == want[i], "sort %u flags %u n %zu: at %zu %u, want %u",
				              sorts[s], flags, n, i, got[i], want[i]);
			free(got);
		}
	}
	free(want);
}

START_TEST(orders_like_the_comparison)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 17, 256, 1000, 20000 };

	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		for (int wide = 0; wide < 2; wide++) {
			char *names;
			struct lc_rec *r = records(sizes[k], wide, 0x9e3779b97f4a7c15u + k, &names);
			check(r, sizes[k]);
			free(r);
			free(names);
		}
	}
}
END_TEST

TMAIN_TESTS("lcache_order", orders_like_the_comparison);
