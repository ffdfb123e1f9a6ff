#include "first.h"

/*
 * Directory listings: the hook static.c calls for a directory
 * without an index file. See listing_int.h for the files around it.
 *
 * On the request fibril: parse the parameters, take a place in the
 * worker's bound (503 + Retry-After beyond it), start the scan (sorted
 * by name: names are read and sorted first, then stat'ed window by
 * window), and render the first entries. A large directory (its own
 * size, LST_EARLY_DIR_BYTES) skips that: its headers and prologue go out
 * at once and the stream opens the scan. Otherwise one of:
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
#include "daemon/log.h"
#include "proto/etag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Output rendered on the fibril before the headers are committed: the
 * listings that fit are answered whole (ETag in the header); a 100,000-
 * entry one starts streaming after about 500 entries. */
#define LST_FIRST_BYTES (64u * 1024)
/* Output kept while hashing for If-None-Match before we give up on
 * sending it from memory. */
#define LST_INM_BYTES (8u << 20)
/* A directory this large (its own st_size: ext4 ~8,000 entries, tmpfs
 * ~13,000) lists far more than LST_FIRST_BYTES: its response starts
 * before the names are read (100,000 entries: the first byte after the
 * open instead of after ~20 ms of getdents and sorting). */
#define LST_EARLY_DIR_BYTES (256u * 1024)

static enum proto_ftype ftype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return PROTO_FT_REG;
	case S_IFDIR: return PROTO_FT_DIR;
	case S_IFLNK: return PROTO_FT_LNK;
	case S_IFCHR: return PROTO_FT_CHR;
	case S_IFBLK: return PROTO_FT_BLK;
	case S_IFIFO: return PROTO_FT_FIFO;
	case S_IFSOCK: return PROTO_FT_SOCK;
	}
	return PROTO_FT_UNKNOWN;
}

int lst_run_feed(struct lst_run *r, const struct lk_entry *e, size_t n)
{
	struct proto_buf *b = r->p.gzip ? &r->raw : &r->out;

	for (size_t i = 0; i < n; i++) {
		if (r->p.q.limit && r->count == r->p.q.limit) {
			r->more = true;   /* the extra entry asked for: not shown */
			break;
		}
		lst_etag_entry(&r->tag, &e[i]);
		if (e[i].err) {
			/* Logged, never shown: the entry is listed as "unknown". */
			char path[4096 + 256];
			snprintf(path, sizeof path, "%s/%s", r->relpath, e[i].name);
			fsd_log_fs(LOG_WARNING, "listing stat", path, e[i].err);
		}
		/* A target only for a link that resolves beneath the root (no
		 * path outside it is ever shown), and none naming a hidden file. */
		const char *tg = e[i].link;
		if (tg && (!e[i].target_mode ||
		           (!r->show_hidden && proto_path_hidden(tg, strlen(tg)))))
			tg = NULL;
		if (r->render) {
			struct proto_entry pe = {
				.name = e[i].name,
				.namelen = e[i].namelen,
				.type = e[i].err ? PROTO_FT_UNKNOWN : ftype(e[i].stx.stx_mode),
				.size = e[i].stx.stx_size,
				.mtime_sec = e[i].stx.stx_mtime.tv_sec,
				.mtime_nsec = e[i].stx.stx_mtime.tv_nsec,
				.mode = e[i].stx.stx_mode,
				.target = tg,
				.targetlen = tg ? strlen(tg) : 0,
			};
			if (proto_listing_entry(&r->l, b, &pe) < 0)
				return -ENOMEM;
		}
		r->count++;
		if (r->p.q.limit && r->count == r->p.q.limit) {
			free(r->cursor);
			r->cursor = strdup(e[i].name);
			if (!r->cursor)
				return -ENOMEM;
		}
	}
	return 0;
}

int lst_run_pump(struct lst_run *r, int flush)
{
	if (!r->p.gzip)
		return 0;
	if (!r->raw.len && flush == Z_NO_FLUSH)
		return 0;
	return lst_gz_run(&r->gz, &r->raw, &r->out, flush);
}

bool lst_run_has_next(const struct lst_run *r)
{
	/* A cursor only exists in name order (lk: LK_SORT_NAME without
	 * dirs first). */
	return r->more && r->cursor && r->p.sort == PROTO_SORT_NAME &&
	       !r->p.q.dirs_first;
}

