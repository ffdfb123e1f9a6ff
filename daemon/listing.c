#include "first.h"

/*
 * Directory listings: the hook static.c calls for a directory
 * without an index file. See listing_int.h for the files around it.
 *
 * On the request fibril: parse the parameters, take a place in the
 * worker's bound (listing_queue.c: shared with an identical scan, or
 * waited for in the queue), start the scan (sorted by name: names are
 * read and sorted first, then stat'ed window by window), and render the
 * first entries. A large directory (LCACHE_LARGE_DIR_BYTES, lcache.h)
 * skips that: its headers and prologue go out at once and the stream
 * opens the scan. Otherwise one of:
 *  - the listing ended within LST_FIRST_BYTES of output, or it is a
 *    page (?limit=), or the client sent If-None-Match: the whole body
 *    is known, so the ETag goes in the header, 304 can be decided, and
 *    the body goes out as one buffer (with Content-Length);
 *  - otherwise the headers go out at once with what is rendered so far
 *    and the rest streams (chunked) from the worker's loop as the scan
 *    delivers it (listing_stream.c); the ETag then follows as an HTTP
 *    trailer, announced by "Trailer: ETag".
 * With If-None-Match on a listing too large to hold (LST_INM_BYTES of
 * output), the first pass only hashes; on a mismatch a second scan
 * streams the body. A revalidation that matches costs one scan and no
 * body; one that does not, two scans.
 */

#include "daemon/listing.h"
#include "daemon/listing_int.h"
#include "daemon/lcache.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "proto/etag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fibril/fibril.h>

/* Output rendered on the fibril before the headers are committed: the
 * listings that fit are answered whole (ETag in the header); a 100,000-
 * entry one starts streaming after about 500 entries. */
#define LST_FIRST_BYTES (64u * 1024)
/* Output kept while hashing for If-None-Match before we give up on
 * sending it from memory. */
#define LST_INM_BYTES (8u << 20)

/* A listing from the cache is answered whole, ETag in the header (as
 * nginx's autoindex builds its page): up to this many entries (~25 MB
 * of HTML); a larger one is scanned and streamed. */
#define LST_CACHE_WHOLE 200000u
/* ... rendered this many entries between two yields (~0.1 ms). */
#define LST_CACHE_CHUNK 1024u

static int scan_open(struct lst_run *r, const struct conf_listing *cfg,
                     struct fsd_req *rq, const struct lk_file *dir)
{
	struct lk_scan_opts o;

	lst_run_scan_opts(r, cfg, rq->group, &o);
	o.dir = dir;
	int rc = lk_scan_open(r->root, r->scanpath, &o, &r->scan);
	return rc < 0 ? rc : 0;
}

/* 304 or a whole body with its ETag in the header. */
static void respond_whole(struct fsd_req *rq, struct lst_run *r, const char *inm)
{
	char etag[32];
	struct MHD_Response *resp;
	unsigned status = MHD_HTTP_OK;

	lst_run_etag(r, etag);
	if (inm && proto_etag_match(inm, strlen(inm), etag, true) == 1) {
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_NOT_MODIFIED;
	} else {
		if (lst_run_finish(r) < 0) {
			fsd_req_error(rq, 500);
			return;
		}
		resp = MHD_create_response_from_buffer(r->out.len, r->out.data,
		                                       MHD_RESPMEM_MUST_FREE);
		if (resp)
			r->out.data = NULL;     /* MHD frees it */
	}
	if (!resp) {
		fsd_req_error(rq, 500);
		return;
	}
	lst_run_headers(r, resp);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
	if (status == MHD_HTTP_OK) {
		struct proto_buf link = { 0 };
		if (r->p.gzip)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
		/* RFC 8288: Link: <next>; rel="next" */
		if (lst_run_has_next(r) && proto_buf_puts(&link, "<") == 0 &&
		    proto_listing_next_url(&r->l, &link, r->cursor, strlen(r->cursor)) == 0 &&
		    proto_buf_append(&link, ">; rel=\"next\"", 14) == 0)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_LINK, link.data);
		proto_buf_free(&link);
	}
	fsd_req_respond(rq, status, resp, status == MHD_HTTP_OK ? r->out.len : 0);
}

/* Sets @r up for the request; false when @rq is answered instead
 * (dir->fd closed). */
