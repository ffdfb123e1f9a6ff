#include "first.h"

#include "daemon/body.h"
#include "daemon/daemon.h"
#include "daemon/fcache.h"
#include "daemon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <linux/tcp.h>

#include <event2/event.h>
#include <fibril/async.h>
#include <fibril/fibril.h>


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

/* ---- bytes sent: counted on the socket ---- */

/* Bytes written to the socket since it was opened: acknowledged, plus
 * queued and not yet acknowledged (less the FIN, which takes a sequence
 * number too). false if the socket cannot tell. */
static bool sock_written(struct MHD_Connection *conn, uint64_t *out)
{
	const union MHD_ConnectionInfo *ci =
		conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	int outq = 0;

	if (!ci)
		return false;
	memset(&ti, 0, sizeof ti);
	if (getsockopt(ci->connect_fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) < 0 ||
	    tl < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked ||
	    ioctl(ci->connect_fd, SIOCOUTQ, &outq) < 0 || outq < 0)
		return false;
	*out = ti.tcpi_bytes_acked + (uint64_t)outq;
	/* the kernel's TCP states (include/net/tcp_states.h) once a FIN left */
	switch (ti.tcpi_state) {
	case 4: case 5: case 6:         /* FIN_WAIT1, FIN_WAIT2, TIME_WAIT */
	case 9: case 11:                /* LAST_ACK, CLOSING */
		if (*out)
			(*out)--;
	}
	return true;
}

/* The body about to be made will be counted if it ends early. On the
 * request fibril: the connection is between responses (the previous
 * one was handed whole to the kernel before this request was read). */
static void count_from_here(struct fsd_req *rq)
{
	if (rq->method == FSD_M_GET && !rq->abandoned &&
	    sock_written(rq->conn, &rq->sock0))
		rq->sock0_set = true;
}

static enum MHD_Result add_len(void *cls, enum MHD_ValueKind kind,
                               const char *key, const char *value)
{
	if (kind == MHD_HEADER_KIND)
		*(size_t *)cls += strlen(key) + 2 + strlen(value) + 2;
	return MHD_YES;
}

void fsd_body_respond(struct fsd_req *rq, struct MHD_Response *resp,
                      unsigned status)
{
	const char *reason = MHD_get_reason_phrase_for(status);
	char cl[24];
	size_t n = 0;

	if (!rq->sock0_set)
		return;
	/* As libmicrohttpd 0.9.75 writes it: status line, Date, its own
	 * Connection (HTTP/1.0 clients, a close we add ourselves), the
	 * response's fields, Content-Length, the empty line. */
	MHD_get_response_headers(resp, add_len, &n);
	n += strlen("HTTP/1.1 200 \r\n") + (reason && *reason ? strlen(reason) : strlen("Non-Standard Status"));
	n += strlen("Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n");
	if (rq->close)
		n += strlen("Connection: close\r\n");
	else if (!strcmp(rq->version, "HTTP/1.0"))
		n += strlen("Connection: Keep-Alive\r\n");
	n += (size_t)snprintf(cl, sizeof cl, "%llu", (unsigned long long)rq->body_len) +
	     strlen("Content-Length: \r\n") + 2;
	rq->hdr_len = n;
}

/* ---- sendfile bodies in flight: watched for files that shrink ---- */

struct fsd_body_watch {
	struct fsd_req *rq;
	int fd;                 /* ours (a dup of the body's) */
	uint64_t end;           /* the file must be at least this long */
	bool tripped;
	struct fsd_body_watch *prev, *next;
	char path[];
};

/* This worker's watches and their timer (which exists while they do). */
static __thread struct fsd_body_watch *watches;
static __thread struct event *watch_timer;

static void watch_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	for (struct fsd_body_watch *b = watches; b; b = b->next) {
		struct statx sx;
		/* cached attributes: never a round trip to a network fs here */
		if (b->tripped ||
		    statx(b->fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_SIZE, &sx) < 0 ||
		    sx.stx_size >= b->end)
			continue;
		fsd_log(LOG_ERR, "read %s: file shrank to %llu bytes while %llu were being sent; "
		        "connection closed", b->path,
		        (unsigned long long)sx.stx_size, (unsigned long long)b->end);
		b->tripped = true;
		const union MHD_ConnectionInfo *ci = b->rq->conn ?
			MHD_get_connection_info(b->rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
		/* What is queued still goes out, then FIN; libmicrohttpd sees
		 * the hang-up on its epoll set and closes the connection. */
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
	}
}

static void watch_add(struct fsd_req *rq, int fd, uint64_t end, const char *path)
{
	size_t pl = strlen(path);
	struct fsd_body_watch *b = malloc(sizeof *b + pl + 1);

	if (!b)
		return;
	b->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (b->fd < 0) {
		free(b);
		return;
	}
	if (!watch_timer) {
		struct timeval tv = { 1, 0 };
		watch_timer = event_new(rq->w->base, -1, EV_PERSIST, watch_tick, NULL);
		if (!watch_timer || event_add(watch_timer, &tv) < 0) {
			if (watch_timer)
				event_free(watch_timer);
			watch_timer = NULL;
			close(b->fd);
			free(b);
			return;
		}
	}
	b->rq = rq;
	b->end = end;
	b->tripped = false;
	memcpy(b->path, path, pl + 1);
	b->prev = NULL;
	b->next = watches;
	if (watches)
		watches->prev = b;
	watches = b;
	rq->watch = b;
}

static void watch_drop(struct fsd_body_watch *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		watches = b->next;
	if (b->next)
		b->next->prev = b->prev;
	close(b->fd);
	free(b);
	/* no watch left: no timer (and none left behind at a worker's exit,
	 * where every connection ends before the loop goes) */
	if (!watches && watch_timer) {
		event_free(watch_timer);
		watch_timer = NULL;
	}
}

void fsd_body_end(struct fsd_req *rq, struct MHD_Connection *conn,
                  enum MHD_RequestTerminationCode toe)
{
	uint64_t now;

	if (rq->watch) {
		watch_drop(rq->watch);
		rq->watch = NULL;
	}
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK || !rq->sock0_set ||
	    !rq->body_len || !sock_written(conn, &now))
		return;
	uint64_t w = now > rq->sock0 ? now - rq->sock0 : 0;
	uint64_t sent = w > rq->hdr_len ? w - rq->hdr_len : 0;
	if (sent < rq->body_len)
		rq->body_len = sent;
}

/* ---- single bodies ----
 *
 * Small bodies are read (inline when cached) into one buffer so that
 * headers and body leave in one send (docs/DESIGN.md, "Static files":
 * ~80k vs ~33k req/s); large ones go out with sendfile after read-ahead.
 */

struct MHD_Response *fsd_body(struct fsd_req *rq, int fd, uint64_t off,
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
		count_from_here(rq);
		return MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	}
	if (rq->method == FSD_M_GET)
		warm(rq, fd, off, len);
	resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
	if (!resp) {
		close(fd);
		return NULL;
	}
	if (rq->method == FSD_M_GET && !rq->abandoned && rq->conn) {
		count_from_here(rq);
		watch_add(rq, fd, off + len, path);
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
	count_from_here(rq);
	return resp;
}
