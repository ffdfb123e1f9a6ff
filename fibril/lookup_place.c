/*
 * Places: at most lk_root_limit_scans() scans of a root doing I/O at once
 * on a thread; the rest wait, oldest first.
 *
 * A place is held only while the scan has calls in flight (the driver,
 * lookup_flight.c, takes one before issuing and gives it back when the
 * last call has reported), not for as long as it is open: a reader that
 * stops reading, or a handle left open, then holds no place, and no scan
 * can wait for one that only its own reader would free.
 *
 * A scan that waits has not issued a stat, so it stays joinable
 * (lookup_share.c): every identical scan opened meanwhile joins it, and
 * sixteen clients listing one slow directory back to back share a few
 * passes instead of running sixteen, each stat'ing every entry.
 *
 * Only lists and counts here; the driver starts the flight it is handed.
 */
#include "first.h"

#include <errno.h>

#include "fibril/lookup_int.h"

/* This thread's flights holding a place, and those waiting, oldest
 * first (through next_place in both). */
static __thread struct lk__flight *placed;
static __thread struct lk__flight *park_head, *park_tail;

FIBRIL_API int lk_root_limit_scans(lk_root_t *r, unsigned n)
{
	if (!r)
		return -EINVAL;
	r->max_scans = n;
	return 0;
}

static unsigned placed_count(const lk_root_t *r)
{
	unsigned n = 0;
	for (const struct lk__flight *f = placed; f; f = f->next_place)
		n += f->root == r;
	return n;
}

static void place(struct lk__flight *f)
{
	f->placed = true;
	f->next_place = placed;
	placed = f;
}

static void unpark(struct lk__flight *f)
{
	struct lk__flight *prev = NULL;
	for (struct lk__flight *p = park_head; p; prev = p, p = p->next_place)
		if (p == f) {
			if (prev)
				prev->next_place = f->next_place;
			else
				park_head = f->next_place;
			if (park_tail == f)
				park_tail = prev;
			break;
		}
	f->next_place = NULL;
	f->parked = false;
}

bool lk__place_take(struct lk__flight *f)
{
	if (f->placed || !f->root->max_scans)
		return true;
	if (f->parked)
		return false;
	if (placed_count(f->root) < f->root->max_scans) {
		place(f);
		return true;
	}
	f->parked = true;
	f->next_place = NULL;
	if (park_tail)
		park_tail->next_place = f;
	else
		park_head = f;
	park_tail = f;
	return false;
}

static void unplace(struct lk__flight *f)
{
	for (struct lk__flight **p = &placed; *p; p = &(*p)->next_place)
		if (*p == f) {
			*p = f->next_place;
			break;
		}
	f->next_place = NULL;
	f->placed = false;
}

struct lk__flight *lk__place_put(struct lk__flight *f)
{
	if (!f->placed)
		return NULL;
	unplace(f);
	for (struct lk__flight *g = park_head; g; g = g->next_place)
		if (g->root == f->root) {
			unpark(g);
			place(g);
			return g;
		}
	return NULL;
}

void lk__place_forget(struct lk__flight *f)
{
	if (f->parked)
		unpark(f);
	if (f->placed)
		unplace(f);
}
