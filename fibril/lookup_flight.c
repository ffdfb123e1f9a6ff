/*
 * The underlying directory scan ("flight") and what drives it: one
 * getdents64 pass and one statx per entry (alone on a slot, or in
 * batches), shared by identical concurrent scans (single flight,
 * lookup_share.c). Every call a flight submits completes here, as an
 * async_submit_cb() callback that pumps the flight on and notifies its
 * consumers; anything that completes inline is handled in the same
 * loop, so the cached case never parks.
 */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fibril/lookup_int.h"
#include "fibril/async_mnt.h"

/* LK__ENTRY_STATE_BYTES in lookup_int.h states this (plus the sorted
 * position: index and key). */
_Static_assert(sizeof(struct lk__rec) + sizeof(struct lk__ord) <=
	       LK__ENTRY_STATE_BYTES,
	       "per-entry state grew: update LK__ENTRY_STATE_BYTES");

enum { ST_LSTAT = 0, ST_READLINK, ST_TOPEN };


struct lk__dirent {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

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
	s->sync = false;
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
static void stopped_report(struct lk__flight *f);

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
			((f->flags & LK_SCAN_LOOKUP_ATTRS) && !s->sync ?
			 AT_STATX_DONT_SYNC : 0);
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
		/* (as in lk__batch_run: no lookup brought a mount root's
		 * attributes) */
		if (r.mount_root && (f->flags & LK_SCAN_LOOKUP_ATTRS) &&
		    !s->sync) {
			s->sync = true;
			return true;
		}
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
		stopped_report(f);
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

/* Entry @i was stat'ed (rec filled, or rec->err set): finishes it, or
 * goes on with its symlink steps on a slot. */
static void stat_done(struct lk__flight *f, size_t i)
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

/* ---- batches (lookup_batch.c): many entries' statx in one call ---- */

static void batch_apply(struct lk__flight *f, struct lk__batch *b, long res)
{
	for (unsigned j = 0; j < b->n; j++) {
		/* (records at random places when the stats went in name
		 * order: a cache miss each unless asked for ahead) */
		if (j + LK__AHEAD < b->n)
			__builtin_prefetch(&f->recs[b->idx[j + LK__AHEAD]], 1);
		lk__batch_store(f, b, j, res);
		stat_done(f, b->idx[j]);
	}
}

static void batch_cb(void *arg, long res)
{
	struct lk__batch *b = arg;
	struct lk__flight *f = b->f;
	b->cookie = 0;
	f->inflight--;
	lk__batch_unlink(f, b);
	if (f->stopped) {
		f->busy -= b->n;
		lk__batch_recycle(f, b);
		stopped_report(f);
		return;
	}
	f->refs++;
	batch_apply(f, b, res);
	lk__batch_recycle(f, b);
	lk__flight_pump(f);
	lk__flight_notify(f);
	lk__flight_unref(f);
}

/* Issues the batch being filled when it is full or nothing else is in
 * flight; true if it did. */
static bool batch_flush(struct lk__flight *f)
{
	struct lk__batch *b = lk__batch_take(f);
	if (!b)
		return false;
	lk__st.statx_batches++;
	unsigned long a[2] = { (unsigned long)lk__batch_run, (unsigned long)b };
	/* LK_SCAN_BACKGROUND: on the SCHED_IDLE threads, so that the thread
	 * formatting the listing (or serving requests) keeps its CPU and
	 * the stats take what is left (lk__flight_attach). */
	long r = lk__submit((const lk_cred_t *)f->cred,
			    f->batch_bg ? ASYNC_F_BACKGROUND : 0, &b->res,
			    ASYNC_CALL, a, batch_cb, b);
	if (r > 0) {
		b->cookie = r;
		f->inflight++;
		lk__batch_link(f, b);
		return true;
	}
	/* Ran here (parallelism limit, no engine), or could not be
	 * submitted at all. */
	batch_apply(f, b, r < 0 ? r : b->res);
	lk__batch_recycle(f, b);
	return true;
}

static void issue_stat(struct lk__flight *f, size_t i)
{
	if (!f->statted) {
		f->statted = true;
		f->statted_ns = fibril_now_ns();
	}
	if (f->batched && lk__batch_add(f, i)) {
		batch_flush(f);
		return;
	}
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
		stopped_report(f);
		return;
	}
	f->refs++;
	getdents_done(f, res);
	lk__flight_pump(f);
	lk__flight_notify(f);
	lk__flight_unref(f);
}

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
			lk__getdents_slow_until = t1 + 5000000000ull;
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

/* Moves past entries that vanished (statx ENOENT) at the reader's
 * position; true if it moved (the flight must pump again: the reader's
 * window moved on). */
static bool scan_skip(struct lk_scan *s)
{
	struct lk__flight *f = s->f;
	size_t p = s->pos;
	if (f->streaming) {
		while (p < f->nrec && f->recs[p].state == REC_DONE &&
		       f->recs[p].err == -ENOENT)
			p++;
	} else if (f->phase == PH_READY && s->counted) {
		while (p < f->norder && lk__ordered(f, p)->state == REC_DONE &&
		       lk__ordered(f, p)->err == -ENOENT)
			p++;
	}
	bool moved = p != s->pos;
	s->pos = p;
	return moved;
}

/* In-flight calls stay within the window, but they may run this many
 * windows ahead of the reader: completions come back out of order, and a
 * slow entry at the reader's position must not drain the window (on
 * slowfs, 2,000 entries: ~265 ms with a look-ahead of one window). */
#define LOOKAHEAD 4

