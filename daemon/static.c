#include "first.h"

#include "daemon/body.h"
#include "daemon/daemon.h"
#include "daemon/fcache.h"
#include "daemon/listing.h"
#include "daemon/log.h"
#include "daemon/mime.h"

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
 * with O_PATH, which opens nothing, its type checked, and only then
 * opened for reading; the second open must find the same inode (a swap
 * in between answers 503).
 *
 * The [listing] and [dir] keys hold for the URL path and for the path
 * the file resolves to beneath the root (after its symlinks): a name
 * hidden (dotfiles = off) under either is 404, and a directory is listed
 * only if both allow it. The resolved path is asked of /proc only when
 * the path holds a symlink: the first O_PATH open goes through a root
 * that refuses every symlink, and only its -ELOOP leads to the real one.
 */

/* The path of @fd beneath the root, in URL form ("/a/b", "/" for the
 * root), from /proc. 0, or -EACCES (logged) when it cannot be told. */
static int resolved_path(int fd, char *out, size_t outsz)
{
	char link[40], root[PATH_MAX];
	ssize_t rn, n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fsd->rootfd);
	rn = readlink(link, root, sizeof root - 1);
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, out, outsz - 1);
	if (rn <= 0 || n <= 0 || (size_t)n >= outsz - 1) {
		fsd_log(LOG_ERR, "cannot tell where a symlink leads (/proc/self/fd: %s): refused",
		        rn <= 0 || n <= 0 ? strerror(errno) : "path too long");
		return -EACCES;
	}
	out[n] = 0;
	if (rn == 1)
		return 0;       /* the root is "/" */
	if (n < rn || memcmp(out, root, (size_t)rn) || (out[rn] && out[rn] != '/')) {
		fsd_log(LOG_ERR, "a path resolved outside the root (a mount moved?): refused");
		return -EACCES;
	}
	if (n == rn)
		memcpy(out, "/", 2);
	else
		memmove(out, out + rn, (size_t)(n - rn) + 1);
	return 0;
}

/* Opens @rel for serving: a regular file, or a directory if @dir_ok.
 * Returns 0 with *out (opened O_RDONLY), -EPERM for any other type,
 * -ENOENT for a name the resolved path hides, -EAGAIN if the file
 * changed between the two opens, or the lookup's -errno. @cfg, if not
 * NULL, holds the URL path's settings and receives the stricter of
 * them and the resolved path's. */
static int open_served(struct fsd_req *rq, const char *rel, bool dir_ok,
                       struct lk_file *out, struct conf_listing *cfg)
{
	lk_root_t *root = NULL;
	struct lk_file p;
	char res[PATH_MAX];
	bool linked = false;
	int r = -ELOOP;

	if (fsd->lknolinks) {
		root = fsd->lknolinks;
		r = lk_open(root, rel, O_PATH, rq->group, &p);
	}
	if (r == -ELOOP) {
		root = fsd->lkroot;
		linked = true;
		r = lk_open(root, rel, O_PATH, rq->group, &p);
	}
	if (r < 0)
		return r;
	bool dir = S_ISDIR(p.stx.stx_mode);
	if (!S_ISREG(p.stx.stx_mode) && !(dir_ok && dir))
		r = -EPERM;
	else if (linked && (r = resolved_path(p.fd, res, sizeof res)) == 0) {
		struct conf_listing rc;
		conf_listing_for(&fsd->conf, res, &rc);
		if (rc.dotfiles == CONF_DOT_OFF && proto_path_hidden(res, strlen(res)))
			r = -ENOENT;
		else if (cfg) {
			cfg->enabled = cfg->enabled && rc.enabled;
			if (rc.dotfiles < cfg->dotfiles)
				cfg->dotfiles = rc.dotfiles;
		}
	}
	if (r == 0)
		r = lk_open(root, rel, OPEN_FLAGS | (dir ? O_DIRECTORY : 0), rq->group, out);
	if (r == 0 && (out->stx.stx_ino != p.stx.stx_ino ||
	               out->stx.stx_dev_major != p.stx.stx_dev_major ||
	               out->stx.stx_dev_minor != p.stx.stx_dev_minor)) {
		close(out->fd);
		r = -EAGAIN;
	}
	close(p.fd);
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
};

static void add_entity_headers(struct MHD_Response *resp, const struct repr *rp)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rp->ctype);
	if (rp->encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, rp->encoding);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	fsd_resp_validators(resp, &rp->v);
}

/* Precompressed sidecars (FILE.br, FILE.zst, FILE.gz, mime.h): the first
 * one the client accepts that exists, is a regular file and is not older
 * than FILE replaces it. */
