#include "first.h"

#include "daemon/daemon.h"
#include "daemon/fcache.h"
#include "daemon/listing.h"
#include "daemon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <fibril/async.h>
#include <fibril/fibril.h>
#include <fibril/lookup.h>

#include "proto/cond.h"
#include "proto/etag.h"
#include "proto/httpdate.h"
#include "proto/mime.h"
#include "proto/range.h"
#include "proto/url.h"

#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_NOCTTY)

static struct proto_mime *mime;

int fsd_mime_load(const char *path)
{
	int r = proto_mime_new(&mime, fsd.conf.default_type);
	FILE *f;
	char *text = NULL;
	size_t cap = 0, len = 0, n;

	if (r < 0)
		return r;
	/* Start-up only (main thread, before the workers): a plain read. */
	f = fopen(path, "re");
	if (!f)
		return -errno;
	for (;;) {
		if (len + 65536 > cap) {
			char *t = realloc(text, cap = cap ? cap * 2 : 262144);
			if (!t)
				break;
			text = t;
		}
		n = fread(text + len, 1, cap - len, f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);
	if (text)
		proto_mime_load(mime, text, len);
	free(text);
	return 0;
}

const char *fsd_mime_type(const char *name)
{
	return proto_mime_lookup(mime, name, strlen(name));
}

/* Maps a lookup error to a status; anything unexpected is logged with
 * the path and errno and becomes a bare 500 (never shown to clients). */
void fsd_log_fs_req(struct fsd_req *rq, const char *what, const char *path, int err)
{
	unsigned status;

	switch (-err) {
	case ENOENT: case ENOTDIR: case EXDEV:
		status = 404;
		break;
	case EACCES: case EPERM: case ELOOP:
		status = 403;
		break;
	case ENAMETOOLONG:
		status = 414;
		break;
	case ECANCELED:
		status = 503;
		break;
	default:
		fsd_log_fs(LOG_ERR, what, path, err);
		status = 500;
	}
	fsd_req_error(rq, status);
}

/* ---- cold data: read ahead through the ring before sendfile ---- */

#ifndef __NR_cachestat
#define __NR_cachestat 451      /* Linux 6.5, same number on every arch */
#endif
struct fsd_cachestat_range { uint64_t off, len; };
struct fsd_cachestat { uint64_t nr_cache, nr_dirty, nr_writeback,
                       nr_evicted, nr_recently_evicted; };

static bool cached(int fd, uint64_t off, uint64_t len)
{
	static _Atomic int have_cachestat = 1;
	struct fsd_cachestat_range r = { off, len };
	struct fsd_cachestat cs;

	if (have_cachestat) {
		/* Counts pages over the whole range without touching them. */
		uint64_t first = off / 4096, last = (off + len - 1) / 4096;
		if (syscall(__NR_cachestat, fd, &r, &cs, 0) == 0)
			return cs.nr_cache >= last - first + 1;
		if (errno == ENOSYS)
			have_cachestat = 0;
	}
	/* Older kernels: probe the first and last byte without blocking. */
	char b;
	struct iovec iov = { &b, 1 };
	return preadv2(fd, &iov, 1, (off_t)off, RWF_NOWAIT) == 1 &&
	       preadv2(fd, &iov, 1, (off_t)(off + len - 1), RWF_NOWAIT) == 1;
}

/* Submits one call and parks until it completes; the cookie is kept in
 * rq so that a deadline or a stop can cancel it (fsd_req_cancel_calls). */
static long submit_wait(struct fsd_req *rq, long call, const unsigned long *args)
{
	long res, ck;

	ck = async_submit(0, &res, call, args);
	if (ck <= 0)
		return ck < 0 ? ck : res;
	rq->cookie = ck;
	res = wait_for_async(ck);
	rq->cookie = 0;
	return res;
}

/* The first READAHEAD_READ bytes of a cold range are read through the
 * ring (the kernel's workers, not the loop, wait for the disk); the
 * rest is announced with WILLNEED, also through the ring. sendfile,
 * which runs on the loop, then finds the pages in the cache. */
#define READAHEAD_READ (256u << 10)
static void warm(struct fsd_req *rq, int fd, uint64_t off, uint64_t len)
{
	if (!len || !rq->w->engine || cached(fd, off, len))
		return;
	uint64_t n = len < READAHEAD_READ ? len : READAHEAD_READ;
	unsigned long fa[4] = { (unsigned long)fd, (unsigned long)off,
	                        (unsigned long)len, POSIX_FADV_WILLNEED };
	submit_wait(rq, ASYNC_FADVISE, fa);
	if (rq->abandoned)
		return;
	void *buf = malloc(n);
	if (!buf)
		return;
	unsigned long ra[4] = { (unsigned long)fd, (unsigned long)buf,
	                        (unsigned long)n, (unsigned long)off };
	long r = submit_wait(rq, ASYNC_PREAD, ra);
	/* wait_for_async returned: the call is complete, buf is ours again */
	(void)r;
	free(buf);
}

/* ---- multipart/byteranges: a reader over the parts ---- */

struct mp {
	int fd;
	uint64_t size;
	unsigned n, cur;        /* parts; the one being sent */
	uint64_t part_pos;      /* bytes of part cur already sent (header + data) */
	char boundary[PROTO_BOUNDARY_MAX];
	const char *ctype;
	char hdr[256];          /* header of part cur */
	size_t hdrlen;
	struct proto_range r[];
};

static void mp_header(struct mp *m)
{
	if (m->cur < m->n)
		m->hdrlen = proto_multipart_part_header(m->hdr, sizeof m->hdr, m->boundary,
		                                        m->ctype, &m->r[m->cur], m->size);
	else
		m->hdrlen = proto_multipart_trailer(m->hdr, sizeof m->hdr, m->boundary);
}

/* Runs on the loop (libmicrohttpd's reader), after warm() made every
 * range resident: pread finds the pages in the cache. */
static ssize_t mp_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct mp *m = cls;
	size_t done = 0;

	(void)pos;              /* MHD reads sequentially */
	while (done < max && m->cur <= m->n) {
		if (m->part_pos < m->hdrlen) {
			size_t k = m->hdrlen - m->part_pos;
			if (k > max - done)
				k = max - done;
			memcpy(out + done, m->hdr + m->part_pos, k);
			done += k;
			m->part_pos += k;
			continue;
		}
		if (m->cur == m->n) {
			m->cur++;       /* trailer sent */
			break;
		}
		uint64_t plen = m->r[m->cur].last - m->r[m->cur].first + 1;
		uint64_t at = m->part_pos - m->hdrlen;
		if (at < plen) {
			size_t k = plen - at < max - done ? (size_t)(plen - at) : max - done;
			ssize_t r = pread(m->fd, out + done, k, (off_t)(m->r[m->cur].first + at));
			if (r <= 0)
				return done ? (ssize_t)done : MHD_CONTENT_READER_END_WITH_ERROR;
			done += (size_t)r;
			m->part_pos += (uint64_t)r;
			continue;
		}
		m->cur++;
		m->part_pos = 0;
		mp_header(m);
	}
	if (!done && m->cur > m->n)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return (ssize_t)done;
}

