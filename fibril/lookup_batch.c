/*
 * Batched stats for scans of local file systems: a run of entries is
 * stat'ed by one ASYNC_CALL, plain statx calls in a loop on a pool
 * thread, instead of one io_uring ASYNC_STATX each. A cached local statx
 * takes ~2 us, about what the submitting thread spent submitting and
 * reaping it through the ring (perf of a warm 100,000-entry listing:
 * ~20% of the worker's time in io_uring submit and completion); a batch
 * pays one submit and one completion per LK__BATCH_MAX entries, and the
 * stats run on another CPU while the worker formats.
 *
 * Never on FUSE, NFS or anything not known to be local (lk__flight_attach
 * decides): there each stat waits a round trip, and one call per entry
 * keeps dozens of them in flight at once.
 *
 * The pool thread only reads names[], dirfd and atflags and writes out[]
 * (the records may move meanwhile: realloc while names are still read,
 * compaction of a streaming scan); the engine's thread copies out[] into
 * the records when the call completes.
 *
 * This file keeps the batches and their contents; submitting them and
 * handling their completion is the driver's (lookup_flight.c).
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fibril/lookup_int.h"

void lk__sres_from_statx(struct lk__sres *r, const struct statx *s)
{
	r->ino = s->stx_ino;
	r->size = s->stx_size;
	r->blocks = s->stx_blocks;
	r->mtime = s->stx_mtime.tv_sec;
	r->mtime_nsec = s->stx_mtime.tv_nsec;
	r->nlink = s->stx_nlink;
	r->uid = s->stx_uid;
	r->gid = s->stx_gid;
	r->mode = s->stx_mode;
	r->err = 0;
	r->mount_root = (s->stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

void lk__rec_set_stat(struct lk__rec *rec, const struct lk__sres *r)
{
	rec->mode = r->mode;
	rec->nlink = r->nlink;
	rec->uid = r->uid;
	rec->gid = r->gid;
	rec->ino = r->ino;
	rec->size = r->size;
	rec->blocks = r->blocks;
	rec->mtime = r->mtime;
	rec->mtime_nsec = r->mtime_nsec;
	rec->mount_root = r->mount_root;
}

/* Batches at least this long stat through a descriptor of their own. */
#define OWN_FD_MIN 64

/* On a pool thread (or inline at the parallelism limit).
 * Every statx through a shared descriptor takes and drops a reference
 * to its file, a write to a cache line the other pool threads (and the
 * getdents on the same descriptor) write too: a warm 100,000-entry
 * listing spent 4-5% of its pool threads' time in fdget_raw. A batch's
 * own O_PATH descriptor of the directory costs one openat and one
 * close for up to LK__BATCH_MAX entries; the pool threads' CPU per
 * listing fell by about 4% (docs/BENCHMARKS.md, "listing-bench"). */
long lk__batch_run(void *arg)
{
	struct lk__batch *b = arg;
	struct statx stx;
	int own = b->n >= OWN_FD_MIN ?
		openat(b->dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	int dirfd = own >= 0 ? own : b->dirfd;
	for (unsigned j = 0; j < b->n; j++) {
		int rc = statx(dirfd, b->names[j], b->atflags, LK__STX_MASK,
			       &stx);
		/* A mount root's attributes come from no lookup of its
		 * name: DONT_SYNC would give the mounted file system's last
		 * answer, however old. */
		if (rc == 0 && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) &&
		    (b->atflags & AT_STATX_DONT_SYNC))
			rc = statx(dirfd, b->names[j],
				   b->atflags & ~AT_STATX_DONT_SYNC,
				   LK__STX_MASK, &stx);
		if (rc < 0)
			b->out[j].err = (int16_t)-errno;
		else
			lk__sres_from_statx(&b->out[j], &stx);
	}
	if (own >= 0)
		close(own);
	return 0;
}

