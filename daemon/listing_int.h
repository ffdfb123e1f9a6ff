/*
 * Directory listings, private to daemon/listing*.c (issue 7).
 *
 *   listing.c         the hook: parameters, negotiation, the bound, the
 *                     first window on the request fibril, 304, buffered
 *                     or streamed response.
 *   listing_stream.c  the streamed response: MHD content reader fed by
 *                     lk_scan_next_cb(), suspend/resume around waits.
 *   listing_render.c  HTML / JSON / NDJSON rows into a byte buffer.
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

/* ---- a growable byte buffer with a read offset ---- */
struct lst_buf {
	char *p;
	size_t len, cap;
	size_t off;        /* bytes already handed out (streaming) */
};

int lst_buf_grow(struct lst_buf *b, size_t extra);
static inline int lst_put(struct lst_buf *b, const void *s, size_t n)
{
	if (b->len + n > b->cap && lst_buf_grow(b, n) < 0)
		return -1;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}
#define LST_PUTS(b, lit) lst_put((b), (lit), sizeof(lit) - 1)
/* Drops what was handed out, keeping the rest at the front. */
void lst_buf_compact(struct lst_buf *b);
void lst_buf_free(struct lst_buf *b);

/* ---- request parameters ---- */
enum lst_fmt { LST_HTML = 0, LST_JSON, LST_NDJSON };
enum lst_sort { LST_NAME = 0, LST_SIZE, LST_MTIME, LST_NONE };

/* Pages are computed whole before the headers (the Link header needs
 * the next cursor); a larger limit is clamped to this. */
#define LST_MAX_LIMIT 100000u

struct lst_params {
	enum lst_fmt fmt;
	enum lst_sort sort;
	bool desc;            /* as the client sees it: order=desc */
	bool dirs_first;
	bool fmt_given;       /* ?format= (else negotiated: Vary: Accept) */
	bool sort_given, order_given, dirs_given;
	size_t limit;         /* 0: everything */
	char *after;          /* decoded cursor (malloc), or NULL */
	bool gzip;
	const char *urlpath;  /* decoded, ends in '/' (borrowed from the caller
	                         in the fibril, copied for a stream) */
};

/* Parses the query of @uri into @p (defaults from @cfg) and negotiates
 * format and gzip from @h. Returns 0 or an HTTP status (400). */
int lst_params_parse(struct lst_params *p, const char *uri,
                     const struct fsd_hdrs *h, const struct conf_listing *cfg);
void lst_params_free(struct lst_params *p);

/* Appends to @b a query (without '?') that reproduces @p with the
 * sort/order of @sort/@desc; with @with_page also limit= and, when
 * @after is non-NULL, the cursor. Values are percent-encoded; @html
 * separates with "&amp;" instead of "&". */
int lst_params_url(struct lst_buf *b, const struct lst_params *p,
                   enum lst_sort sort, bool desc, bool with_page,
                   const char *after, bool html);

/* ---- rendering (listing_render.c) ---- */
int lst_render_head(struct lst_buf *b, const struct lst_params *p);
/* @i: the entry's index in this response (0 for the first). */
int lst_render_entry(struct lst_buf *b, const struct lst_params *p,
                     const struct lk_entry *e, size_t i);
/* @count: entries rendered; @next: the URL of the next page, or NULL
 * (last page / no paging). */
int lst_render_tail(struct lst_buf *b, const struct lst_params *p,
                    size_t count, const char *next, size_t nextlen);
const char *lst_content_type(enum lst_fmt f);
/* Percent-encodes @n bytes of @s (an href or query value). */
int lst_put_pct(struct lst_buf *b, const char *s, size_t n, bool keep_slash);

/* ---- gzip (listing_gzip.c) ---- */
struct lst_gz {
	z_stream z;
	bool live;
};
int lst_gz_init(struct lst_gz *g);
/* Compresses all of @in (from in->off) into @out; @flush is Z_NO_FLUSH,
 * Z_SYNC_FLUSH or Z_FINISH. Consumes @in. 0 or -ENOMEM/-EIO. */
int lst_gz_run(struct lst_gz *g, struct lst_buf *in, struct lst_buf *out,
               int flush);
void lst_gz_end(struct lst_gz *g);

/* ---- ETag (listing_etag.c) ---- */
struct lst_etag {
	uint32_t crc, adler;
	uint64_t n;
};
void lst_etag_init(struct lst_etag *t, const struct lst_params *p);
void lst_etag_entry(struct lst_etag *t, const struct lk_entry *e);
/* Writes W/"..." (NUL-terminated) into @out (>= 32 bytes). @more: the
 * page has a successor. */
void lst_etag_final(const struct lst_etag *t, bool more, char *out);
/* RFC 9110 13.1.2: weak comparison against an If-None-Match value. */
bool lst_etag_match(const char *inm, const char *etag);

/* ---- one listing being rendered (listing.c) ---- */
struct lst_run {
	struct lst_params p;      /* owns p.after; p.urlpath points at urlpath */
	char *urlpath, *relpath;  /* owned copies (the stream outlives the request) */
	lk_scan_t *scan;
	struct lst_buf raw;       /* rendered, waiting for the compressor (gzip only) */
	struct lst_buf out;       /* bytes for the wire */
	struct lst_gz gz;
	struct lst_etag tag;
	size_t count;             /* entries rendered */
	bool render;              /* false: only hash (If-None-Match pass) */
	bool more;                /* an entry exists past p.limit */
	char *cursor;             /* name of the page's last entry (limit reached) */
};

/* Renders and hashes a batch. 0 or -ENOMEM. */
int lst_run_feed(struct lst_run *r, const struct lk_entry *e, size_t n);
/* The end of the listing: tail, then the compressor's end. */
int lst_run_finish(struct lst_run *r);
/* Moves raw bytes through the compressor into out (no-op without gzip). */
int lst_run_pump(struct lst_run *r, int flush);
/* The next page's URL into @b, or nothing (returns 0) when there is none. */
int lst_run_next_url(const struct lst_run *r, struct lst_buf *b);
void lst_run_etag(const struct lst_run *r, char *out);
/* Headers common to 200 and 304 answers. */
void lst_run_headers(const struct lst_run *r, struct MHD_Response *resp);
void lst_run_free(struct lst_run *r);

/* ---- the stream (listing_stream.c) ---- */

/* Builds a chunked response that sends r->out and then renders the
 * rest of r->scan from the worker's loop. Takes over everything @r owns
 * (and zeroes it), and the listing's place in rq->w->listings until the
 * response is freed. Returns the response or NULL (all released, the
 * count dropped). */
struct MHD_Response *lst_stream_response(struct fsd_req *rq, struct lst_run *r);

/* Cancels every stream of worker @w (stop): each ends its response with
 * an error, which resumes its suspended connection. */
void lst_stream_cancel_all(struct fsd_worker *w);

#endif
