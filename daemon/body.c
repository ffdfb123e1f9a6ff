#include "first.h"

#include "daemon/body.h"
#include "daemon/daemon.h"
#include "daemon/fcache.h"
#include "daemon/log.h"
#include "daemon/resident.h"
#include "daemon/sent.h"
#include "daemon/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fibril/async.h>
#include <fibril/fibril.h>

/* ---- cold data: read ahead through the ring before sendfile ---- */

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
	if (!len || !rq->w->engine || fsd_resident(fd, off, len))
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

/* ---- bodies under TLS: no sendfile ----
 *
 * GnuTLS encrypts in user space, so the bytes go through a buffer.
 * libmicrohttpd's own reader of an fd body takes 4 KiB at a time, each
 * sent as its own TLS record in its own pass of the loop (1 MiB files:
 * 0.4x nginx's rate); this one takes TLS_BLOCK, four full records.
 * A file that shrinks ends the body with an error: libmicrohttpd closes
 * the connection (no stall to watch for, unlike sendfile).
 */
#define TLS_BLOCK (64u << 10)

struct tls_body {
	int fd;
	uint64_t off, len;
	char path[];            /* for the log */
};

/* Runs on the loop, after warm(): pread finds the pages in the cache. */
static ssize_t tls_body_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct tls_body *b = cls;
	ssize_t r;

	if (pos >= b->len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (max > b->len - pos)
		max = (size_t)(b->len - pos);
	r = pread(b->fd, out, max, (off_t)(b->off + pos));
	if (r > 0)
		return r;
	if (r < 0)
		fsd_log_fs(LOG_ERR, "read", b->path, errno);
	else
		fsd_log(LOG_ERR, "read %s: file shrank while being sent; connection closed",
		        b->path);
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void tls_body_free(void *cls)
{
	struct tls_body *b = cls;

	close(b->fd);
	free(b);
}

static struct MHD_Response *tls_body(int fd, uint64_t off, uint64_t len,
                                     const char *path)
{
	size_t pl = strlen(path);
	struct tls_body *b = malloc(sizeof *b + pl + 1);
	struct MHD_Response *resp;

	if (!b) {
		close(fd);
		return NULL;
	}
	b->fd = fd;
	b->off = off;
	b->len = len;
	memcpy(b->path, path, pl + 1);
	resp = MHD_create_response_from_callback(len, TLS_BLOCK, tls_body_read, b,
	                                         tls_body_free);
	if (!resp)
		tls_body_free(b);
	return resp;
}

/* ---- single bodies ----
 *
 * Small bodies are read (inline when cached) into one buffer so that
 * headers and body leave in one send (docs/DESIGN.md, "Static files":
 * ~80k vs ~33k req/s); large ones go out with sendfile after read-ahead.
 */

/* Offers the file to the file cache: a small one under TLS too, a
 * large one (kept open, sent from a mapping or by sendfile) only to
 * plain connections, as HTTPS never sends from those. */
static void offer(struct fsd_req *rq, const char *path, const struct statx *stx)
{
	if (stx && rq->method == FSD_M_GET && !rq->abandoned &&
	    (stx->stx_size <= fsd->conf.small_file_max || !fsd_tls_conn(rq->conn)))
		fsd_fcache_put(rq, path, stx);
}

struct MHD_Response *fsd_body(struct fsd_req *rq, int fd, uint64_t off,
                              uint64_t len, const char *path,
                              const struct statx *cache_stx)
{
	struct MHD_Response *resp;

	if (rq->method == FSD_M_GET && len <= fsd->conf.small_file_max) {
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
		offer(rq, path, cache_stx);
		fsd_sent_count(rq);
		return MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	}
	if (rq->method == FSD_M_GET)
		warm(rq, fd, off, len);
	offer(rq, path, cache_stx);
	if (fsd_tls_conn(rq->conn)) {
		resp = tls_body(fd, off, len, path);
		if (resp && rq->method == FSD_M_GET)
			fsd_sent_count(rq);
		return resp;
	}
	resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
	if (!resp) {
		close(fd);
		return NULL;
	}
	if (rq->method == FSD_M_GET && !rq->abandoned && rq->conn) {
		fsd_sent_count(rq);
		fsd_sent_watch(rq, fd, off + len, path, false);
	}
	return resp;
}

/* ---- multipart/byteranges: a reader over the parts ---- */

struct mp {
	int fd;
	uint64_t size;
	unsigned n, cur;        /* parts; the one being sent */
	uint64_t part_pos;      /* bytes of part cur already sent (header + data) */
	char boundary[PROTO_BOUNDARY_MAX];
	const char *ctype;
	char *hdr;              /* header of part cur (room for the longest) */
	size_t hdrcap, hdrlen;
	char *path;             /* for the log */
	struct proto_range r[];
};

static void mp_header(struct mp *m)
{
	if (m->cur < m->n)
		m->hdrlen = proto_multipart_part_header(m->hdr, m->hdrcap, m->boundary,
		                                        m->ctype, &m->r[m->cur], m->size);
	else
		m->hdrlen = proto_multipart_trailer(m->hdr, m->hdrcap, m->boundary);
	/* (hdrcap was sized for every one of them: never cut) */
	if (m->hdrlen >= m->hdrcap)
		m->hdrlen = 0;
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
			if (r <= 0) {
				if (r < 0)
					fsd_log_fs(LOG_ERR, "read", m->path, errno);
				else
					fsd_log(LOG_ERR, "read %s: file shrank while being sent; "
					        "connection closed", m->path);
				/* the connection closes after what is read so far */
				m->cur = m->n + 2;
				return done ? (ssize_t)done : MHD_CONTENT_READER_END_WITH_ERROR;
			}
			done += (size_t)r;
			m->part_pos += (uint64_t)r;
			continue;
		}
		m->cur++;
		m->part_pos = 0;
		mp_header(m);
	}
	if (!done && m->cur > m->n)     /* n + 1: complete; n + 2: cut */
		return m->cur > m->n + 1 ? MHD_CONTENT_READER_END_WITH_ERROR
		                         : MHD_CONTENT_READER_END_OF_STREAM;
	return (ssize_t)done;
}