static void mp_free(void *cls)
{
	struct mp *m = cls;

	close(m->fd);
	free(m);
}

/* ---- responses ---- */

struct repr {
	struct lk_file f;       /* what is sent: the file or its sidecar */
	const char *encoding;   /* NULL, "br", "zstd", "gzip" */
	bool vary;              /* Accept-Encoding decided it */
	char etag[PROTO_ETAG_MAX];
	char lastmod[PROTO_HTTPDATE_LEN];
	const char *ctype;
};

static void add_validators(struct MHD_Response *resp, const struct repr *rp)
{
	if (rp->lastmod[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, rp->lastmod);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, rp->etag);
	if (rp->vary)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
}

static void add_entity_headers(struct MHD_Response *resp, const struct repr *rp)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rp->ctype);
	if (rp->encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, rp->encoding);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	add_validators(resp, rp);
}

/* Body [off, off+len) of @fd: small bodies are read (inline when cached)
 * into one buffer so that headers and body leave in one send
 * (docs/DESIGN.md, "Static files":
 * ~80k vs ~33k req/s); large ones go out with sendfile after read-ahead.
 * Takes ownership of fd. */
static struct MHD_Response *body(struct fsd_req *rq, int fd, uint64_t off,
                                 uint64_t len, const char *path,
                                 const struct statx *cache_stx)
{
	struct MHD_Response *resp;

	if (rq->method == FSD_M_GET && len <= fsd.conf.small_file_max) {
		char *buf = malloc(len ? len : 1);
		long r = 0;
		uint64_t got = 0;

		if (!buf) {
			close(fd);
			return NULL;
		}
		while (got < len) {
			r = fibril_pread(fd, buf + got, len - got, (int64_t)(off + got));
			if (r <= 0)
				break;
			got += (uint64_t)r;
		}
		close(fd);
		if (got < len) {
			free(buf);
			if (r < 0)
				fsd_log_fs(LOG_ERR, "read", path, (int)r);
			else
				fsd_log(LOG_ERR, "read %s: file shrank while being sent", path);
			return NULL;
		}
		if (cache_stx)
			fsd_fcache_put(rq, path, cache_stx, buf, len);
		return MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	}
	if (rq->method == FSD_M_GET)
		warm(rq, fd, off, len);
	resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
	if (!resp)
		close(fd);
	return resp;
}

