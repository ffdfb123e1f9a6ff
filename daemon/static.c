#include "first.h"

#include "daemon/body.h"
#include "daemon/daemon.h"
#include "daemon/fcache.h"
#include "daemon/listing.h"
#include "daemon/log.h"
#include "daemon/mime.h"
#include "daemon/paths.h"
#include "daemon/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fibril/async.h>
#include <fibril/fibril.h>
#include <fibril/lookup.h>

#include "proto/accept.h"
#include "proto/cond.h"
#include "proto/etag.h"
#include "proto/httpdate.h"
#include "proto/listing.h"
#include "proto/mime.h"
#include "proto/range.h"
#include "proto/url.h"

#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_NOCTTY)

/* ---- what is served ----
 *
 * Only regular files and directories: anything else (FIFO, socket,
 * device) is refused with 403 before it is opened (opening a device runs
 * its driver; a FIFO's open wakes its writer). Each path is first opened
 * with O_PATH, which opens nothing, under the symlinks policy
 * (paths.h), its type checked, and only then opened for reading from
 * where the policy found it; the second open must find the same inode (a
 * swap in between answers 503).
 *
 * The [listing] and [dir] keys hold for the URL path and for the path
 * the file resolves to beneath the root (after its symlinks): a name
 * hidden (dotfiles = off) under either is 404, and a directory is listed
 * only if both allow it. The resolved path is asked of /proc only when
 * the path holds a symlink: the first O_PATH open goes through a root
 * that refuses every symlink, and only its -ELOOP leads to the policy.
 * A file found through a symlink outside the root (an allow tree;
 * follow or if_owner_match) has no path beneath it: the URL path's
 * settings hold, and its dotfiles setting judges the path beneath the
 * allow tree, or else the real path.
 */

/* What open_served() opened. */
struct served {
	struct lk_file f;       /* O_RDONLY */
	bool linked;            /* through a symlink: never cached */
	lk_root_t *scan_root;   /* a directory: what its listing scans (a
	                           reference), or NULL */
	char *scan_path;        /* ... and by which path (malloc'd) */
};

static void served_drop(struct served *sv)
{
	if (sv->scan_root)
		lk_root_close(sv->scan_root);
	free(sv->scan_path);
	sv->scan_root = NULL;
	sv->scan_path = NULL;
}

/* The [dir]/dotfiles rules for what @fo resolved to (not FSD_AT_PLAIN),
 * with @cfg (may be NULL) taking the stricter settings. 0, -ENOENT
 * (hidden) or -EACCES. @res receives the judged path; *beneath whether
 * it lies beneath the root. */
static int judge(const struct fsd_found *fo, const char *rel, char *res, size_t ressz,
                 int *beneath, struct conf_listing *cfg)
{
	struct conf_listing rc;
	int r = fsd_paths_judged(fo, res, ressz);

	*beneath = r;
	if (r < 0)
		return r;
	if (r)
		conf_listing_for(&fsd->conf, res, &rc);
	else {
		/* outside the root: the URL path's settings */
		size_t n = strlen(rel);
		char *url = malloc(n + 2);
		if (!url)
			return -ENOMEM;
		url[0] = '/';
		memcpy(url + 1, rel, n + 1);
		conf_listing_for(&fsd->conf, url, &rc);
		free(url);
	}
	if (rc.dotfiles == CONF_DOT_OFF && proto_path_hidden(res, strlen(res)))
		return -ENOENT;
	if (cfg) {
		cfg->enabled = cfg->enabled && rc.enabled;
		if (rc.dotfiles < cfg->dotfiles)
			cfg->dotfiles = rc.dotfiles;
	}
	return 0;
}

/* Opens @rel for serving: a regular file, or a directory if @dir_ok
 * (then with what its listing scans). Returns 0 with *out, -EPERM for
 * any other type, -ENOENT for a name the resolved path hides, -EAGAIN
 * if the file changed between the two opens, or the policy's -errno
 * (fsd_paths_resolve). @cfg, if not NULL, holds the URL path's settings
 * and receives the stricter of them and the resolved path's. */
