/* Private to fibril/lookup_*.c: the engine's internal structures. */
#ifndef FIBRIL_LOOKUP_INT_H
#define FIBRIL_LOOKUP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <linux/openat2.h>

#include "fibril/fibril.h"
#include "fibril/async.h"
#include "fibril/lookup.h"
#include "async_cred.h"

#define LK__HIDDEN __attribute__((visibility("hidden")))

/* Fields we keep per entry (no atime/ctime/btime: see struct lk__rec). */
#define LK__STX_MASK (STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | \
		      STATX_GID | STATX_INO | STATX_SIZE | STATX_BLOCKS | \
		      STATX_MTIME)

struct lk_root {
	int fd;
	int refs;                 /* atomic: roots are shared by threads */
	enum lk_symlinks symlinks;
	unsigned flags;
	uint64_t dev, ino;        /* to recognise ".." of the root itself */
	bool local;               /* on a local mount (lk_fs_local) */
	struct lk__ccache *cc;    /* case-insensitive names; made on first use */
	unsigned max_scans;       /* per thread, doing I/O at once; 0: no bound */
};

LK__HIDDEN void lk__root_ref(lk_root_t *r);

/* ---- lookup_casefold.c: (directory, fold) -> on-disk name, per root;
 * any thread (a mutex inside). ---- */
struct lk__ccache;
struct lk__ckey {
	uint64_t dev, ino;
	lk_fold_fn fold;
	void *fold_arg;
	const char *key;           /* the folded name */
	size_t klen;
};
/* Copies the cached name into @name (@cap bytes): true on a hit. */
LK__HIDDEN bool lk__cc_get(lk_root_t *r, const struct lk__ckey *k,
			   char *name, size_t cap);
LK__HIDDEN void lk__cc_put(lk_root_t *r, const struct lk__ckey *k,
			   const char *name);
LK__HIDDEN void lk__cc_del(lk_root_t *r, const struct lk__ckey *k);
LK__HIDDEN void lk__cc_free(struct lk__ccache *c);
LK__HIDDEN uint64_t lk__resolve_flags(const lk_root_t *r);

/* ---- groups ---- */
struct lk__member {
	struct lk__member *next, *prev;
	lk_group_t *g;
	bool cancel_seen;
	void (*cancel)(struct lk__member *m);
};
struct lk_group {
	struct lk__member *head;
	bool cancelled;
};
/* Returns -ECANCELED (and does not join) if @g is already cancelled. */
LK__HIDDEN int lk__group_join(lk_group_t *g, struct lk__member *m,
			      void (*cancel)(struct lk__member *));
LK__HIDDEN void lk__group_leave(struct lk__member *m);

/* ---- async helpers ---- */
extern __thread struct lk_stats lk__st;

/* An lk_cred_t is the async layer's credential set (async_cred.h). */
static inline struct async__cred *lk__x(const lk_cred_t *c)
{
	return (struct async__cred *)(uintptr_t)c;
}

/* async_submit_cb() as the user of @cred (NULL: our own), or the plain
 * system call (async__exec_as, the async layer's dispatcher) when this
 * thread has no engine. Same return convention. */
LK__HIDDEN long lk__submit(const lk_cred_t *cred, unsigned long flags,
			   long *res, long call, const unsigned long *args,
			   void (*cb)(void *, long), void *arg);
/* One wait round: parks the fibril on @wq, or outside a fibril drives the
 * engine once (process, poll, process). Callers loop on their condition. */
LK__HIDDEN void lk__wait(struct fibril_waitq *wq);
/* statx of an fd (cached attributes: right after open they are fresh). */
LK__HIDDEN int lk__fstatx(int fd, unsigned mask, struct statx *stx);

/* ---- operations (lk_open*) ---- */
struct lk__walk;
struct lk_op {
	struct lk__member m;
	lk_root_t *root;
	struct async__cred *cred;      /* held; NULL: our own */
	struct lk__walk *walk;     /* lk_lookup_start with LK_LOOKUP_* flags */
	lk_lookup_cb lcb;          /* lk_lookup_start's callback */
	struct open_how how;
	long res;
	long cookie;
	bool done, cancelled, abandoned;
	lk_open_cb cb;             /* callback mode; NULL in blocking mode */
	void *arg;
	struct lk_file file;
	struct fibril_waitq wq;
	char path[];
};

