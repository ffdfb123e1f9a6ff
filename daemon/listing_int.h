/*
 * Directory listings, private to daemon/listing*.c.
 *
 *   listing.c         the hook: parameters, negotiation, the bound, the
 *                     first window on the request fibril, 304, buffered
 *                     or streamed response.
 *   listing_run.c     one listing being rendered: rows, compression,
 *                     validator, headers (for the hook and the stream).
 *   listing_stream.c  the streamed response: MHD content reader fed by
 *                     lk_scan_next_cb(), suspend/resume around waits.
 *   listing_params.c  the query, Accept and Accept-Encoding.
 *   listing_queue.c   places in max_listings, the queue of listings
 *                     waiting for one.
 *   lcache.c          the listing cache (lcache.h), used by the hook,
 *                     the run (fills) and the stream.
 * Rows are rendered by proto/listing.h.
 *   listing_gzip.c    streaming gzip (zlib).
 *   listing_etag.c    the listing validator.
 *
 * Everything here belongs to one worker thread.
 */
#ifndef FSD_LISTING_INT_H
#define FSD_LISTING_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <zlib.h>

#include <fibril/lookup.h>

#include "daemon/daemon.h"
#include "proto/buf.h"
#include "proto/listing.h"
#include "proto/url.h"

/* ---- request parameters (listing_params.c) ---- */

/* Pages are computed whole before the headers (the Link header needs
 * the next cursor); a larger limit is clamped to this. */
#define LST_MAX_LIMIT 100000u

struct lst_params {
	struct proto_listq q;     /* as parsed; q.after points into qbuf */
	char *qbuf;
	enum proto_list_format fmt;  /* effective (never DEFAULT) */
	enum proto_list_sort sort;   /* effective (never DEFAULT) */
	bool fmt_given;           /* ?format= (else negotiated: Vary: Accept) */
	bool gzip;
};

/* Parses the query of @uri into @p (defaults from @cfg) and negotiates
 * format and gzip from @h. Returns 0 or an HTTP status (400, 500). */
int lst_params_parse(struct lst_params *p, const char *uri,
                     const struct fsd_hdrs *h, const struct conf_listing *cfg);
void lst_params_free(struct lst_params *p);

/* ---- gzip (listing_gzip.c) ---- */
struct lst_gz {
	/* Heap-allocated: zlib's state points back at its z_stream, so the
	 * z_stream must not move when the run is handed to the stream. */
	z_stream *z;
};
int lst_gz_init(struct lst_gz *g);
/* Compresses all of @in into @out; @flush is Z_NO_FLUSH, Z_SYNC_FLUSH
 * or Z_FINISH. Empties @in. 0 or -ENOMEM/-EIO. */
int lst_gz_run(struct lst_gz *g, struct proto_buf *in, struct proto_buf *out,
               int flush);
void lst_gz_end(struct lst_gz *g);

/* ---- ETag (listing_etag.c) ---- */
struct lst_etag {
	uint64_t h;
	size_t n;
	unsigned char buf[1024];    /* pieces not hashed yet */
};
void lst_etag_init(struct lst_etag *t, const struct lst_params *p,
                   const char *urlpath);
void lst_etag_entry(struct lst_etag *t, const struct lk_entry *e);
/* Writes W/"..." (NUL-terminated) into @out (>= 32 bytes). @more: the
 * page has a successor. */
void lst_etag_final(const struct lst_etag *t, bool more, char *out);

/* ---- places and the queue (listing_queue.c) ---- */

/* What makes two scans share one (lk_scan_open: same directory, same
 * mtime, same order and flags). */
struct lst_key {
	uint64_t ino;
	int64_t mtime_sec;
	uint32_t mtime_nsec, dev_major, dev_minor;
	unsigned sort, flags;
	bool shared;                /* false: never shared (unsorted) */
};
void lst_key_make(struct lst_key *k, const struct lk_file *dir,
                  const struct lk_scan_opts *o);
