/*
 * A flight's life: made or joined (single flight: identical concurrent
 * scans share one) by the consumers that attach to it, stopped when no
 * consumer is active any more, freed when neither a consumer nor a call
 * holds it. Below the driver (lookup_flight.c), which submits the calls
 * and handles their completions; this file only cancels them.
 */
#include "first.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "fibril/lookup_int.h"
#include "fibril/async_mnt.h"

/* Flights that can still be joined, on this thread. */
static __thread struct lk__flight *table;

/* A getdents that ran inline and was slow: go through the pool for a while
 * (lookup_flight.c sets it). */
__thread uint64_t lk__getdents_slow_until;

static void flight_unlist(struct lk__flight *f)
{
	if (!f->listed)
		return;
	for (struct lk__flight **p = &table; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			break;
		}
	f->listed = false;
}

static void flight_free(struct lk__flight *f)
{
	flight_unlist(f);
	lk__place_forget(f);
	if (f->dirfd >= 0)
		async__close_fd(f->dirfd);
	for (size_t i = 0; i < f->nrec; i++)
		free(f->recs[i].link);
	for (unsigned i = 0; i < f->nslots; i++) {
		free(f->slots[i]->buf);
		free(f->slots[i]);
	}
	free(f->slots);
	lk__batch_free_all(f);
	free(f->recs);
	free(f->order);
	free(f->bounds);
	free(f->gbuf);
	free(f->reldir);
	lk__arena_free(&f->names);
	lk_root_close(f->root);
	async__cred_drop(f->cred);
	lk__st.live_flights--;
	free(f);
}

void lk__flight_unref(struct lk__flight *f)
{
	if (--f->refs == 0 && f->inflight == 0)
		flight_free(f);
}

/* After a completion on a stopped flight. */
void lk__flight_maybe_free(struct lk__flight *f)
{
	if (f->refs == 0 && f->inflight == 0)
		flight_free(f);
}

void lk__flight_deactivate(struct lk__flight *f)
{
	if (f->stopped)
		return;
	f->stopped = true;
	flight_unlist(f);
	/* A place it holds goes when its last call reports (lookup_flight.c). */
	if (f->parked)
		lk__place_forget(f);
	/* The buffers stay until each call reports back (its callback in
	 * lookup_flight.c). */
	for (unsigned i = 0; i < f->nslots; i++)
		if (f->slots[i]->busy && f->slots[i]->cookie > 0)
			async_cancel(f->slots[i]->cookie);
	lk__batch_cancel_all(f);
	if (f->gcookie > 0)
		async_cancel(f->gcookie);
}

/* Streaming: drop records below @below (already delivered and no longer
 * referenced by the caller's batch). */
void lk__flight_compact(struct lk__flight *f, size_t below)
{
	if (below < 1024 || below * 2 < f->nrec)
		return;
	for (size_t i = 0; i < below; i++)
		free(f->recs[i].link);
	memmove(f->recs, f->recs + below, (f->nrec - below) * sizeof(*f->recs));
	f->nrec -= below;
	f->stat_next = f->stat_next > below ? f->stat_next - below : 0;
	for (unsigned i = 0; i < f->nslots; i++)
		if (f->slots[i]->busy)
			f->slots[i]->idx -= below;
	lk__batch_compact(f, below);
	f->base += below;
	f->ndone = 0;   /* not used while streaming */
	for (struct lk_scan *c = f->consumers; c; c = c->next_c) {
		c->pos -= below;
		c->hint = 0;
	}
	lk__arena_release(&f->names, f->base);
}

static unsigned clamp_window(unsigned w, unsigned dflt)
{
	return !w ? dflt : w > LK_WINDOW_MAX ? LK_WINDOW_MAX : w;
}

/* @s takes its window (@local: the local window) and the array it
 * delivers in. */
static int scan_set_window(struct lk_scan *s, bool local)
{
	s->window = local ? clamp_window(s->o.local_window, LK_LOCAL_WINDOW)
			  : clamp_window(s->o.window, 128);
	free(s->batch);
	s->batch = malloc(lk__deliver_max(s) * sizeof(*s->batch));
	return s->batch ? 0 : -ENOMEM;
}

/* ---- single flight ---- */

#define KEY_FLAGS (LK_SCAN_DESC | LK_SCAN_DIRS_FIRST | LK_SCAN_DOTFILES | \
		   LK_SCAN_DOTDOT | LK_SCAN_NO_LINKS | LK_SCAN_LOOKUP_ATTRS | \
		   LK_SCAN_BACKGROUND)

static void consumer_link(struct lk__flight *f, struct lk_scan *s)
{
	s->f = f;
	s->prev_c = NULL;
	s->next_c = f->consumers;
	if (f->consumers)
		f->consumers->prev_c = s;
	f->consumers = s;
	f->refs++;
	f->active++;
	if (s->window > f->cap)
		f->cap = s->window;
}

/* The joinable flight identical to what is asked, if any; *running
 * says whether an identical one runs at all. A flight that has begun
 * its stats is joinable only by a scan that accepts attributes stat'ed
 * up to @age_ms before it came: they may predate a change made before
 * the new request, and the directory's mtime, which keys the sharing,
 * tells only of names. */