/* ---- arena: names, freed from the oldest block on ---- */
struct lk__ablk {
	struct lk__ablk *next;
	size_t used, cap;
	uint64_t last;             /* highest absolute record index stored */
	char data[];
};
struct lk__arena {
	struct lk__ablk *head, *tail;
};
LK__HIDDEN char *lk__arena_put(struct lk__arena *a, const char *s, size_t len,
			       uint64_t idx);
LK__HIDDEN void lk__arena_release(struct lk__arena *a, uint64_t below);
LK__HIDDEN void lk__arena_free(struct lk__arena *a);

/* ---- the underlying scan ("flight"), shared by identical scans ---- */
enum { REC_NEW = 0, REC_PENDING, REC_DONE };

/* Bytes of state a sorted scan keeps per entry besides its name: a
 * record and its sorted position (index and key). lookup_flight.c
 * checks the structures against it; lookup.h and libfibril(3) quote it. */
#define LK__ENTRY_STATE_BYTES 92

/* Compact per-entry state (LK__ENTRY_STATE_BYTES with the order index):
 * what an HTTP listing or ls -l needs, not a whole struct statx. */
struct lk__rec {
	const char *name;
	char *link;
	uint64_t ino, size, blocks;
	int64_t mtime;
	uint32_t mtime_nsec, nlink, uid, gid;
	uint16_t namelen, mode, target_mode;
	int16_t err, target_err;
	uint8_t state, dtype;
	bool mount_root;           /* STATX_ATTR_MOUNT_ROOT */
};

/* One entry's statx as a record keeps it (lookup_batch.c fills it on a
 * pool thread; slots fill it from their own statx). */
struct lk__sres {
	uint64_t ino, size, blocks;
	int64_t mtime;
	uint32_t mtime_nsec, nlink, uid, gid;
	uint16_t mode;
	int16_t err;
	bool mount_root;
};
LK__HIDDEN void lk__sres_from_statx(struct lk__sres *r, const struct statx *s);
/* Stores a successful stat in @rec. */
LK__HIDDEN void lk__rec_set_stat(struct lk__rec *rec, const struct lk__sres *r);

struct lk__flight;
struct lk__slot {
	struct lk__flight *f;
	struct lk__slot *next;     /* free list */
	size_t idx;                /* record (local index) */
	int step;
	long res, cookie;
	bool busy;
	bool sync;                 /* a mount root's lstat, asked again in sync */
	char *buf;                 /* readlink target / joined path */
	struct open_how how;
	struct statx stx;
};

/* Batched stats (lookup_batch.c): on a local file system a run of
 * entries is stat'ed by one ASYNC_CALL on a pool thread, plain statx
 * calls in a loop, instead of one ring round trip each. */
#define LK__BATCH_MAX 1024
/* How many records ahead a loop over records in name order asks for
 * (their places in memory are random: a miss each, ~50 ns here). */
#define LK__AHEAD 8
struct lk__batch {
	struct lk__flight *f;
	struct lk__batch *next, *prev;   /* flight's batches in flight; free list */
	long res, cookie;
	int dirfd, atflags;              /* read by the pool thread */
	unsigned n;
	const char *names[LK__BATCH_MAX];/* arena names: stable while in flight */
	size_t idx[LK__BATCH_MAX];       /* records (local index): engine's thread */
	struct lk__sres out[LK__BATCH_MAX]; /* written by the pool thread */
};

enum { PH_NAMES = 0, PH_READY };

/* A sorted position: the record's index and its sort key (lookup_sort.c).
 * Packed: 12 bytes per entry, what a separate index and key array took. */
struct lk__ord {
	uint64_t key;
	uint32_t idx;
} __attribute__((packed));