/* Whether @f may issue a call now: it holds a place, or takes one, or
 * has none to wait for (lookup_place.c). Asked only when a call is about
 * to go, so that a flight with nothing to issue (its entries stat'ed,
 * a new reader to start) never waits for a place. */
static bool may_issue(struct lk__flight *f)
{
	return !f->start_pending && lk__place_take(f);
}

/* Another entry may be stat'ed now. */
static bool room(struct lk__flight *f)
{
	return f->busy < f->cap && (!f->fill || f->fill->n < lk__batch_size(f)) &&
	       may_issue(f);
}

static bool stat_in_dir_order(const struct lk__flight *f)
{
	return f->streaming || f->need_stat_all ||
		(f->stat_early && f->phase == PH_NAMES);
}

/* The pagination cursor of each new reader, before any stat. */
static void start_cursors(struct lk__flight *f)
{
	for (struct lk_scan *k = f->consumers; k; k = k->next_c)
		if (!k->counted) {
			k->counted = true;
			if (k->after)
				k->pos = k->hint = lk__scan_start_index(f, k->after);
		}
}

/* Sorted order: stat the entries a window ahead of reader @c. */
static void stat_ahead_of(struct lk__flight *f, struct lk_scan *c)
{
	size_t left = c->o.limit ? c->o.limit - c->delivered : SIZE_MAX;
	size_t ahead = LOOKAHEAD * (size_t)c->window;
	size_t lim = c->pos + (left < ahead ? left : ahead);
	if (lim > f->norder)
		lim = f->norder;
	size_t i = c->hint > c->pos ? c->hint : c->pos;
	if (i < lim && room(f))
		lk__flight_sorted(f, lim);
	for (; i < lim && room(f); i++) {
		/* (the records of sorted positions are at random places: a
		 * cache miss each, nine in ten of this loop's time unless
		 * asked for ahead) */
		if (i + LK__AHEAD < lim)
			__builtin_prefetch(&f->recs[f->order[i + LK__AHEAD].idx]);
		if (f->recs[f->order[i].idx].state == REC_NEW)
			issue_stat(f, f->order[i].idx);
	}
	c->hint = i;
}

/* ---- places (lookup_place.c) ---- */

static void place_release(struct lk__flight *f);

/* A flight given a place while it waited: started from a completion of
 * its own, not from inside whatever freed the place (a close, another
 * flight's callback). */
static void parked_start(void *arg, long res)
{
	struct lk__flight *f = arg;
	f->inflight--;
	f->start_pending = false;
	if (res < 0 && !f->err)
		f->err = (int)res;   /* the engine is going away */
	lk__flight_pump(f);
	lk__flight_notify(f);
	lk__flight_unref(f);
}

/* @f has no call in flight: its place, if it held one, goes on. */
static void place_release(struct lk__flight *f)
{
	struct lk__flight *g = lk__place_put(f);
	if (!g)
		return;
	g->refs++;
	g->start_pending = true;
	static const unsigned long none[1];
	long r = lk__submit(NULL, 0, &g->start_res, ASYNC_NOP, none,
			    parked_start, g);
	g->inflight++;           /* holds the place until the start runs */
	if (r <= 0)
		/* No engine, or it is at its limit: the start runs here, as
		 * any call does then. */
		parked_start(g, r < 0 ? r : 0);
}

/* A call of stopped flight @f reported. */
static void stopped_report(struct lk__flight *f)
{
	if (f->inflight == 0)
		place_release(f);
	lk__flight_maybe_free(f);
}

static void pump_run(struct lk__flight *f);

void lk__flight_pump(struct lk__flight *f)
{
	pump_run(f);
	if (f->inflight == 0)
		place_release(f);
}

static void pump_run(struct lk__flight *f)
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
		    (!f->streaming || f->nrec < horizon) && may_issue(f))
			if (getdents_issue(f) == 0)
				again = true;
		if (f->err)
			break;
		if (f->phase == PH_READY)
			start_cursors(f);
		if (stat_in_dir_order(f)) {
			while (f->stat_next < f->nrec && f->stat_next < horizon &&
			       room(f)) {
				size_t i = f->stat_next++;
				if (f->recs[i].state == REC_NEW)
					issue_stat(f, i);
			}
		} else if (f->phase == PH_READY) {
			for (; c; c = c->next_c)
				if (!c->cancelled)
					stat_ahead_of(f, c);
		}
		/* A partial batch waits for more entries while others are in
		 * flight (their completions pump again); alone, it goes. */
		if (batch_flush(f))
			again = true;
		/* Vanished entries at a reader's position move its window on. */
		for (struct lk_scan *k = f->consumers; k; k = k->next_c)
			if (!k->cancelled && scan_skip(k))
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

/* True when lk_scan_next() has something to say to @s. */
bool lk__flight_ready(struct lk_scan *s)
{
	if (s->cancelled || s->err || s->ended)
		return true;
	struct lk__flight *f = s->f;
	if (!f)
		return s->op == NULL;
	if (f->err || s->delivered >= lk__scan_limit(s))
		return true;
	if (scan_skip(s))
		lk__flight_pump(f);
	if (f->streaming) {
		if (s->pos < f->nrec)
			return f->recs[s->pos].state == REC_DONE;
		return f->eof;
	}
	if (f->phase != PH_READY || !s->counted)
		return false;
	if (s->pos < f->norder)
		return lk__ordered(f, s->pos)->state == REC_DONE;
	return true;
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
		if (c->cb && lk__flight_ready(c)) {
			void (*cb)(void *) = c->cb;
			c->cb = NULL;
			cb(c->cb_arg);
			goto restart;
		}
	}
	f->notifying = false;
	lk__flight_unref(f);
}