static bool run_start(struct fsd_req *rq, struct lst_run *r, struct lk_file *dir,
                      const char *urlpath, const char *relpath, lk_root_t *root,
                      const char *scanpath, const struct conf_listing *cfg)
{
	int st = lst_params_parse(&r->p, rq->uri, &rq->h, cfg);

	if (st) {
		close(dir->fd);
		lst_params_free(&r->p);
		fsd_req_error(rq, (unsigned)st);
		return false;
	}
	r->urlpath = strdup(urlpath);
	r->relpath = strdup(relpath);
	r->scanpath = strdup(scanpath);
	r->root = root ? lk_root_ref(root) : NULL;
	if (!r->urlpath || !r->relpath || !r->scanpath || !r->root ||
	    (r->p.gzip && lst_gz_init(&r->gz) < 0)) {
		close(dir->fd);
		lst_run_free(r);
		fsd_req_error(rq, 500);
		return false;
	}
	r->l = (struct proto_listing){
		.format = r->p.fmt,
		.path = r->urlpath,
		.pathlen = strlen(r->urlpath),
		.sort = r->p.sort,
		.desc = r->p.q.desc,
		.dirs_first = r->p.q.dirs_first,
		.limit = r->p.q.limit,
	};
	FSD_M_INC(listings);
	lst_etag_init(&r->tag, &r->p, r->urlpath);
	return true;
}

static int begin(struct lst_run *r)
{
	return proto_listing_begin(&r->l, r->p.gzip ? &r->raw : &r->out) < 0 ? -ENOMEM : 0;
}

/* Reserves @want bytes more in @out; a large page is faulted in by
 * 2 MiB (where the kernel's transparent huge pages allow it): by 4 KiB,
 * the faults took a quarter of a 100,000-row render. */
static int out_reserve(struct proto_buf *out, size_t want)
{
	const uintptr_t huge = (uintptr_t)2 << 20;

	if (proto_buf_reserve(out, want) < 0)
		return -ENOMEM;
	uintptr_t a = ((uintptr_t)out->data + out->len + huge - 1) & ~(huge - 1);
	uintptr_t e = ((uintptr_t)out->data + out->cap) & ~(huge - 1);
	if (e > a)
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
	return 0;
}

/* A body rendered before for the same variant: 304, or its bytes. */
static void respond_body(struct fsd_req *rq, const struct lst_run *r,
                         struct lc_body *b, const char *inm)
{
	struct MHD_Response *resp;

	if (inm && proto_etag_match(inm, strlen(inm), b->etag, true) == 1) {
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		if (!resp) {
			fsd_req_error(rq, 500);
			return;
		}
		lst_run_headers(r, resp);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, b->etag);
		fsd_req_respond(rq, MHD_HTTP_NOT_MODIFIED, resp, 0);
		return;
	}
	resp = MHD_create_response_from_buffer_with_free_callback_cls(b->len, b->data,
	                                                              lcache_body_unref, b);
	if (!resp) {
		fsd_req_error(rq, 500);
		return;
	}
	lcache_body_ref(b);
	lst_run_headers(r, resp);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, b->etag);
	if (r->p.gzip)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	fsd_req_respond(rq, MHD_HTTP_OK, resp, b->len);
}

/* What shapes the body of a whole listing besides the entries: the
 * key of its rendering in the cache. */
static bool variant_of(const struct lst_run *r, char *out, size_t size)
{
	return (size_t)snprintf(out, size, "%d %d %d %d %d %s", (int)r->p.fmt, (int)r->p.sort,
	                        r->p.q.desc, r->p.q.dirs_first, r->p.gzip,
	                        r->urlpath) < size;
}

/* Answers from the listing cache: true when answered. A whole listing
 * is rendered once per variant and its bytes kept: the next requests
 * for it only send them. */