struct lk__flight {
	struct lk__flight *next;   /* single-flight table (this thread) */
	lk_root_t *root;
	struct async__cred *cred;      /* held: every call runs as this user */
	int dirfd;
	char *reldir;
	uint64_t dev, ino;
	int64_t mtime_sec;
	uint32_t mtime_nsec, dev_major, dev_minor;
	enum lk_sort sort;
	unsigned flags;            /* LK_SCAN_* that shape the result */
	bool listed, root_dir, streaming;
	bool eof, need_stat_all, stopped, inline_getdents;
	bool background;           /* submit with ASYNC_F_BACKGROUND */
	bool batched;              /* local fs: stats in batches (lk__batch) */
	bool batch_bg;             /* ... submitted with ASYNC_F_BACKGROUND */
	bool stat_early;           /* sorted: stat in directory order until PH_READY */
	bool statted;              /* a stat was issued: joinable only by a scan
	                              that accepts attributes this old: */
	uint64_t statted_ns;       /* ... when the first one was issued */
	struct lk__batch *fill;    /* collected, not yet issued (entries PENDING) */
	struct lk__batch *batches; /* issued, callback not yet run */
	struct lk__batch *free_batches;
	unsigned inline_left;      /* sorted: getdents calls still run inline */
	int phase;
	int err;
	unsigned refs;             /* consumers + temporary holds */
	unsigned active;           /* consumers not cancelled */
	unsigned inflight;         /* calls the kernel/a worker still owns */
	unsigned busy, cap;        /* slots in use / allowed */
	struct lk__slot *free_slots;
	struct lk__slot **slots;   /* every slot, to cancel or re-index */
	unsigned nslots;
	/* records: local index i is absolute base + i (streaming compacts) */
	struct lk__rec *recs;
	size_t nrec, caprec, stat_next;
	uint64_t base;
	struct lk__arena names;
	/* Sorted scans: order[] is put in place lazily (lookup_sort.c):
	 * order[0..nsorted) is final, the rest is split by the final
	 * positions in bounds[] (a stack, smallest on top). */
	struct lk__ord *order;
	size_t norder, ndone, nsorted;
	uint32_t *bounds;
	unsigned nbounds, capbounds;
	/* getdents */
	char *gbuf;
	size_t gbuf_size;
	long gres, gcookie;
	bool gpending;
	struct lk_scan *consumers;
	bool notifying;
	/* lookup_place.c */
	bool placed, parked;
	bool start_pending;        /* placed while parked, its start on the way */
	long start_res;
	struct lk__flight *next_place;
};

/* A sorted scan reads all names before its first entry: this many
 * getdents calls (64 KiB, ~2,000 names each) run inline, so that a
 * cached directory of up to ~8,000 entries never parks; the rest go
 * through the pool, off the caller's thread. Inline, 100,000 names held
 * the loop ~18 ms (small-file p99 during back-to-back listings: 31 ms,
 * 1.1 ms unloaded); a pool round trip costs ~30 us per call. */
#define LK__INLINE_GETDENTS 4

/* A consumer (what lk_scan_open returns). */
struct lk_scan {
	struct lk__member m;
	struct async__cred *cred;      /* held (o.cred) */
	struct lk_scan *next_c, *prev_c;   /* flight's consumer list */
	struct lk__flight *f;
	lk_root_t *root;
	struct lk_op *op;          /* directory open in flight */
	struct lk_scan_opts o;
	char *after;
	char *reldir;
	unsigned window;           /* once the file system is known */
	int err;
	bool cancelled, ended, counted;
	size_t pos, hint, delivered;
	struct lk_entry *batch;
	void (*cb)(void *);
	void *cb_arg;
	struct fibril_waitq wq;
};

/* Entries delivered at a time, whatever the window: the caller renders
 * them while they are still in cache (an lk_entry holds a whole struct
 * statx: 4096 of them are 1.2 MiB, beyond a core's L2). */
#define LK__DELIVER_MAX 512

/* lookup_root.c: lk_open_start() as the user of @cred. */
LK__HIDDEN int lk__open_start(lk_root_t *r, const char *relpath, int oflags,
			      lk_group_t *g, const lk_cred_t *cred,
			      struct lk_file *out, lk_open_cb cb, void *arg,
			      lk_op_t **opp);
LK__HIDDEN void lk__op_free(struct lk_op *op);
/* lk_open() as the user of @cred. */
/* Parks until @op completes (true: its result is in op->res) or is
 * cancelled first (false: @op is abandoned and frees itself later). */
LK__HIDDEN bool lk__op_wait(struct lk_op *op);
LK__HIDDEN int lk__open_wait(lk_root_t *r, const char *relpath, int oflags,
			     lk_group_t *g, const lk_cred_t *cred,
			     struct lk_file *out);

/* The flight's files, each calling only those after it here:
 * lookup_scan.c (the public scan calls) -> lookup_flight.c (drives the
 * flight: submits its calls, handles their completions) ->
 * lookup_share.c (a flight's life and the single-flight table) ->
 * lookup_batch.c (batches of stats), lookup_sort.c (the order) and
 * lookup_place.c (the bound on flights doing I/O). */

