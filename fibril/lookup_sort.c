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
	/* Like ls -S and ls -t: largest/newest first, ties by name. */
	if (f->sort == LK_SORT_SIZE)
		c = a->size < b->size ? 1 : a->size > b->size ? -1 : 0;
	else if (f->sort == LK_SORT_MTIME)
		c = a->mtime < b->mtime ? 1 : a->mtime > b->mtime ? -1
			: a->mtime_nsec < b->mtime_nsec ? 1
			: a->mtime_nsec > b->mtime_nsec ? -1 : 0;
	if (!c)
		c = strcmp(a->name, b->name);
	return (f->flags & LK_SCAN_DESC) ? -c : c;
}

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
	qsort_r(f->order, n, sizeof(*f->order), cmp, f);
	f->norder = n;
}

/* First index whose name comes strictly after @after in the scan's order
 * (LK_SORT_NAME without LK_SCAN_DIRS_FIRST: validated by the caller). */
size_t lk__scan_start_index(struct lk__flight *f, const char *after)
{
	bool desc = f->flags & LK_SCAN_DESC;
	size_t lo = 0, hi = f->norder;
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