static void pick_sidecar(struct fsd_req *rq, const char *rel, struct repr *rp)
{
	const char *ae = rq->h.accept_encoding;
	char path[4096];

	/* Vary on every answer while sidecars are on, with or without
	 * Accept-Encoding: the choice depends on it either way. */
	if (!fsd->conf.sidecars)
		return;
	rp->v.vary = true;
	if (!ae)
		return;
	for (size_t i = 0; i < FSD_NSIDECARS; i++) {
		struct lk_file s;
		if (!proto_accepts_encoding(ae, fsd_sidecars[i].coding))
			continue;
		if ((size_t)snprintf(path, sizeof path, "%s%s", rel, fsd_sidecars[i].ext) >= sizeof path)
			return;
		if (open_served(rq, path, false, &s, NULL) < 0)
			continue;
		const struct statx_timestamp *a = &s.stx.stx_mtime, *b = &rp->f.stx.stx_mtime;
		bool fresh = a->tv_sec > b->tv_sec ||
		             (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
		if (!fresh) {
			close(s.fd);
			continue;
		}
		close(rp->f.fd);
		rp->f = s;
		rp->encoding = fsd_sidecars[i].coding;
		return;
	}
}

/* What is sent for @f (owned from here on), and its validators. */
static void repr_make(struct fsd_req *rq, struct repr *rp, struct lk_file *f,
                      const char *rel, const char *name)
{
	char suffix[8];

	rp->f = *f;
	f->fd = -1;
	rp->ctype = fsd_mime_type(name);
	pick_sidecar(rq, rel, rp);
	if (rp->encoding)
		snprintf(suffix, sizeof suffix, "-%s", rp->encoding);
	proto_etag_make(rp->f.stx.stx_ino, rp->f.stx.stx_size, rp->f.stx.stx_mtime.tv_sec,
	                rp->f.stx.stx_mtime.tv_nsec, rp->encoding ? suffix : NULL, rp->etag);
	rp->mtime = (time_t)rp->f.stx.stx_mtime.tv_sec;
	if (proto_httpdate_format(rp->mtime, rp->lastmod) < 0)
		rp->mtime = -1;
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
		resp = fsd_body(rq, rp->f.fd, r[0].first, len, rel, NULL);
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

static void serve_file(struct fsd_req *rq, struct lk_file *f,
                       const char *rel, const char *name)
{
	struct repr rp = { .encoding = NULL };
	struct MHD_Response *resp;

	repr_make(rq, &rp, f, rel, name);
	if (fsd_req_preconditions(rq, &rp.v, rp.mtime)) {
		close(rp.f.fd);
		return;
	}
	if (serve_ranges(rq, &rp, rel))
		return;
	uint64_t size = rp.f.stx.stx_size;
	resp = fsd_body(rq, rp.f.fd, 0, size, rel,
	                rp.encoding ? NULL : &rp.f.stx);
	if (!resp) {
		fsd_req_error(rq, 500);
		return;
	}
	add_entity_headers(resp, &rp);
	fsd_req_respond(rq, MHD_HTTP_OK, resp, size);
}

/* "/dir" → 301 "/dir/" keeping the query; the path is re-encoded from
 * its decoded form so that the Location is always a clean URL. */
static void redirect_slash(struct fsd_req *rq, const struct proto_target *t)
{
	size_t cap = 3 * t->pathlen + t->querylen + 4;
	char *loc = malloc(cap);

	if (!loc) {
		fsd_req_error(rq, 500);
		return;
	}
	size_t n = proto_url_encode(t->path, t->pathlen, loc, cap, PROTO_ENC_KEEP_SLASH);
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

static void serve_dir(struct fsd_req *rq, struct lk_file *f,
                      const struct proto_target *t, const char *rel,
                      struct conf_listing *cfg)
{
	int r;

	if (!t->trailing_slash) {
		close(f->fd);
		redirect_slash(rq, t);
		return;
	}
	if (fsd->conf.index[0]) {
		char ipath[PATH_MAX];
		struct lk_file fi;
		if ((size_t)snprintf(ipath, sizeof ipath, "%s%s", t->path + 1,
		                     fsd->conf.index) >= sizeof ipath) {
			close(f->fd);
			fsd_req_error(rq, 414);
			return;
		}
		/* A hidden, missing or unusual (directory, FIFO...) index is no
		 * index: the directory is listed. */
		r = open_served(rq, ipath, false, &fi, NULL);
		if (r == 0) {
			close(f->fd);
			serve_file(rq, &fi, ipath, fsd->conf.index);
			return;
		}
		if (r != -ENOENT && r != -EPERM) {
			close(f->fd);
			fsd_req_fs_error(rq, "open", ipath, r);
			return;
		}
	}
	char relbuf[PATH_MAX];
	size_t rl = strlen(rel);
	if (rl >= sizeof relbuf) {
		close(f->fd);
		fsd_req_error(rq, 414);
		return;
	}
	memcpy(relbuf, rel, rl + 1);
	if (rl > 1 && relbuf[rl - 1] == '/')
		relbuf[rl - 1] = 0;
	r = fsd_listing_handle(rq, f, t->path, relbuf, cfg);
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
	struct lk_file f;
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
	if (S_ISDIR(f.stx.stx_mode)) {
		serve_dir(rq, &f, &t, rel, &cfg);
		return;
	}
	if (t.trailing_slash) {
		/* "/file.txt/": a file is not a directory */
		close(f.fd);
		fsd_req_error(rq, 404);
		return;
	}
	serve_file(rq, &f, rel, name);
}