static void respond_multipart(struct fsd_req *rq, struct repr *rp,
                              const struct proto_range *r, unsigned n)
{
	static _Atomic uint64_t counter;
	uint64_t size = rp->f.stx.stx_size;
	struct mp *m = calloc(1, sizeof *m + n * sizeof *r);
	char ct[PROTO_BOUNDARY_MAX + 40];

	if (!m) {
		fsd_req_error(rq, 500);
		return;
	}
	m->fd = rp->f.fd;
	rp->f.fd = -1;
	m->size = size;
	m->n = n;
	m->ctype = rp->ctype;
	memcpy(m->r, r, n * sizeof *r);
	proto_multipart_boundary(fibril_now_ns() ^ (counter++ * 0x9e3779b97f4a7c15ull),
	                         m->boundary);
	mp_header(m);
	if (rq->method == FSD_M_GET)
		for (unsigned i = 0; i < n && !rq->abandoned; i++)
			warm(rq, m->fd, r[i].first, r[i].last - r[i].first + 1);
	uint64_t total = proto_multipart_length(m->boundary, m->ctype, r, n, size);
	struct MHD_Response *resp =
		MHD_create_response_from_callback(total, 64 * 1024, mp_read, m, mp_free);
	if (!resp) {
		mp_free(m);
		fsd_req_error(rq, 500);
		return;
	}
	snprintf(ct, sizeof ct, "multipart/byteranges; boundary=%s", m->boundary);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
	if (rp->encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, rp->encoding);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	add_validators(resp, rp);
	fsd_req_respond(rq, MHD_HTTP_PARTIAL_CONTENT, resp, total);
}

/* Accept-Encoding: is @coding acceptable (q > 0)? RFC 9110 12.5.3; an
 * explicit entry wins over "*". */
static bool accepts(const char *ae, const char *coding)
{
	size_t cl = strlen(coding);
	int star = -1, exact = -1;

	for (const char *p = ae; *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *tok = p;
		while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
			p++;
		size_t tl = (size_t)(p - tok);
		int ok = 1;
		while (*p && *p != ',') {
			if (*p == ';') {
				const char *q = p + 1;
				while (*q == ' ' || *q == '\t')
					q++;
				if ((*q == 'q' || *q == 'Q') && q[1] == '=')
					ok = strtod(q + 2, NULL) > 0;
			}
			p++;
		}
		if (tl == cl && !strncasecmp(tok, coding, cl))
			exact = ok;
		else if (tl == 1 && *tok == '*')
			star = ok;
	}
	return exact >= 0 ? exact : star > 0;
}

/* Precompressed sidecars (FILE.br, FILE.zst, FILE.gz): the first one the
 * client accepts that exists, is a regular file and is not older than
 * FILE replaces it. */
const struct fsd_sidecar fsd_sidecars[FSD_NSIDECARS] = {
	{ ".br", "br" }, { ".zst", "zstd" }, { ".gz", "gzip" },
};

