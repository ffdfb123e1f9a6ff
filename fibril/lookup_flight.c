/*
 * The underlying directory scan ("flight"): one getdents64 pass and one
 * statx per entry, shared by identical concurrent scans (single flight).
 * Completions arrive as async_submit_cb() callbacks; anything that
 * completes inline is handled in the same loop, so the cached case never
 * parks.
 */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fibril/lookup_int.h"
#include "fibril/async_mnt.h"

/* LK__ENTRY_STATE_BYTES in lookup_int.h states this (plus the sorted
 * position: index and key). */
_Static_assert(sizeof(struct lk__rec) + sizeof(struct lk__ord) <=
	       LK__ENTRY_STATE_BYTES,
	       "per-entry state grew: update LK__ENTRY_STATE_BYTES");

enum { ST_LSTAT = 0, ST_READLINK, ST_TOPEN };

/* Flights that can still be joined, on this thread. */
static __thread struct lk__flight *table;
/* A getdents that ran inline and was slow: go through the pool for a while. */
static __thread uint64_t inline_slow_until;

struct lk__dirent {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

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
	/* The buffers stay until each call reports back (slot_cb/gd_cb,
	 * batch_cb). */
	for (unsigned i = 0; i < f->nslots; i++)
		if (f->slots[i]->busy && f->slots[i]->cookie > 0)
			async_cancel(f->slots[i]->cookie);
	lk__batch_cancel_all(f);
	if (f->gcookie > 0)
		async_cancel(f->gcookie);
}

/* ---- slots: one entry's statx (+ readlink + target type) ---- */

static struct lk__slot *slot_get(struct lk__flight *f)
{
	struct lk__slot *s = f->free_slots;
	if (s) {
		f->free_slots = s->next;
	} else {
		struct lk__slot **v = realloc(f->slots,
					      (f->nslots + 1) * sizeof(*v));
		if (!v)
			return NULL;
		f->slots = v;
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		f->slots[f->nslots++] = s;
	}
	s->f = f;
	s->busy = true;
	s->cookie = 0;
	s->step = ST_LSTAT;
	f->busy++;
	return s;
}

static void slot_put(struct lk__flight *f, struct lk__slot *s)
{
	s->busy = false;
	s->next = f->free_slots;
	f->free_slots = s;
	f->busy--;
}

static void slot_cb(void *arg, long res);

static unsigned long submit_flags(const struct lk__flight *f)
{
	return f->background ? ASYNC_F_BACKGROUND : 0;
}

/* Submits the slot's current step: 1 pending, 0 done (s->res holds it). */
static int slot_issue(struct lk__flight *f, struct lk__slot *s)
{
	struct lk__rec *rec = &f->recs[s->idx];
	unsigned long a[5];
	long call;
	switch (s->step) {
	case ST_LSTAT: {
		const char *name = rec->name;
		/* ".." of the root would describe a directory outside it. */
		if (f->root_dir && rec->namelen == 2 && name[0] == '.' &&
		    name[1] == '.')
			name = ".";
		a[0] = (unsigned long)f->dirfd;
		a[1] = (unsigned long)name;
		a[2] = AT_SYMLINK_NOFOLLOW |
			((f->flags & LK_SCAN_LOOKUP_ATTRS) ? AT_STATX_DONT_SYNC : 0);
		a[3] = LK__STX_MASK;
		a[4] = (unsigned long)&s->stx;
		call = ASYNC_STATX;
		lk__st.statx_calls++;
		break;
	}
	case ST_READLINK:
		if (!s->buf && !(s->buf = malloc(PATH_MAX))) {
			s->res = -ENOMEM;
			return 0;
		}
		a[0] = (unsigned long)f->dirfd;
		a[1] = (unsigned long)rec->name;
		a[2] = (unsigned long)s->buf;
		a[3] = PATH_MAX - 1;
		call = ASYNC_READLINKAT;
		break;
	default: { /* ST_TOPEN: the target's type, resolved beneath the root */
		size_t dl = strlen(f->reldir);
		if (dl + 1 + rec->namelen + 1 > PATH_MAX) {
			s->res = -ENAMETOOLONG;
			return 0;
		}
		char *p = s->buf;
		memcpy(p, f->reldir, dl);
		if (dl)
			p[dl++] = '/';
		memcpy(p + dl, rec->name, rec->namelen + 1u);
		memset(&s->how, 0, sizeof(s->how));
		s->how.flags = O_PATH | O_CLOEXEC;
		s->how.resolve = lk__resolve_flags(f->root);
		a[0] = (unsigned long)f->root->fd;
		a[1] = (unsigned long)p;
		a[2] = (unsigned long)&s->how;
		a[3] = sizeof(s->how);
		call = ASYNC_OPENAT2;
		break;
	}
	}
	long r = lk__submit((const lk_cred_t *)f->cred, submit_flags(f), &s->res,
			    call, a, slot_cb, s);
	if (r > 0) {
		s->cookie = r;
		f->inflight++;
		return 1;
	}
	if (r < 0)
		s->res = r;
	return 0;
}