/* lookup_flight.c */
LK__HIDDEN void lk__flight_pump(struct lk__flight *f);
LK__HIDDEN void lk__flight_notify(struct lk__flight *f);
/* True when lk_scan_next() has something to say to @s. */
LK__HIDDEN bool lk__flight_ready(struct lk_scan *s);

/* lookup_share.c */
LK__HIDDEN int lk__flight_attach(struct lk_scan *s, int dirfd,
				 const struct statx *dstx);
LK__HIDDEN void lk__flight_detach(struct lk_scan *s);
LK__HIDDEN void lk__flight_deactivate(struct lk__flight *f);
LK__HIDDEN void lk__flight_unref(struct lk__flight *f);
/* After a completion on a stopped flight. */
LK__HIDDEN void lk__flight_maybe_free(struct lk__flight *f);
LK__HIDDEN void lk__flight_compact(struct lk__flight *f, size_t below);
/* Until then (fibril_now_ns()), new flights read names through the
 * pool: a getdents that ran inline was slow (lookup_flight.c sets it). */
extern __thread uint64_t lk__getdents_slow_until;

/* lookup_place.c: whether @f may issue calls now (true), or waits for
 * a place (false: queued, unless it already was). */
LK__HIDDEN bool lk__place_take(struct lk__flight *f);
/* @f has no call in flight: its place goes to the oldest flight of its
 * root waiting for one, which is returned (placed) for the caller to
 * start; NULL when none waits (or @f held no place). */
LK__HIDDEN struct lk__flight *lk__place_put(struct lk__flight *f);
/* @f is freed or stopped: out of the place lists. */
LK__HIDDEN void lk__place_forget(struct lk__flight *f);

/* lookup_batch.c: the batches' memory and contents. */
LK__HIDDEN long lk__batch_run(void *arg);  /* the ASYNC_CALL function */
/* Adds entry @i (REC_NEW) to the batch being filled; the entry counts
 * as busy and PENDING from now. false: out of memory (the caller stats
 * it alone). */
LK__HIDDEN bool lk__batch_add(struct lk__flight *f, size_t i);
/* The batch being filled, taken off the flight, when it should be
 * issued now (full, or nothing else in flight); else NULL. */
LK__HIDDEN struct lk__batch *lk__batch_take(struct lk__flight *f);
LK__HIDDEN unsigned lk__batch_size(const struct lk__flight *f);
/* Entry @j's result into its record (@res < 0: the call failed). */
LK__HIDDEN void lk__batch_store(struct lk__flight *f, const struct lk__batch *b,
				unsigned j, long res);
LK__HIDDEN void lk__batch_link(struct lk__flight *f, struct lk__batch *b);
LK__HIDDEN void lk__batch_unlink(struct lk__flight *f, struct lk__batch *b);
LK__HIDDEN void lk__batch_recycle(struct lk__flight *f, struct lk__batch *b);
LK__HIDDEN void lk__batch_cancel_all(struct lk__flight *f);
LK__HIDDEN void lk__batch_compact(struct lk__flight *f, size_t below);
LK__HIDDEN void lk__batch_free_all(struct lk__flight *f);

/* lookup_sort.c */
LK__HIDDEN void lk__flight_sort(struct lk__flight *f);
LK__HIDDEN size_t lk__flight_sorted(struct lk__flight *f, size_t k);
LK__HIDDEN size_t lk__scan_start_index(struct lk__flight *f, const char *after);

/* Entries @s may still be given (its o.limit, 0: no limit). */
static inline size_t lk__scan_limit(const struct lk_scan *s)
{
	return s->o.limit ? s->o.limit : SIZE_MAX;
}

/* Entries an lk_scan_next() delivers at most (LK__DELIVER_MAX). */
static inline unsigned lk__deliver_max(const struct lk_scan *s)
{
	return s->window < LK__DELIVER_MAX ? s->window : LK__DELIVER_MAX;
}

/* The record at sorted position @i (< norder), put in place first. */
static inline struct lk__rec *lk__ordered(struct lk__flight *f, size_t i)
{
	if (i >= f->nsorted)
		lk__flight_sorted(f, i + 1);
	return &f->recs[f->order[i].idx];
}

#endif