static void pick_sidecar(struct fsd_req *rq, const char *rel, struct repr *rp)
{
	const char *ae = rq->h.accept_encoding;
	char path[4096];

	/* Vary on every answer while sidecars are on, with or without
	 * Accept-Encoding: the choice depends on it either way. */
	if (!fsd.conf.sidecars)
		return;
	rp->vary = true;
	if (!ae)
		return;
	for (size_t i = 0; i < FSD_NSIDECARS; i++) {
		struct lk_file s;
		if (!accepts(ae, fsd_sidecars[i].coding))
			continue;
		if ((size_t)snprintf(path, sizeof path, "%s%s", rel, fsd_sidecars[i].ext) >= sizeof path)
			return;
		if (lk_open(fsd.lkroot, path, OPEN_FLAGS, rq->group, &s) < 0)
			continue;
		const struct statx_timestamp *a = &s.stx.stx_mtime, *b = &rp->f.stx.stx_mtime;
		bool fresh = a->tv_sec > b->tv_sec ||
		             (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
		if (!S_ISREG(s.stx.stx_mode) || !fresh) {
			close(s.fd);
			continue;
		}
		close(rp->f.fd);
		rp->f = s;
		rp->encoding = fsd_sidecars[i].coding;
		return;
	}
}

static void serve_file(struct fsd_req *rq, struct lk_file *f,
                       const char *rel, const char *name)
{
	struct repr rp = { .f = *f };
	struct MHD_Response *resp;
	time_t now = time(NULL), mtime;
	char suffix[8];

	f->fd = -1;
	rp.ctype = fsd_mime_type(name);
	pick_sidecar(rq, rel, &rp);
	if (rp.encoding)
		snprintf(suffix, sizeof suffix, "-%s", rp.encoding);
	proto_etag_make(rp.f.stx.stx_ino, rp.f.stx.stx_size, rp.f.stx.stx_mtime.tv_sec,
	                rp.f.stx.stx_mtime.tv_nsec, rp.encoding ? suffix : NULL, rp.etag);
	mtime = (time_t)rp.f.stx.stx_mtime.tv_sec;
	if (proto_httpdate_format(mtime, rp.lastmod) < 0)
		mtime = -1;

	switch (fsd_req_cond(rq, rp.etag, mtime)) {
	case PROTO_COND_NOT_MODIFIED:
		close(rp.f.fd);
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		if (resp)
			add_validators(resp, &rp);
		fsd_req_respond(rq, MHD_HTTP_NOT_MODIFIED, resp, 0);
		return;
	case PROTO_COND_PRECONDITION_FAILED:
		close(rp.f.fd);
		fsd_req_error(rq, 412);
		return;
	case PROTO_COND_PROCEED:
		break;
	}

	uint64_t size = rp.f.stx.stx_size;
	if (rq->h.range && proto_cond_if_range(rq->h.if_range, rp.etag, mtime, now)) {
		struct proto_range r[fsd.conf.max_ranges];
		unsigned n = 0;
		char cr_hdr[80];

		switch (proto_range_parse(rq->h.range, strlen(rq->h.range), size, r,
		                          fsd.conf.max_ranges, &n)) {
		case PROTO_RANGE_UNSATISFIABLE:
			close(rp.f.fd);
			fsd_req_error(rq, 416);
			if (rq->resp) {
				snprintf(cr_hdr, sizeof cr_hdr, "bytes */%llu", (unsigned long long)size);
				MHD_add_response_header(rq->resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr_hdr);
			}
			return;
		case PROTO_RANGE_OK:
			if (n > 1) {
				respond_multipart(rq, &rp, r, n);
				return;
			}
			uint64_t len = r[0].last - r[0].first + 1;
			resp = body(rq, rp.f.fd, r[0].first, len, rel, NULL);
			if (!resp) {
				fsd_req_error(rq, 500);
				return;
			}
			add_entity_headers(resp, &rp);
			snprintf(cr_hdr, sizeof cr_hdr, "bytes %llu-%llu/%llu",
			         (unsigned long long)r[0].first, (unsigned long long)r[0].last,
			         (unsigned long long)size);
			MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr_hdr);
			fsd_req_respond(rq, MHD_HTTP_PARTIAL_CONTENT, resp, len);
			return;
		case PROTO_RANGE_IGNORE:
			break;
		}
	}
	resp = body(rq, rp.f.fd, 0, size, rel,
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
                      const struct proto_target *t, const char *rel)
{
	int r;

	if (!t->trailing_slash) {
		close(f->fd);
		redirect_slash(rq, t);
		return;
	}
	if (fsd.conf.index[0]) {
		char ipath[4096 + 256];
		struct lk_file fi;
		snprintf(ipath, sizeof ipath, "%s%s", t->path + 1, fsd.conf.index);
		r = lk_open(fsd.lkroot, ipath, OPEN_FLAGS, rq->group, &fi);
		if (r == 0 && S_ISREG(fi.stx.stx_mode)) {
			close(f->fd);
			serve_file(rq, &fi, ipath, fsd.conf.index);
			return;
		}
		if (r == 0)
			close(fi.fd);
		else if (r != -ENOENT) {
			close(f->fd);
			fsd_log_fs_req(rq, "open", ipath, r);
			return;
		}
	}
	struct conf_listing cfg;
	char relbuf[4096];
	conf_listing_for(&fsd.conf, t->path, &cfg);
	snprintf(relbuf, sizeof relbuf, "%s", rel);
	size_t rl = strlen(relbuf);
	if (rl > 1 && relbuf[rl - 1] == '/')
		relbuf[rl - 1] = 0;
	r = fsd_listing_handle(rq, f, t->path, relbuf, &cfg);
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
	return fsd_fcache_serve(rq, proto_url_relpath(t.path));
}

void fsd_static_handle(struct fsd_req *rq)
{
	char buf[8192];
	struct proto_target t;
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
	/* (the access handler asked the small-file cache already) */
	r = lk_group_new(&rq->group);
	if (r < 0) {
		fsd_req_error(rq, 503);
		return;
	}
	r = lk_open(fsd.lkroot, rel, OPEN_FLAGS, rq->group, &f);
	if (r < 0) {
		fsd_log_fs_req(rq, "open", rel, r);
		return;
	}
	if (S_ISDIR(f.stx.stx_mode)) {
		serve_dir(rq, &f, &t, rel);
		return;
	}
	if (!S_ISREG(f.stx.stx_mode)) {
		close(f.fd);
		fsd_req_error(rq, 403);
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