static void mp_free(void *cls)
{
	struct mp *m = cls;

	close(m->fd);
	free(m->hdr);
	free(m->path);
	free(m);
}

struct MHD_Response *fsd_body_multipart(struct fsd_req *rq, int fd,
                                        const char *path, uint64_t size,
                                        const char *ctype,
                                        const struct proto_range *r, unsigned n,
                                        uint64_t *total)
{
	static _Atomic uint64_t counter;
	struct mp *m = calloc(1, sizeof *m + n * sizeof *r);
	char ct[PROTO_BOUNDARY_MAX + 40];

	if (!m) {
		close(fd);
		return NULL;
	}
	m->fd = fd;
	m->size = size;
	m->n = n;
	m->ctype = ctype;
	memcpy(m->r, r, n * sizeof *r);
	proto_multipart_boundary(fibril_now_ns() ^ (counter++ * 0x9e3779b97f4a7c15ull),
	                         m->boundary);
	/* Room for the longest part header: the content type has no bound
	 * of its own (default_type). */
	m->hdrcap = proto_multipart_trailer(NULL, 0, m->boundary) + 1;
	for (unsigned i = 0; i < n; i++) {
		size_t k = proto_multipart_part_header(NULL, 0, m->boundary, ctype, &r[i], size) + 1;
		if (k > m->hdrcap)
			m->hdrcap = k;
	}
	m->hdr = malloc(m->hdrcap);
	m->path = strdup(path);
	if (!m->hdr || !m->path) {
		mp_free(m);
		return NULL;
	}
	mp_header(m);
	if (rq->method == FSD_M_GET)
		for (unsigned i = 0; i < n && !rq->abandoned; i++)
			warm(rq, m->fd, r[i].first, r[i].last - r[i].first + 1);
	*total = proto_multipart_length(m->boundary, m->ctype, r, n, size);
	struct MHD_Response *resp =
		MHD_create_response_from_callback(*total, 64 * 1024, mp_read, m, mp_free);
	if (!resp) {
		mp_free(m);
		return NULL;
	}
	if ((size_t)snprintf(ct, sizeof ct, "multipart/byteranges; boundary=%s",
	                     m->boundary) < sizeof ct)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
	fsd_sent_count(rq);
	return resp;
}