static bool from_cache(struct fsd_req *rq, struct lst_run *r, const struct statx *dir,
                       const struct lk_scan_opts *so, const char *inm)
{
	struct lc_iter it;
	struct lk_entry *b;
	size_t n;
	char variant[64 + 4096];
	bool whole = !so->after && !so->limit && variant_of(r, variant, sizeof variant);

	/* The cache keeps name order: sort=none, the directory's own order,
	 * would come back in another, under another ETag, whenever the
	 * cache filled or was dropped. */
	if (so->sort == LK_SORT_NONE || lcache_open(&it, dir, so) != 1)
		return false;
	if (it.end - it.i > LST_CACHE_WHOLE) {
		lcache_close(&it);
		return false;
	}
	struct lc_body *kept = whole ? lcache_body_find(&it, variant) : NULL;
	fsd_log(LOG_DEBUG, "listing of %s from the cache%s", r->urlpath,
	        kept ? ", as rendered before" : "");
	if (kept) {
		respond_body(rq, r, kept, inm);
		lcache_close(&it);
		return true;
	}
	/* (struct statx is large: not on the fibril's stack) */
	b = calloc(64, sizeof *b);
	int rc = b ? begin(r) : -ENOMEM;
	/* Room for the whole page at once: grown by doubling, a page of
	 * 100,000 rows was copied ~6 times over, a fifth of its cost. */
	if (rc == 0 && whole && !r->p.gzip)
		rc = out_reserve(&r->out, proto_listing_size_hint(&r->l, it.end - it.i,
		                                                   lcache_name_bytes(&it)));
	size_t since = 0;
	while (rc == 0 && (n = lcache_next(&it, b, 64)) > 0) {
		rc = lst_run_feed(r, b, n);
		/* 100,000 rows take the worker ~10 ms: its other clients
		 * are served between chunks */
		if (rc == 0 && (since += n) >= LST_CACHE_CHUNK) {
			since = 0;
			rc = lst_run_pump(r, Z_NO_FLUSH);
			fibril_yield();
		}
	}
	free(b);
	if (rc == 0 && whole && (rc = lst_run_finish(r)) == 0) {
		char etag[32];
		lst_run_etag(r, etag);
		/* (kept a while: not with the buffer's room to grow) */
		char *data = realloc(r->out.data, r->out.len + 1);
		if (data)
			r->out.data = data;
		kept = lcache_body_keep(&it, variant, r->out.data, r->out.len, etag);
	}
	lcache_close(&it);
	if (kept) {
		r->out = (struct proto_buf){ 0 };
		respond_body(rq, r, kept, inm);
		lcache_body_unref(kept);
		return true;
	}
	if (rc < 0)
		fsd_req_error(rq, 500);
	else
		respond_whole(rq, r, inm);
	return true;
}

/* Renders from the open scan until the listing ends or, without
 * If-None-Match or a page, LST_FIRST_BYTES of output are ready (*stream
 * set: the rest follows from the loop); with If-None-Match past
 * LST_INM_BYTES it only hashes. 0 or -errno. */
static int first_window(struct lst_run *r, const char *inm, bool *stream)
{
	const struct lk_entry *ents;
	size_t n;
	int rc = begin(r);

	if (rc < 0)
		return rc;
	while ((rc = lk_scan_next(r->scan, &ents, &n)) > 0) {
		if (lst_run_feed(r, ents, n) < 0)
			return -ENOMEM;
		size_t have = r->raw.len + r->out.len;
		if (!inm && !r->p.q.limit && have >= LST_FIRST_BYTES) {
			*stream = true;
			return 0;
		}
		if (inm && r->render && have >= LST_INM_BYTES) {
			r->render = false;      /* hash the rest only */
			proto_buf_free(&r->raw);
			proto_buf_free(&r->out);
		}
	}
	if (rc == 0)
		lst_run_scanned(r);
	return rc < 0 ? rc : 0;
}

/* The listing was scanned to its end: answers it whole (or 304) and
 * returns true; false for an If-None-Match that did not match a listing
 * too large to hold, which a fresh scan streams. */
static bool answer_whole(struct fsd_req *rq, struct lst_run *r, const char *inm)
{
	if (!r->render) {
		char etag[32];
		lst_run_etag(r, etag);
		if (proto_etag_match(inm, strlen(inm), etag, true) != 1)
			return false;
	}
	respond_whole(rq, r, inm);
	lst_run_free(r);
	return true;
}

/* Starts the scan over for a body to stream. 0 or -errno. */
static int rescan(struct fsd_req *rq, struct lst_run *r, const struct conf_listing *cfg)
{
	lk_scan_close(r->scan);
	r->scan = NULL;
	r->render = true;
	r->count = 0;
	r->more = false;
	lst_etag_init(&r->tag, &r->p, r->urlpath);
	if (r->p.gzip) {
		lst_gz_end(&r->gz);
		if (lst_gz_init(&r->gz) < 0)
			return -ENOMEM;
	}
	int rc = scan_open(r, cfg, rq, NULL);
	return rc < 0 ? rc : begin(r);
}

/* What is rendered so far goes out with the headers; the stream takes
 * @r over (and its place in the bound). 0 or -ENOMEM. */
static int respond_stream(struct fsd_req *rq, struct lst_run *r)
{
	if (lst_run_pump(r, Z_SYNC_FLUSH) < 0)
		return -ENOMEM;
	struct MHD_Response *resp = lst_stream_response(rq, r);
	if (!resp) {
		fsd_req_error(rq, 500);
		return 0;
	}
	fsd_req_respond(rq, MHD_HTTP_OK, resp, 0);
	return 0;
}

/* Answers from the listing cache (true), or begins the fill of @dir
 * when it may be kept: its names are watched now, or by the stream
 * when @early (after the prologue, 0.1-0.2 s for 100,000 names). */