static int open_served(struct fsd_req *rq, const char *rel, bool dir_ok,
                       struct served *out, struct conf_listing *cfg)
{
	struct fsd_found fo;
	char res[PATH_MAX];
	int beneath = 1;
	int r = fsd_paths_resolve(rq, rel, &fo);

	memset(out, 0, sizeof *out);
	out->f.fd = -1;
	if (r < 0)
		return r;
	out->linked = fo.where != FSD_AT_PLAIN;
	bool dir = S_ISDIR(fo.f.stx.stx_mode);
	if (!S_ISREG(fo.f.stx.stx_mode) && !(dir_ok && dir))
		r = -EPERM;
	else if (out->linked)
		r = judge(&fo, rel, res, sizeof res, &beneath, cfg);
	if (r == 0)
		r = lk_open(fo.root, fo.path, OPEN_FLAGS | (dir ? O_DIRECTORY : 0), rq->group,
		            &out->f);
	if (r == 0 && (out->f.stx.stx_ino != fo.f.stx.stx_ino ||
	               out->f.stx.stx_dev_major != fo.f.stx.stx_dev_major ||
	               out->f.stx.stx_dev_minor != fo.f.stx.stx_dev_minor)) {
		close(out->f.fd);
		r = -EAGAIN;
	}
	if (r == 0 && dir) {
		const char *sp;
		out->scan_root = fsd_paths_scan_root(&fo, rel, res, beneath, out->f.fd, &sp, &r);
		if (out->scan_root && !(out->scan_path = strdup(sp)))
			r = -ENOMEM;
		if (r < 0) {
			served_drop(out);
			close(out->f.fd);
		}
	}
	fsd_found_release(&fo);
	return r;
}

/* ---- responses ---- */

struct repr {
	struct lk_file f;       /* what is sent: the file or its sidecar */
	const char *encoding;   /* NULL, "br", "zstd", "gzip" */
	char etag[PROTO_ETAG_MAX];
	char lastmod[PROTO_HTTPDATE_LEN];
	struct fsd_validators v;   /* pointing at etag and lastmod */
	time_t mtime;           /* -1 when it has no HTTP-date */
	const char *ctype;
	bool linked;            /* the file came through a symlink */
};

static void add_entity_headers(struct MHD_Response *resp, const struct repr *rp)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rp->ctype);
	if (rp->encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, rp->encoding);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	fsd_resp_validators(resp, &rp->v);
}

/* Sidecar @i of FILE (FILE.br, FILE.zst, FILE.gz: mime.h) replaces it
 * when it exists, is a regular file and is not older than FILE. */
