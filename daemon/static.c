#include "first.h"

#include "daemon/daemon.h"
#include "daemon/compat.h"
#include "daemon/listing.h"
#include "daemon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fibril/async.h>
#include <fibril/lookup.h>

#define ALLOW "GET, HEAD, OPTIONS"

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
	static int have_cachestat = 1;
	struct fsd_cachestat_range r = { off, len };
	struct fsd_cachestat cs;

	if (have_cachestat) {
		if (syscall(__NR_cachestat, fd, &r, &cs, 0) == 0)
			return cs.nr_cache >= (len + 4095) / 4096;
		if (errno == ENOSYS)
			have_cachestat = 0;
	}
	/* Fallback: probe the first and last page without blocking. */
	char b;
	struct iovec iov = { &b, 1 };
	return preadv2(fd, &iov, 1, (off_t)off, RWF_NOWAIT) == 1 &&
	       preadv2(fd, &iov, 1, (off_t)(off + len - 1), RWF_NOWAIT) == 1;
}

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

/* The first READAHEAD_READ bytes are read through the ring (so the
 * kernel's workers, not the loop, wait for the disk); the rest of the
 * range is announced with WILLNEED, also through the ring. sendfile
 * then finds the pages in the cache. */
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
	/* a cancelled read may still be writing: keep buf until it's done */
	if (r != -ECANCELED)
		free(buf);
}

/* ---- responses ---- */

static void add_file_headers(struct MHD_Response *resp, const char *name,
                             const struct statx *st, const char *etag)
{
	char date[32];

	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, fsd_mime_type(name));
	fsd_httpdate((time_t)st->stx_mtime.tv_sec, date);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, date);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
}

/* Body [off, off+len) of @fd: small bodies are read (inline when cached)
 * into one buffer so that headers and body leave in one send; large ones
 * go out with sendfile. Takes ownership of fd. */
static struct MHD_Response *body(struct fsd_req *rq, int fd, uint64_t off,
                                 uint64_t len, const char *path)
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
				fsd_log(LOG_ERR, "read %s: file shrank", path);
			return NULL;
		}
		return MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	}
	if (rq->method == FSD_M_GET)
		warm(rq, fd, off, len);
	resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
	if (!resp)
		close(fd);
	return resp;
}

static void serve_file(struct fsd_req *rq, struct lk_file *f,
                       const char *relpath, const char *name)
{
	char etag[80];
	struct MHD_Response *resp;
	uint64_t size = f->stx.stx_size;

	fsd_etag(&f->stx, NULL, etag);
	resp = body(rq, f->fd, 0, size, relpath);
	f->fd = -1;
	if (!resp) {
		fsd_req_error(rq, 500);
		return;
	}
	add_file_headers(resp, name, &f->stx, etag);
	fsd_req_respond(rq, MHD_HTTP_OK, resp, size);
}

static void redirect_slash(struct fsd_req *rq)
{
	const char *q = strchr(rq->uri, '?');
	size_t plen = q ? (size_t)(q - rq->uri) : strlen(rq->uri);
	char *loc = malloc(strlen(rq->uri) + 2);

	if (!loc) {
		fsd_req_error(rq, 500);
		return;
	}
	memcpy(loc, rq->uri, plen);
	loc[plen] = '/';
	strcpy(loc + plen + 1, q ? q : "");
	fsd_req_redirect(rq, 301, loc);
	free(loc);
}

void fsd_static_handle(struct fsd_req *rq)
{
	char path[4096];
	const char *rel, *name;
	struct lk_file f = { .fd = -1 };
	int r;

	if (rq->method == FSD_M_OTHER) {
		fsd_req_error(rq, 405);
		return;
	}
	if (rq->method == FSD_M_OPTIONS) {
		fsd_req_options(rq);
		return;
	}
	r = fsd_url_path(rq->uri, path, sizeof path);
	if (r < 0) {
		fsd_req_error(rq, (unsigned)-r);
		return;
	}
	rel = path[1] ? path + 1 : ".";
	name = strrchr(path, '/') + 1;
	r = lk_group_new(&rq->group);
	if (r < 0) {
		fsd_req_error(rq, 503);
		return;
	}
	r = lk_open(fsd.lkroot, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, rq->group, &f);
	if (r < 0) {
		fsd_log_fs_req(rq, "open", rel, r);
		return;
	}
	if (S_ISDIR(f.stx.stx_mode)) {
		size_t plen = strlen(path);
		if (path[plen - 1] != '/') {
			close(f.fd);
			redirect_slash(rq);
			return;
		}
		if (fsd.conf.index[0]) {
			char ipath[4096 + 256];
			struct lk_file fi = { .fd = -1 };
			snprintf(ipath, sizeof ipath, "%s%s", path + 1, fsd.conf.index);
			r = lk_open(fsd.lkroot, ipath, O_RDONLY | O_NONBLOCK | O_NOCTTY,
			            rq->group, &fi);
			if (r == 0 && S_ISREG(fi.stx.stx_mode)) {
				close(f.fd);
				serve_file(rq, &fi, ipath, fsd.conf.index);
				return;
			}
			if (r == 0)
				close(fi.fd);
			else if (r != -ENOENT) {
				close(f.fd);
				fsd_log_fs_req(rq, "open", ipath, r);
				return;
			}
		}
		struct conf_listing cfg;
		char relbuf[4096];
		conf_listing_for(&fsd.conf, path, &cfg);
		snprintf(relbuf, sizeof relbuf, "%s", rel);
		size_t rl = strlen(relbuf);
		if (rl > 1 && relbuf[rl - 1] == '/')
			relbuf[rl - 1] = 0;
		r = fsd_listing_handle(rq, &f, path, relbuf, &cfg);
		if (r < 0)
			fsd_req_error(rq, 403);
		return;
	}
	if (!S_ISREG(f.stx.stx_mode)) {
		close(f.fd);
		fsd_req_error(rq, 403);
		return;
	}
	if (path[strlen(path) - 1] == '/') {
		/* "/file.txt/": a file is not a directory */
		close(f.fd);
		fsd_req_error(rq, 404);
		return;
	}
	serve_file(rq, &f, rel, name);
}