struct lst_slot;
/* On the request fibril: a place in max_listings for a scan keyed @k
 * (shared with a running identical scan), waiting in the queue if
 * needed. NULL when @rq was answered instead (503 + Retry-After). */
struct lst_slot *lst_slot_take(struct fsd_req *rq, const struct lst_key *k,
                               const char *urlpath);
/* Gives a place back (NULL: nothing); the next waiters get it. */
void lst_slot_put(struct lst_slot *s);
/* The worker stops: every waiter gets 503. */
void lst_queue_stop(void);

/* ---- one listing being rendered (listing_run.c) ---- */
struct lst_run {
	struct lst_params p;
	struct proto_listing l;   /* the renderer; l.path is urlpath */
	char *urlpath, *relpath;  /* owned copies (the stream outlives the request) */
	lk_root_t *root;          /* scanned beneath this root (a reference) ... */
	char *scanpath;           /* ... by this path (the symlinks policy's, paths.h) */
	lk_scan_t *scan;
	/* Started before the scan (a large directory): the scan is opened
	 * by the stream, from @dir (fd owned) with @so (after, flags...). */
	bool deferred;
	struct lk_file dir;
	struct lk_scan_opts so;
	struct proto_buf raw;     /* rendered, waiting for the compressor (gzip only) */
	struct proto_buf out;     /* bytes for the wire */
	size_t out_off;           /* of which sent (streaming) */
	struct lst_gz gz;
	struct lst_etag tag;
	size_t count;             /* entries rendered */
	bool render;              /* false: only hash (If-None-Match pass) */
	bool show_hidden;         /* dotfiles listed: symlink targets may name them */
	bool more;                /* an entry exists past p.limit */
	char *cursor;             /* name of the page's last entry (limit reached) */
	struct lst_slot *slot;    /* its place in max_listings, until the scan ends */
	/* The listing cache's entry being filled (lcache.h); a deferred
	 * run's is not yet watched (the stream has it watched). */
	struct lc_dir *fill;
	bool no_share;            /* a scan of its own (LK_SCAN_NO_SHARE) */
	bool finished;            /* lst_run_finish() done */
};

/* The scan's options for @r's parameters and @cfg (sort, window,
 * page, flags); @group cancels it with the request, NULL for one the
 * stream cancels itself. */
void lst_run_scan_opts(struct lst_run *r, const struct conf_listing *cfg,
                       lk_group_t *group, struct lk_scan_opts *o);
/* Opens the deferred scan (the stream's first read, on the loop
 * thread: lk_scan_open never parks). 0 or -errno. */
int lst_run_open(struct lst_run *r);
/* The scan delivered its last entry: the cache's fill is complete. */
void lst_run_scanned(struct lst_run *r);
/* Renders and hashes a batch. 0 or -ENOMEM. */
int lst_run_feed(struct lst_run *r, const struct lk_entry *e, size_t n);
/* The end of the listing: tail, then the compressor's end (once). */
int lst_run_finish(struct lst_run *r);
/* Moves raw bytes through the compressor into out (no-op without gzip). */
int lst_run_pump(struct lst_run *r, int flush);
/* Whether the response ends with a cursor to a next page. */
bool lst_run_has_next(const struct lst_run *r);
void lst_run_etag(const struct lst_run *r, char *out);
/* Headers common to 200 and 304 answers. */
void lst_run_headers(const struct lst_run *r, struct MHD_Response *resp);
void lst_run_free(struct lst_run *r);

/* ---- the stream (listing_stream.c) ---- */

/* Builds a chunked response that sends r->out and then renders the
 * rest of r->scan from the worker's loop. Takes over everything @r owns
 * (and zeroes it), its place in max_listings included (given back when
 * the scan ends). Returns the response or NULL (all released). */
struct MHD_Response *lst_stream_response(struct fsd_req *rq, struct lst_run *r);

/* Cancels every stream of worker @w (stop): each ends its response with
 * an error, which resumes its suspended connection. */
void lst_stream_cancel_all(struct fsd_worker *w);

#endif