/* Entries per batch: half the window, so that one batch is stat'ed
 * while the reader takes the other's, at most LK__BATCH_MAX. Each batch
 * costs a hand-off each way between the worker and a pool thread (an
 * eventfd write, a wake-up, a pump). A warm 100,000-entry listing over
 * HTTP, window 4096, 16 interleaved rounds: 187 ms with batches of 1024,
 * 195 ms with batches of 64 (and 208 ms with window 256, batches of 64);
 * with a single batch in flight the pool waits for the worker between
 * batches. */
unsigned lk__batch_size(const struct lk__flight *f)
{
	unsigned k = f->cap / 2;
	return k < 1 ? 1 : k > LK__BATCH_MAX ? LK__BATCH_MAX : k;
}

void lk__batch_link(struct lk__flight *f, struct lk__batch *b)
{
	b->prev = NULL;
	b->next = f->batches;
	if (f->batches)
		f->batches->prev = b;
	f->batches = b;
}

void lk__batch_unlink(struct lk__flight *f, struct lk__batch *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		f->batches = b->next;
	if (b->next)
		b->next->prev = b->prev;
}

void lk__batch_recycle(struct lk__flight *f, struct lk__batch *b)
{
	b->next = f->free_batches;
	f->free_batches = b;
}

/* @res < 0: the call never ran (cancelled at engine destruction), every
 * entry fails with it as a lone statx would. */
void lk__batch_store(struct lk__flight *f, const struct lk__batch *b,
		     unsigned j, long res)
{
	struct lk__rec *rec = &f->recs[b->idx[j]];
	f->busy--;
	if (res < 0)
		rec->err = (int16_t)res;
	else if (b->out[j].err)
		rec->err = b->out[j].err;
	else
		lk__rec_set_stat(rec, &b->out[j]);
}

bool lk__batch_add(struct lk__flight *f, size_t i)
{
	struct lk__batch *b = f->fill;
	if (!b) {
		b = f->free_batches;
		if (b)
			f->free_batches = b->next;
		else if (!(b = malloc(sizeof(*b))))
			return false;
		b->f = f;
		b->n = 0;
		b->cookie = 0;
		b->dirfd = f->dirfd;
		b->atflags = AT_SYMLINK_NOFOLLOW |
			((f->flags & LK_SCAN_LOOKUP_ATTRS) ? AT_STATX_DONT_SYNC : 0);
		f->fill = b;
	}
	struct lk__rec *rec = &f->recs[i];
	const char *name = rec->name;
	/* ".." of the root would describe a directory outside it. */
	if (f->root_dir && rec->namelen == 2 && name[0] == '.' && name[1] == '.')
		name = ".";
	rec->state = REC_PENDING;
	f->busy++;
	lk__st.statx_calls++;
	b->names[b->n] = name;
	b->idx[b->n] = i;
	b->n++;
	return true;
}

/* A partial batch waits for more entries while others are in flight
 * (their completions pump again); alone, it goes: returns the batch
 * being filled when it should be issued now, no longer being filled. */
struct lk__batch *lk__batch_take(struct lk__flight *f)
{
	struct lk__batch *b = f->fill;
	if (!b || (b->n < lk__batch_size(f) && b->n < f->busy))
		return NULL;
	f->fill = NULL;
	return b;
}

/* A running batch finishes its loop (cached local stats: microseconds);
 * a queued one is dropped. Either way batch_cb reports back. */
void lk__batch_cancel_all(struct lk__flight *f)
{
	for (struct lk__batch *b = f->batches; b; b = b->next)
		if (b->cookie > 0)
			async_cancel(b->cookie);
}

/* Streaming: records below @below are gone, the rest moved down. */
void lk__batch_compact(struct lk__flight *f, size_t below)
{
	for (struct lk__batch *b = f->batches; b; b = b->next)
		for (unsigned j = 0; j < b->n; j++)
			b->idx[j] -= below;
	if (f->fill)
		for (unsigned j = 0; j < f->fill->n; j++)
			f->fill->idx[j] -= below;
}

/* At flight_free: nothing is in flight any more. */
void lk__batch_free_all(struct lk__flight *f)
{
	free(f->fill);
	f->fill = NULL;
	while (f->free_batches) {
		struct lk__batch *b = f->free_batches;
		f->free_batches = b->next;
		free(b);
	}
}