/* Consumes s->res; returns true when there is another step to issue. */
static bool slot_advance(struct lk__flight *f, struct lk__slot *s)
{
	struct lk__rec *rec = &f->recs[s->idx];
	long res = s->res;
	switch (s->step) {
	case ST_LSTAT:
		if (res < 0) {
			rec->err = (int16_t)res;
			return false;
		}
		struct lk__sres r;
		lk__sres_from_statx(&r, &s->stx);
		lk__rec_set_stat(rec, &r);
		if (!S_ISLNK(rec->mode) || (f->flags & LK_SCAN_NO_LINKS))
			return false;
		s->step = ST_READLINK;
		return true;
	case ST_READLINK:
		if (res >= 0)
			rec->link = strndup(s->buf, (size_t)res);
		if (f->root->symlinks == LK_SYMLINKS_NEVER) {
			rec->target_err = -ELOOP;
			return false;
		}
		s->step = ST_TOPEN;
		return true;
	default:
		if (res >= 0) {
			struct statx t;
			int rc = lk__fstatx((int)res, STATX_TYPE, &t);
			async__close_fd((int)res);
			if (rc < 0)
				rec->target_err = (int16_t)rc;
			else
				rec->target_mode = t.stx_mode & S_IFMT;
		} else {
			rec->target_err = (int16_t)res;
		}
		return false;
	}
}

static void slot_finish(struct lk__flight *f, struct lk__slot *s)
{
	f->recs[s->idx].state = REC_DONE;
	f->ndone++;
	slot_put(f, s);
}

static void slot_run(struct lk__flight *f, struct lk__slot *s)
{
	while (slot_issue(f, s) == 0)
		if (!slot_advance(f, s)) {
			slot_finish(f, s);
			return;
		}
}

static void slot_cb(void *arg, long res)
{
	struct lk__slot *s = arg;
	struct lk__flight *f = s->f;
	s->res = res;
	s->cookie = 0;
	f->inflight--;
	if (f->stopped) {
		if (s->step == ST_TOPEN && res >= 0)
			async__close_fd((int)res);
		slot_put(f, s);
		lk__flight_maybe_free(f);
		return;
	}
	f->refs++;
	if (slot_advance(f, s))
		slot_run(f, s);
	else
		slot_finish(f, s);
	lk__flight_pump(f);
	lk__flight_notify(f);
	lk__flight_unref(f);
}

void lk__flight_stat_done(struct lk__flight *f, size_t i)
{
	struct lk__rec *rec = &f->recs[i];
	if (!rec->err && S_ISLNK(rec->mode) && !(f->flags & LK_SCAN_NO_LINKS)) {
		struct lk__slot *s = slot_get(f);
		if (s) {
			s->idx = i;
			s->step = ST_READLINK;
			slot_run(f, s);
			return;
		}
		/* Out of memory: the entry without its target. */
	}
	rec->state = REC_DONE;
	f->ndone++;
}

static void issue_stat(struct lk__flight *f, size_t i)
{
	if (f->batched && lk__batch_add(f, i))
		return;
	struct lk__slot *s = slot_get(f);
	if (!s) {
		f->recs[i].err = -ENOMEM;
		f->recs[i].state = REC_DONE;
		f->ndone++;
		return;
	}
	s->idx = i;
	f->recs[i].state = REC_PENDING;
	slot_run(f, s);
}

/* ---- names ---- */