static bool cached_or_fill(struct fsd_req *rq, struct lst_run *r, struct lk_file *dir,
                           const struct lk_scan_opts *so, bool early)
{
	for (int tries = 0;; tries++) {
		/* An unchanged directory listed lately: no scan, no place. */
		if (from_cache(rq, r, &dir->stx, so, rq->h.if_none_match))
			return true;
		/* Watches set before the scan: a whole listing may be kept. */
		int f = lcache_fill_begin(dir->fd, &dir->stx, so, &r->fill);
		if (f == LC_NONE)
			break;
		/* A filling listing stats after its watches; joining another
		 * scan could bring stats older than a change already made. */
		r->no_share = true;
		if (f == LC_FILL || tries == 2)
			break;
		lcache_wait(&dir->stx, so, fibril_now_ns() +
		            (uint64_t)fsd->conf.listing_queue_timeout * 1000000000ull);
	}
	if (r->fill && !early && lcache_fill_watch(r->fill, dir->fd, &dir->stx, r->urlpath) < 0) {
		r->fill = NULL;
		r->no_share = false;
	}
	return false;
}

int fsd_listing_handle(struct fsd_req *rq, struct lk_file *dir,
                       const char *urlpath, const char *relpath,
                       lk_root_t *root, const char *scanpath,
                       const struct conf_listing *cfg)
{
	const char *inm = rq->h.if_none_match;
	struct lst_run r = { .render = true,
	                     .show_hidden = cfg->dotfiles == CONF_DOT_LIST };
	bool stream = false;
	int rc;

	if (!cfg->enabled) {
		close(dir->fd);
		return -ENOSYS;
	}
	/* If-Match compares strongly (RFC 9110 13.1.1), and a listing's tag
	 * is weak: only "*" can match, whatever the listing holds. */
	if (rq->h.if_match && proto_etag_match(rq->h.if_match, strlen(rq->h.if_match),
	                                       "W/\"listing\"", false) != 1) {
		close(dir->fd);
		fsd_req_error(rq, 412);
		return 0;
	}
	if (!run_start(rq, &r, dir, urlpath, relpath, root, scanpath, cfg))
		return 0;
	struct lk_scan_opts so;
	struct lst_key key;
	/* A large directory lists far more than LST_FIRST_BYTES: its status,
	 * headers and prologue leave before its names are read. */
	bool early = !inm && !r.p.q.limit && dir->stx.stx_size >= LCACHE_LARGE_DIR_BYTES;
	lst_run_scan_opts(&r, cfg, NULL, &so);
	if (cached_or_fill(rq, &r, dir, &so, early)) {
		close(dir->fd);
		lst_run_free(&r);
		return 0;
	}
	lst_run_scan_opts(&r, cfg, NULL, &so);
	lst_key_make(&key, dir, &so);
	/* An identical scan that has begun its stats takes no joiner: this
	 * one needs a place of its own. */
	if (key.shared && lk_scan_joinable(r.root, &dir->stx, &so) == 0)
		key.shared = false;
	/* May wait in the queue (503 + Retry-After when it gives up). */
	r.slot = lst_slot_take(rq, &key, urlpath);
	if (!r.slot) {
		close(dir->fd);
		lst_run_free(&r);
		return 0;
	}
	if (early) {
		/* The status, headers and prologue leave now (100,000
		 * entries: the first byte after the open, not after ~20 ms of
		 * getdents and sorting, nor a fill's watches); its names are
		 * read and sorted by the stream. The scan then runs without
		 * the request's group: the stream cancels it itself (timeout,
		 * stop, client gone). */
		r.deferred = true;
		r.dir = *dir;
		lst_run_scan_opts(&r, cfg, NULL, &r.so);
		rc = begin(&r);
	} else {
		rc = scan_open(&r, cfg, rq, dir);
		close(dir->fd);
		if (rc == 0)
			rc = first_window(&r, inm, &stream);
		if (rc == 0 && !stream && answer_whole(rq, &r, inm))
			return 0;
		if (rc == 0 && !stream)
			rc = rescan(rq, &r, cfg);
	}
	if (rc == 0)
		rc = respond_stream(rq, &r);
	if (rc < 0) {
		lst_run_free(&r);
		if (rc == -ENOMEM)
			fsd_req_error(rq, 500);
		else
			fsd_req_fs_error(rq, "listing", relpath, rc);
	}
	return 0;
}

void fsd_listing_stop(struct fsd_worker *w)
{
	lst_queue_stop();
	lst_stream_cancel_all(w);
}
