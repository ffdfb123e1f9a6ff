#include "first.h"

/*
 * The listing validator. A directory's own mtime changes when names are
 * added, removed or renamed, but not when a listed file grows or is
 * touched; so the tag is a digest of everything the listing shows: for
 * every entry its name, type, size, mtime (ns), permission bits and
 * symlink target (and target type), plus the parameters that shape the
 * response (path, format, sort, order, dirs first, page, cursor) and a
 * version of the rendering. The digest is a chain of 64-bit XXH3
 * hashes, each over up to a kilobyte of those pieces, with the hash so
 * far as its seed: a validator needs to notice change, not to resist a
 * forger. (zlib's CRC-32 plus Adler-32 took a sixth of the worker's CPU
 * in a warm 100,000-entry listing; XXH3 on each short piece, two calls
 * an entry, still took 6%.) A change goes unnoticed with probability
 * about 2^-64.
 *
 * The tag is weak (W/): the same entries give the same tag whether the
 * body is gzip-compressed or not (RFC 9110 8.8.1).
 *
 * No inode goes in. Under etag = mtime-size, as for files, mtimes count
 * in whole seconds (a copy need not keep nanoseconds), and a
 * subdirectory's size is left out: it is the file system's bookkeeping
 * (ext4 directories grow and never shrink, tmpfs counts entries, btrfs
 * sums names), so two copies of a tree differ there while listing the
 * same names, and every change that matters also changes the
 * subdirectory's mtime.
 */

#include "daemon/listing_int.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

/* Bump when the rendering changes, so caches drop old pages. */
#define LST_RENDER_VERSION 1u

static void flush(struct lst_etag *t)
{
	t->h = XXH3_64bits_withSeed(t->buf, t->n, t->h);
	t->n = 0;
}

/* Where the chain breaks depends only on the pieces, not on how the
 * entries were handed in. */
static void mix(struct lst_etag *t, const void *p, size_t n)
{
	if (t->n + n > sizeof t->buf)
		flush(t);
	if (n > sizeof t->buf) {
		t->h = XXH3_64bits_withSeed(p, n, t->h);
		return;
	}
	memcpy(t->buf + t->n, p, n);
	t->n += n;
}

void lst_etag_init(struct lst_etag *t, const struct lst_params *p,
                   const char *urlpath)
{
	uint32_t hdr[8] = { LST_RENDER_VERSION, p->fmt, p->sort, p->q.desc,
	                    p->q.dirs_first, (uint32_t)p->q.limit,
	                    (uint32_t)((uint64_t)p->q.limit >> 32), 0 };

	t->h = 0;
	t->n = 0;
	mix(t, hdr, sizeof hdr);
	mix(t, urlpath, strlen(urlpath) + 1);
	if (p->q.after)
		mix(t, p->q.after, p->q.afterlen + 1);
}

void lst_etag_entry(struct lst_etag *t, const struct lk_entry *e)
{
	bool copies = fsd->conf.etag == PROTO_ETAG_MTIME_SIZE;
	struct {
		uint64_t size;
		int64_t sec;
		uint32_t nsec, mode, target_mode;
		int32_t err;
	} rec = {
		.size = copies && S_ISDIR(e->stx.stx_mode) ? 0 : e->stx.stx_size,
		.sec = e->stx.stx_mtime.tv_sec,
		.nsec = copies ? 0 : e->stx.stx_mtime.tv_nsec,
		.mode = e->stx.stx_mode,
		.target_mode = e->target_mode,
		.err = e->err,
	};

	mix(t, e->name, e->namelen + 1);
	mix(t, &rec, sizeof rec);
	if (e->link)
		mix(t, e->link, strlen(e->link) + 1);
}

void lst_etag_final(const struct lst_etag *t, bool more, char *out)
{
	uint64_t h = t->n ? XXH3_64bits_withSeed(t->buf, t->n, t->h) : t->h;

	snprintf(out, 32, "W/\"%016llx%c\"", (unsigned long long)h, more ? 'n' : 'e');
}