int lst_run_finish(struct lst_run *r)
{
	struct proto_buf *b = r->p.gzip ? &r->raw : &r->out;
	bool next = lst_run_has_next(r);

	if (proto_listing_end(&r->l, b, next ? r->cursor : NULL,
	                      next ? strlen(r->cursor) : 0) < 0)
		return -ENOMEM;
	return lst_run_pump(r, Z_FINISH) < 0 ? -ENOMEM : 0;
}

void lst_run_etag(const struct lst_run *r, char *out)
{
	lst_etag_final(&r->tag, r->more, out);
}

void lst_run_headers(const struct lst_run *r, struct MHD_Response *resp)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        proto_listing_content_type(r->p.fmt));
	/* The format may come from Accept, the coding from Accept-Encoding. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY,
	                        r->p.fmt_given ? "Accept-Encoding" : "Accept, Accept-Encoding");
	/* Listings change without the directory's own mtime changing:
	 * caches revalidate every time (the ETag makes that cheap). */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
}

void lst_run_free(struct lst_run *r)
{
	if (r->scan)
		lk_scan_close(r->scan);
	if (r->deferred)
		close(r->dir.fd);
	lst_gz_end(&r->gz);
	proto_buf_free(&r->raw);
	proto_buf_free(&r->out);
	lst_params_free(&r->p);
	free(r->cursor);
	free(r->urlpath);
	free(r->relpath);
	memset(r, 0, sizeof *r);
}

static void scan_opts(struct lst_run *r, const struct conf_listing *cfg,
                      lk_group_t *group, struct lk_scan_opts *o)
{
	*o = (struct lk_scan_opts){
		.sort = r->p.sort == PROTO_SORT_SIZE ? LK_SORT_SIZE
		      : r->p.sort == PROTO_SORT_MTIME ? LK_SORT_MTIME
		      : r->p.sort == PROTO_SORT_NONE ? LK_SORT_NONE : LK_SORT_NAME,
		.window = cfg->window,
		.local_window = cfg->local_window,
		.after = r->p.q.after,
		/* One more than shown: whether a next page exists. */
		.limit = r->p.q.limit ? r->p.q.limit + 1 : 0,
		.group = group,
	};
	if (cfg->dotfiles == CONF_DOT_LIST)
		o->flags |= LK_SCAN_DOTFILES;
	if (cfg->symlink_targets == CONF_TARGETS_OFF)
		o->flags |= LK_SCAN_NO_LINKS;
	if (cfg->attrs_from_lookup)
		o->flags |= LK_SCAN_LOOKUP_ATTRS;
	if (cfg->background)
		o->flags |= LK_SCAN_BACKGROUND;
	if (r->p.q.dirs_first)
		o->flags |= LK_SCAN_DIRS_FIRST;
	/* order=asc is A-Z, smallest, oldest first. The engine orders
	 * sizes and times largest/newest first (ls -S, ls -t), names A-Z;
	 * LK_SCAN_DESC reverses that. */
	if (r->p.sort == PROTO_SORT_NAME ? r->p.q.desc
	    : (r->p.sort != PROTO_SORT_NONE && !r->p.q.desc))
		o->flags |= LK_SCAN_DESC;
}

static int scan_open(struct lst_run *r, const struct conf_listing *cfg,
                     struct fsd_req *rq, const struct lk_file *dir)
{
	struct lk_scan_opts o;

	scan_opts(r, cfg, rq->group, &o);
	o.dir = dir;
	return lk_scan_open(fsd.lkroot, r->relpath, &o, &r->scan);
}