static int add_rec(struct lk__flight *f, const char *name, size_t len,
		   uint64_t ino, unsigned char type)
{
	if (f->nrec == f->caprec) {
		size_t cap = f->caprec ? f->caprec * 2 : 256;
		struct lk__rec *v = realloc(f->recs, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->recs = v;
		f->caprec = cap;
	}
	char *p = lk__arena_put(&f->names, name, len, f->base + f->nrec);
	if (!p)
		return -ENOMEM;
	struct lk__rec *r = &f->recs[f->nrec++];
	memset(r, 0, sizeof(*r));
	r->name = p;
	r->namelen = (uint16_t)len;
	r->ino = ino;
	r->dtype = type;
	return 0;
}

static void getdents_done(struct lk__flight *f, long res)
{
	f->gpending = false;
	if (res < 0) {
		f->err = (int)res;
		return;
	}
	if (res == 0) {
		f->eof = true;
		return;
	}
	for (long off = 0; off < res;) {
		const struct lk__dirent *d = (const void *)(f->gbuf + off);
		off += d->reclen;
		const char *nm = d->name;
		size_t len = strlen(nm);
		if (nm[0] == '.') {
			bool dots = len == 1 || (len == 2 && nm[1] == '.');
			if (!(f->flags & (dots ? LK_SCAN_DOTDOT : LK_SCAN_DOTFILES)))
				continue;
		}
		int rc = add_rec(f, nm, len, d->ino, d->type);
		if (rc < 0) {
			f->err = rc;
			return;
		}
	}
}

static void gd_cb(void *arg, long res)
{
	struct lk__flight *f = arg;
	f->inflight--;
	f->gcookie = 0;
	if (f->stopped) {
		f->gpending = false;
		lk__flight_maybe_free(f);
		return;
	}
	f->refs++;
	getdents_done(f, res);
	lk__flight_pump(f);
	lk__flight_notify(f);
	lk__flight_unref(f);
}

/* A sorted scan reads all names before its first entry: this many
 * getdents calls (64 KiB, ~2,000 names each) run inline, so that a
 * cached directory of up to ~8,000 entries never parks; the rest go
 * through the pool, off the caller's thread. Inline, 100,000 names held
 * the loop ~18 ms (small-file p99 during back-to-back listings: 31 ms,
 * 1.1 ms unloaded); a pool round trip costs ~30 us per call. */
#define LK__INLINE_GETDENTS 4

/* 1 pending, 0 done. */
static int getdents_issue(struct lk__flight *f)
{
	f->gpending = true;
	lk__st.getdents_calls++;
	if (f->inline_getdents && (f->streaming || f->inline_left)) {
		if (!f->streaming)
			f->inline_left--;
		/* The pool round trip costs more than a cached getdents; but a
		 * slow one (cold disk) must not keep blocking the thread. */
		uint64_t t0 = fibril_now_ns();
		long r = syscall(SYS_getdents64, f->dirfd, f->gbuf, f->gbuf_size);
		uint64_t t1 = fibril_now_ns();
		if (t1 - t0 > 2000000) {
			f->inline_getdents = false;
			inline_slow_until = t1 + 5000000000ull;
		}
		getdents_done(f, r < 0 ? -errno : r);
		return 0;
	}
	unsigned long a[3] = { (unsigned long)f->dirfd, (unsigned long)f->gbuf,
			       f->gbuf_size };
	long r = lk__submit(NULL, submit_flags(f), &f->gres, ASYNC_GETDENTS64, a,
			    gd_cb, f);
	if (r > 0) {
		f->gcookie = r;
		f->inflight++;
		return 1;
	}
	getdents_done(f, r < 0 ? r : f->gres);
	return 0;
}

/* ---- driving ---- */

/* In-flight calls stay within the window, but they may run this many
 * windows ahead of the reader: completions come back out of order, and a
 * slow entry at the reader's position must not drain the window (on
 * slowfs, 2,000 entries: ~265 ms with a look-ahead of one window). */
#define LOOKAHEAD 4

/* Another entry may be stat'ed now. */
static bool room(const struct lk__flight *f)
{
	return f->busy < f->cap && (!f->fill || f->fill->n < lk__batch_size(f));
}

static bool stat_in_dir_order(const struct lk__flight *f)
{
	return f->streaming || f->need_stat_all ||
		(f->stat_early && f->phase == PH_NAMES);
}

void lk__flight_pump(struct lk__flight *f)
{
	bool again = true;
	while (again && !f->stopped && !f->err) {
		again = false;
		struct lk_scan *c = f->consumers;
		/* Streaming: names and stats only a window ahead of the reader. */
		size_t horizon = SIZE_MAX;
		if (f->streaming)
			horizon = c ? c->pos + LOOKAHEAD * f->cap : 0;
		if (!f->eof && !f->gpending &&
		    (!f->streaming || f->nrec < horizon))
			if (getdents_issue(f) == 0)
				again = true;
		if (f->err)
			break;
		if (f->phase == PH_READY)
			for (struct lk_scan *k = f->consumers; k; k = k->next_c)
				if (!k->counted) {
					/* The pagination cursor, before any stat. */
					k->counted = true;
					if (k->after)
						k->pos = k->hint =
							lk__scan_start_index(f, k->after);
				}
		if (stat_in_dir_order(f)) {
			while (room(f) && f->stat_next < f->nrec &&
			       f->stat_next < horizon) {
				size_t i = f->stat_next++;
				if (f->recs[i].state == REC_NEW)
					issue_stat(f, i);
			}
		} else if (f->phase == PH_READY) {
			for (; c; c = c->next_c) {
				if (c->cancelled)
					continue;
				size_t left = c->o.limit ? c->o.limit - c->delivered
					: SIZE_MAX;
				size_t ahead = LOOKAHEAD * (size_t)c->window;
				size_t lim = c->pos + (left < ahead ? left : ahead);
				if (lim > f->norder)
					lim = f->norder;
				size_t i = c->hint > c->pos ? c->hint : c->pos;
				if (i < lim && room(f))
					lk__flight_sorted(f, lim);
				for (; i < lim && room(f); i++)
					if (f->recs[f->order[i].idx].state == REC_NEW)
						issue_stat(f, f->order[i].idx);
				c->hint = i;
			}
		}
		/* A partial batch waits for more entries while others are in
		 * flight (their completions pump again); alone, it goes. */
		if (lk__batch_flush(f))
			again = true;
		/* Vanished entries at a reader's position move its window on. */
		for (struct lk_scan *k = f->consumers; k; k = k->next_c)
			if (!k->cancelled && lk__scan_skip(k))
				again = true;
		if (f->phase == PH_NAMES && f->eof && !f->streaming) {
			if ((f->flags & LK_SCAN_DIRS_FIRST) && !f->need_stat_all)
				for (size_t i = 0; i < f->nrec; i++)
					if (f->recs[i].dtype == DT_UNKNOWN) {
						f->need_stat_all = true;
						again = true;
						break;
					}
			if (!f->need_stat_all || f->ndone == f->nrec) {
				lk__flight_sort(f);
				if (!f->err)
					f->phase = PH_READY;
				again = true;
			}
		}
	}
}

void lk__flight_notify(struct lk__flight *f)
{
	if (f->notifying)
		return;   /* the outer loop rescans after every callback */
	f->notifying = true;
	f->refs++;
restart:
	for (struct lk_scan *c = f->consumers; c; c = c->next_c) {
		if (c->wq.head)
			fibril_waitq_wake_all(&c->wq);
		if (c->cb && lk__scan_ready(c)) {
			void (*cb)(void *) = c->cb;
			c->cb = NULL;
			cb(c->cb_arg);
			goto restart;
		}
	}
	f->notifying = false;
	lk__flight_unref(f);
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

int lk__flight_attach(struct lk_scan *s, int dirfd, const struct statx *d)
{
	enum lk_sort sort = s->o.sort;
	unsigned flags = s->o.flags & KEY_FLAGS;
	bool share = sort != LK_SORT_NONE && !(s->o.flags & LK_SCAN_NO_SHARE);
	uint64_t dev = makedev(d->stx_dev_major, d->stx_dev_minor);
	if (share)
		for (struct lk__flight *f = table; f; f = f->next)
			if (f->root == s->root && f->cred == s->cred &&
			    f->dev == dev &&
			    f->ino == d->stx_ino && f->sort == sort &&
			    f->flags == flags &&
			    f->mtime_sec == d->stx_mtime.tv_sec &&
			    f->mtime_nsec == d->stx_mtime.tv_nsec &&
			    !f->stopped && !f->err) {
				async__close_fd(dirfd);
				if (lk__scan_set_window(s, f->batched) < 0)
					return -ENOMEM;
				consumer_link(f, s);
				lk__st.shared_joins++;
				return 0;
			}
	/* An unknown or failing file system goes the remote way. */
	bool local = lk_fs_local(dirfd) > 0;
	if (lk__scan_set_window(s, local) < 0)
		goto nomem;
	struct lk__flight *f = calloc(1, sizeof(*f));
	if (!f)
		goto nomem;
	f->reldir = strdup(s->reldir);
	f->streaming = sort == LK_SORT_NONE;
	f->gbuf_size = f->streaming ? 32768 : 65536;
	f->gbuf = malloc(f->gbuf_size);
	if (!f->reldir || !f->gbuf) {
		free(f->reldir);
		free(f->gbuf);
		free(f);
		goto nomem;
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
	f->inline_getdents = local && fibril_now_ns() >= inline_slow_until;
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
	lk__st.getdents_passes++;
	lk__st.live_flights++;
	if (share) {
		f->next = table;
		table = f;
		f->listed = true;
	}
	consumer_link(f, s);
	return 0;
nomem:
	async__close_fd(dirfd);
	return -ENOMEM;
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