static bool try_sidecar(struct fsd_req *rq, const char *rel, struct repr *rp,
                        size_t i)
{
	char path[4096];
	struct served s;

	if ((size_t)snprintf(path, sizeof path, "%s%s", rel, fsd_sidecars[i].ext) >= sizeof path ||
	    open_served(rq, path, false, &s, NULL) < 0)
		return false;
	const struct statx_timestamp *a = &s.f.stx.stx_mtime, *b = &rp->f.stx.stx_mtime;
	bool fresh = a->tv_sec > b->tv_sec ||
	             (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
	if (!fresh) {
		close(s.f.fd);
		return false;
	}
	close(rp->f.fd);
	rp->f = s.f;
	rp->encoding = fsd_sidecars[i].coding;
	return true;
}

static void pick_sidecar(struct fsd_req *rq, const char *rel, struct repr *rp)
{
	const char *ae = rq->h.accept_encoding;
	int q[FSD_NSIDECARS];
	size_t order[FSD_NSIDECARS];

	/* Vary on every answer while sidecars are on, with or without
	 * Accept-Encoding: the choice depends on it either way. */
	if (!fsd->conf.sidecars)
		return;
	rp->v.vary = true;
	if (!ae)
		return;
	/* The client's weights decide (RFC 9110 12.5.3), ties going in the
	 * order br, zst, gz; a plain file weighed above a coding is
	 * preferred to it. */
	int qplain = proto_accept_encoding_q(ae, "identity");
	for (size_t i = 0; i < FSD_NSIDECARS; i++) {
		q[i] = proto_accept_encoding_q(ae, fsd_sidecars[i].coding);
		size_t j = i;
		for (; j > 0 && q[order[j - 1]] < q[i]; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (size_t k = 0; k < FSD_NSIDECARS; k++) {
		size_t i = order[k];
		if (q[i] <= 0 || q[i] < qplain)
			return;
		if (try_sidecar(rq, rel, rp, i))
			return;
	}
}

/* What is sent for @sv's file (owned from here on), and its validators. */
static void repr_make(struct fsd_req *rq, struct repr *rp, struct served *sv,
                      const char *rel, const char *name)
{
	char suffix[8];

	rp->f = sv->f;
	rp->linked = sv->linked;
	sv->f.fd = -1;
	rp->ctype = fsd_mime_type(name);
	pick_sidecar(rq, rel, rp);
	if (rp->encoding)
		snprintf(suffix, sizeof suffix, "-%s", rp->encoding);
	proto_etag_make(fsd->conf.etag, rp->f.stx.stx_ino, rp->f.stx.stx_size,
	                rp->f.stx.stx_mtime.tv_sec, rp->f.stx.stx_mtime.tv_nsec,
	                rp->encoding ? suffix : NULL, rp->etag);
	rp->mtime = (time_t)rp->f.stx.stx_mtime.tv_sec;
	/* RFC 9110 8.8.2.1: a modification time in the future is sent, and
	 * compared, as the time of the response (fcache.c keeps none such). */
	time_t now = time(NULL);
	if (rp->mtime > now)
		rp->mtime = now;
	/* A time before 1970 is none to the conditionals (proto/cond.h:
	 * negative), so it is sent as none too: no Last-Modified. */
	if (rp->mtime < 0 || proto_httpdate_format(rp->mtime, rp->lastmod) < 0) {
		rp->mtime = -1;
		rp->lastmod[0] = 0;
	}
	rp->v.etag = rp->etag;
	rp->v.lastmod = rp->lastmod;
}

static void respond_multipart(struct fsd_req *rq, struct repr *rp, const char *rel,
                              const struct proto_range *r, unsigned n)
{
	uint64_t total;
	int fd = rp->f.fd;

	rp->f.fd = -1;
	struct MHD_Response *resp = fsd_body_multipart(rq, fd, rel, rp->f.stx.stx_size,
	                                               rp->ctype, r, n, &total);
	if (!resp) {
		fsd_req_error(rq, 500);
		return;
	}
	if (rp->encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, rp->encoding);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	fsd_resp_validators(resp, &rp->v);
	fsd_req_respond(rq, MHD_HTTP_PARTIAL_CONTENT, resp, total);
}

/* The statx to offer the file cache with the file, or NULL: the cache
 * keys on the URL path and watches the directories on it, so a file
 * behind a symlink (another tree) or a sidecar is not cached. */
static const struct statx *cacheable(const struct repr *rp)
{
	return rp->encoding || rp->linked ? NULL : &rp->f.stx;
}

/* Range (and If-Range): answers 206 or 416 and returns true, or false
 * when the whole file is to be sent. */
static bool serve_ranges(struct fsd_req *rq, struct repr *rp, const char *rel)
{
	uint64_t size = rp->f.stx.stx_size;
	struct proto_range r[fsd->conf.max_ranges];
	struct MHD_Response *resp;
	unsigned n = 0;

	if (!rq->h.range ||
	    !proto_cond_if_range(rq->h.if_range, rp->etag, rp->mtime, time(NULL)))
		return false;
	switch (proto_range_parse(rq->h.range, strlen(rq->h.range), size, r,
	                          fsd->conf.max_ranges, &n)) {
	case PROTO_RANGE_UNSATISFIABLE:
		close(rp->f.fd);
		fsd_req_error(rq, 416);
		if (rq->resp)
			fsd_resp_content_range(rq->resp, NULL, size);
		return true;
	case PROTO_RANGE_OK:
		if (n > 1) {
			respond_multipart(rq, rp, rel, r, n);
			return true;
		}
		uint64_t len = r[0].last - r[0].first + 1;
		/* A client that only asks for ranges (a player, a resumed
		 * download) fills the cache too: its next ones are hits. */
		resp = fsd_body(rq, rp->f.fd, r[0].first, len, rel, cacheable(rp));
		if (!resp) {
			fsd_req_error(rq, 500);
			return true;
		}
		add_entity_headers(resp, rp);
		fsd_resp_content_range(resp, &r[0], size);
		fsd_req_respond(rq, MHD_HTTP_PARTIAL_CONTENT, resp, len);
		return true;
	case PROTO_RANGE_IGNORE:
		break;
	}
	return false;
}

/* A large file the cache did not hold, asked whole: the entry is made
 * now and, when the file's pages are resident, answers this request too
 * (from a mapping, headers and body leave in one sendmsg, where
 * libmicrohttpd sends an fd body 128 KiB per loop pass). Not for a
 * range: one sendfile of a part, which copies nothing, is cheaper than
 * a copy from a mapping made for it. True when it answered (@rp's file
 * is then closed); *offered when the file went to the cache. */
static bool from_new_entry(struct fsd_req *rq, struct repr *rp, const char *rel,
                           bool *offered)
{
	*offered = false;
	if (!cacheable(rp) || rq->method != FSD_M_GET || rq->h.range ||
	    rp->f.stx.stx_size <= fsd->conf.small_file_max || fsd_tls_conn(rq->conn))
		return false;
	*offered = true;
	if (fsd_fcache_fill_serve(rq, rel, &rp->f.stx) != 0)
		return false;
	close(rp->f.fd);
	return true;
}

static void serve_file(struct fsd_req *rq, struct served *sv,
                       const char *rel, const char *name)
{
	struct repr rp = { .encoding = NULL };
	struct MHD_Response *resp;
	bool offered;

	repr_make(rq, &rp, sv, rel, name);
	if (from_new_entry(rq, &rp, rel, &offered))
		return;
	if (fsd_req_preconditions(rq, &rp.v, rp.mtime, rp.f.stx.stx_size)) {
		close(rp.f.fd);
		return;
	}
	if (serve_ranges(rq, &rp, rel))
		return;
	uint64_t size = rp.f.stx.stx_size;
	resp = fsd_body(rq, rp.f.fd, 0, size, rel, offered ? NULL : cacheable(&rp));
	if (!resp) {
		fsd_req_error(rq, 500);
		return;
	}
	add_entity_headers(resp, &rp);
	fsd_req_respond(rq, MHD_HTTP_OK, resp, size);
}

/* Whether the target as sent ends its path with '/': "/d/.." does not,
 * though its path without dot segments ("/") does, and a listing sent
 * there would have its relative links resolved from "/d/". */
static bool raw_slash(const char *uri)
{
	size_t n = strcspn(uri, "?#");

	return n && uri[n - 1] == '/';
}

/* "/dir" → 301 "/dir/" (and "/a/b/.." → "/a/") keeping the query; the
 * path is re-encoded from its decoded form so that the Location is
 * always a clean URL. */
static void redirect_slash(struct fsd_req *rq, const struct proto_target *t)
{
	size_t cap = 3 * t->pathlen + t->querylen + 4;
	char *loc = malloc(cap);

	if (!loc) {
		fsd_req_error(rq, 500);
		return;
	}
	size_t n = proto_url_encode(t->path, t->pathlen, loc, cap, PROTO_ENC_KEEP_SLASH);
	if (!t->trailing_slash)
		loc[n++] = '/';
	if (t->query) {
		loc[n++] = '?';
		memcpy(loc + n, t->query, t->querylen);
		n += t->querylen;
	}
	loc[n] = 0;
	fsd_req_redirect(rq, 301, loc);
	free(loc);
}

/* @d (a directory) is closed and its scan root dropped on return. */
static void serve_dir(struct fsd_req *rq, struct served *d,
                      const struct proto_target *t, const char *rel,
                      struct conf_listing *cfg)
{
	int r;

	if (!t->trailing_slash || !raw_slash(rq->uri)) {
		close(d->f.fd);
		redirect_slash(rq, t);
		return;
	}
	if (fsd->conf.index[0]) {
		char ipath[PATH_MAX];
		struct served fi;
		if ((size_t)snprintf(ipath, sizeof ipath, "%s%s", t->path + 1,
		                     fsd->conf.index) >= sizeof ipath) {
			close(d->f.fd);
			fsd_req_error(rq, 414);
			return;
		}
		/* A hidden, missing or unusual (directory, FIFO...) index is no
		 * index: the directory is listed. */
		r = open_served(rq, ipath, false, &fi, NULL);
		if (r == 0) {
			close(d->f.fd);
			serve_file(rq, &fi, ipath, fsd->conf.index);
			return;
		}
		if (r != -ENOENT && r != -EPERM) {
			close(d->f.fd);
			fsd_req_fs_error(rq, "open", ipath, r);
			return;
		}
	}
	char relbuf[PATH_MAX];
	size_t rl = strlen(rel);
	if (rl >= sizeof relbuf) {
		close(d->f.fd);
		fsd_req_error(rq, 414);
		return;
	}
	memcpy(relbuf, rel, rl + 1);
	if (rl > 1 && relbuf[rl - 1] == '/')
		relbuf[rl - 1] = 0;
	r = fsd_listing_handle(rq, &d->f, t->path, relbuf, d->scan_root, d->scan_path, cfg);
	if (r < 0)
		fsd_req_error(rq, 403);
}

int fsd_static_from_cache(struct fsd_req *rq)
{
	char buf[8192];
	struct proto_target t;

	if (!fsd_fcache_active() ||
	    (rq->method != FSD_M_GET && rq->method != FSD_M_HEAD) ||
	    proto_url_parse(rq->uri, strlen(rq->uri), buf, sizeof buf, &t) < 0 ||
	    t.trailing_slash)
		return 1;
	/* (only files that were served are cached, and only by a path
	 * without symlinks: what the cache holds passed the checks below) */
	return fsd_fcache_serve(rq, proto_url_relpath(t.path));
}

void fsd_static_handle(struct fsd_req *rq)
{
	char buf[8192];
	struct proto_target t;
	struct conf_listing cfg;
	struct served f;
	const char *rel, *name;
	int r;

	if (rq->method == FSD_M_OTHER) {
		fsd_req_error(rq, 405);
		return;
	}
	if (rq->method == FSD_M_OPTIONS) {
		fsd_req_options(rq);
		return;
	}
	r = proto_url_parse(rq->uri, strlen(rq->uri), buf, sizeof buf, &t);
	if (r < 0) {
		fsd_req_error(rq, r == -ENAMETOOLONG ? 414 : 400);
		return;
	}
	rel = proto_url_relpath(t.path);
	name = strrchr(t.path, '/') + 1;
	/* A hidden name answers as a missing one, before any lookup. */
	conf_listing_for(&fsd->conf, t.path, &cfg);
	if (cfg.dotfiles == CONF_DOT_OFF && proto_path_hidden(t.path, t.pathlen)) {
		fsd_req_error(rq, 404);
		return;
	}
	/* (the access handler asked the small-file cache already) */
	r = lk_group_new(&rq->group);
	if (r < 0) {
		fsd_req_error(rq, 503);
		return;
	}
	r = open_served(rq, rel, true, &f, &cfg);
	if (r < 0) {
		fsd_req_fs_error(rq, "open", rel, r);
		return;
	}
	if (S_ISDIR(f.f.stx.stx_mode)) {
		serve_dir(rq, &f, &t, rel, &cfg);
		served_drop(&f);
		return;
	}
	if (t.trailing_slash) {
		/* "/file.txt/": a file is not a directory */
		close(f.f.fd);
		fsd_req_error(rq, 404);
		return;
	}
	serve_file(rq, &f, rel, name);
}