static struct lk__flight *flight_find(const lk_root_t *root,
				      const struct async__cred *cred,
				      const struct statx *d, enum lk_sort sort,
				      unsigned flags, unsigned age_ms,
				      bool *running)
{
	uint64_t dev = makedev(d->stx_dev_major, d->stx_dev_minor);
	uint64_t now = age_ms ? fibril_now_ns() : 0;
	*running = false;
	for (struct lk__flight *f = table; f; f = f->next)
		if (f->root == root && f->cred == cred &&
		    f->dev == dev && f->ino == d->stx_ino &&
		    f->sort == sort && f->flags == flags &&
		    f->mtime_sec == d->stx_mtime.tv_sec &&
		    f->mtime_nsec == d->stx_mtime.tv_nsec &&
		    !f->stopped && !f->err) {
			*running = true;
			if (!f->statted ||
			    now - f->statted_ns <= (uint64_t)age_ms * 1000000)
				return f;
		}
	return NULL;
}

static bool shares(const struct lk_scan_opts *o)
{
	return o->sort != LK_SORT_NONE && !(o->flags & LK_SCAN_NO_SHARE);
}

FIBRIL_API int lk_scan_joinable(lk_root_t *r, const struct statx *dir,
				const struct lk_scan_opts *o)
{
	bool running;

	if (!r || !dir || !o)
		return -EINVAL;
	if (!shares(o))
		return -ENOENT;
	if (flight_find(r, lk__x(o->cred), dir, o->sort, o->flags & KEY_FLAGS,
			o->join_age_ms, &running))
		return 1;
	return running ? 0 : -ENOENT;
}

/* A new flight over @dirfd (not yet its own: the caller closes it on
 * failure); NULL when out of memory. */
static struct lk__flight *flight_new(const struct lk_scan *s, int dirfd,
				     const struct statx *d, uint64_t dev,
				     unsigned flags, bool local)
{
	enum lk_sort sort = s->o.sort;
	struct lk__flight *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->reldir = strdup(s->reldir);
	f->streaming = sort == LK_SORT_NONE;
	f->gbuf_size = f->streaming ? 32768 : 65536;
	f->gbuf = malloc(f->gbuf_size);
	if (!f->reldir || !f->gbuf) {
		free(f->reldir);
		free(f->gbuf);
		free(f);
		return NULL;
	}
	f->dirfd = dirfd;
	f->root = s->root;
	lk__root_ref(s->root);
	f->cred = async__cred_hold(s->cred);
	f->dev = dev;
	f->ino = d->stx_ino;
	f->dev_major = d->stx_dev_major;
	f->dev_minor = d->stx_dev_minor;
	f->mtime_sec = d->stx_mtime.tv_sec;
	f->mtime_nsec = d->stx_mtime.tv_nsec;
	f->sort = sort;
	f->flags = flags;
	f->root_dir = dev == s->root->dev && d->stx_ino == s->root->ino;
	f->need_stat_all = sort == LK_SORT_SIZE || sort == LK_SORT_MTIME;
	f->inline_getdents = local && fibril_now_ns() >= lk__getdents_slow_until;
	/* On a local file system a stat takes microseconds and io-wq does
	 * it at 2-3x the speed of a thread pool (100,000 cached entries:
	 * 0.21 s against 0.48 s); the pool's SCHED_IDLE threads pay off
	 * where each stat waits a round trip (FUSE, NFS), which is also
	 * where a listing lasts long enough to matter to other requests. */
	f->background = (flags & LK_SCAN_BACKGROUND) && !local;
	f->batched = local;
	/* Background batches take only idle CPU time: the worker keeps its
	 * CPU for formatting, and a name-sorted full listing stats entries
	 * in directory order while the names are still read and sorted
	 * (one CPU reads them, the other was idle). Warm 100,000-entry
	 * listing over HTTP against nginx, 15-20 interleaved rounds, median:
	 * 0.46 with both, 0.48-0.49 with foreground batches, 0.55 with one
	 * ring statx per entry. Not for pagination: it may stop early. */
	f->batch_bg = local && (flags & LK_SCAN_BACKGROUND);
	f->stat_early = f->batch_bg && sort == LK_SORT_NAME && !s->o.limit &&
		!s->after;
	f->inline_left = LK__INLINE_GETDENTS;
	return f;
}

int lk__flight_attach(struct lk_scan *s, int dirfd, const struct statx *d)
{
	unsigned flags = s->o.flags & KEY_FLAGS;
	bool share = shares(&s->o), running;
	uint64_t dev = makedev(d->stx_dev_major, d->stx_dev_minor);
	struct lk__flight *f = share ? flight_find(s->root, s->cred, d,
						   s->o.sort, flags,
						   s->o.join_age_ms, &running)
				     : NULL;
	if (f) {
		async__close_fd(dirfd);
		if (scan_set_window(s, f->batched) < 0)
			return -ENOMEM;
		consumer_link(f, s);
		lk__st.shared_joins++;
		return 0;
	}
	/* An unknown or failing file system goes the remote way. */
	bool local = lk_fs_local(dirfd) > 0;
	if (scan_set_window(s, local) < 0 ||
	    !(f = flight_new(s, dirfd, d, dev, flags, local))) {
		async__close_fd(dirfd);
		return -ENOMEM;
	}
	lk__st.getdents_passes++;
	lk__st.live_flights++;
	if (share) {
		f->next = table;
		table = f;
		f->listed = true;
	}
	consumer_link(f, s);
	return 0;
}

void lk__flight_detach(struct lk_scan *s)
{
	struct lk__flight *f = s->f;
	if (s->prev_c)
		s->prev_c->next_c = s->next_c;
	else
		f->consumers = s->next_c;
	if (s->next_c)
		s->next_c->prev_c = s->prev_c;
	s->f = NULL;
	if (!s->cancelled && --f->active == 0)
		lk__flight_deactivate(f);
	lk__flight_unref(f);
}