int lst_run_open(struct lst_run *r)
{
	int rc;

	r->so.dir = &r->dir;
	rc = lk_scan_open(fsd.lkroot, r->relpath, &r->so, &r->scan);
	r->so.dir = NULL;
	close(r->dir.fd);
	r->deferred = false;
	return rc;
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

int fsd_listing_handle(struct fsd_req *rq, struct lk_file *dir,
                       const char *urlpath, const char *relpath,
                       const struct conf_listing *cfg)
{
	const char *inm = rq->h.if_none_match;
	struct lst_run r = { .render = true,
	                     .show_hidden = cfg->dotfiles == CONF_DOT_LIST };
	const struct lk_entry *ents;
	size_t n;
	bool stream = false;
	int rc, st;

	if (!cfg->enabled) {
		close(dir->fd);
		return -ENOSYS;
	}
	st = lst_params_parse(&r.p, rq->uri, &rq->h, cfg);
	if (st) {
		close(dir->fd);
		lst_params_free(&r.p);
		fsd_req_error(rq, (unsigned)st);
		return 0;
	}
	if (rq->w->listings >= fsd.conf.max_listings) {
		close(dir->fd);
		lst_params_free(&r.p);
		fsd_req_error(rq, 503);         /* with Retry-After */
		return 0;
	}
	r.urlpath = strdup(urlpath);
	r.relpath = strdup(relpath);
	if (!r.urlpath || !r.relpath || (r.p.gzip && lst_gz_init(&r.gz) < 0)) {
		close(dir->fd);
		lst_run_free(&r);
		fsd_req_error(rq, 500);
		return 0;
	}
	r.l = (struct proto_listing){
		.format = r.p.fmt,
		.path = r.urlpath,
		.pathlen = strlen(r.urlpath),
		.sort = r.p.sort,
		.desc = r.p.q.desc,
		.limit = r.p.q.limit,
	};
	rq->w->listings++;
	lst_etag_init(&r.tag, &r.p, r.urlpath);
	if (!inm && !r.p.q.limit && dir->stx.stx_size >= LST_EARLY_DIR_BYTES) {
		/* A large directory: the status, headers and prologue leave
		 * now; its names are read and sorted by the stream. The scan
		 * then runs without the request's group: the stream cancels
		 * it itself (timeout, stop, client gone). */
		r.deferred = true;
		r.dir = *dir;
		scan_opts(&r, cfg, NULL, &r.so);
		if (proto_listing_begin(&r.l, r.p.gzip ? &r.raw : &r.out) < 0) {
			rc = -ENOMEM;
			goto fail;
		}
		goto stream;
	}
	rc = scan_open(&r, cfg, rq, dir);
	close(dir->fd);
	if (rc < 0)
		goto fail;
	if (proto_listing_begin(&r.l, r.p.gzip ? &r.raw : &r.out) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	for (;;) {
		rc = lk_scan_next(r.scan, &ents, &n);
		if (rc <= 0)
			break;
		if (lst_run_feed(&r, ents, n) < 0) {
			rc = -ENOMEM;
			goto fail;
		}
		size_t have = r.raw.len + r.out.len;
		if (!inm && !r.p.q.limit && have >= LST_FIRST_BYTES) {
			stream = true;          /* the rest follows from the loop */
			break;
		}
		if (inm && r.render && have >= LST_INM_BYTES) {
			r.render = false;       /* hash the rest only */
			proto_buf_free(&r.raw);
			proto_buf_free(&r.out);
		}
	}
	if (rc < 0)
		goto fail;
	if (!stream && r.render) {
		respond_whole(rq, &r, inm);
		rq->w->listings--;
		lst_run_free(&r);
		return 0;
	}
	if (!stream) {
		/* If-None-Match on a listing too large to hold. */
		char etag[32];
		lst_run_etag(&r, etag);
		if (proto_etag_match(inm, strlen(inm), etag, true) == 1) {
			respond_whole(rq, &r, inm);
			rq->w->listings--;
			lst_run_free(&r);
			return 0;
		}
		/* Changed: a fresh scan streams the body. */
		lk_scan_close(r.scan);
		r.scan = NULL;
		r.render = true;
		r.count = 0;
		r.more = false;
		lst_etag_init(&r.tag, &r.p, r.urlpath);
		if (r.p.gzip) {
			lst_gz_end(&r.gz);
			if (lst_gz_init(&r.gz) < 0) {
				rc = -ENOMEM;
				goto fail;
			}
		}
		rc = scan_open(&r, cfg, rq, NULL);
		if (rc < 0)
			goto fail;
		if (proto_listing_begin(&r.l, r.p.gzip ? &r.raw : &r.out) < 0) {
			rc = -ENOMEM;
			goto fail;
		}
	}
stream:
	/* Streaming: what is rendered so far goes out with the headers. */
	if (lst_run_pump(&r, Z_SYNC_FLUSH) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	struct MHD_Response *resp = lst_stream_response(rq, &r);
	if (!resp) {
		fsd_req_error(rq, 500);
		return 0;
	}
	fsd_req_respond(rq, MHD_HTTP_OK, resp, 0);
	return 0;
fail:
	rq->w->listings--;
	lst_run_free(&r);
	if (rc == -ENOMEM)
		fsd_req_error(rq, 500);
	else
		fsd_req_fs_error(rq, "listing", relpath, rc);
	return 0;
}

void fsd_listing_stop(struct fsd_worker *w)
{
	lst_stream_cancel_all(w);
}
