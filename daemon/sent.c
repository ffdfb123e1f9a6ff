#include "first.h"

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/sent.h"
#include "daemon/tls.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <linux/tcp.h>

#include <event2/event.h>

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
	    tl < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked)
		return false;
	/* One snapshot, taken under the socket's lock: the bytes sent once
	 * and those not sent yet. (Acked bytes plus SIOCOUTQ, two calls,
	 * miss what an ACK arriving between them moves from one to the
	 * other: 100 KB and more on a busy machine.) */
	if (tl >= offsetof(struct tcp_info, tcpi_bytes_retrans) + sizeof ti.tcpi_bytes_retrans) {
		*out = ti.tcpi_bytes_sent - ti.tcpi_bytes_retrans + ti.tcpi_notsent_bytes;
		return true;
	}
	if (ioctl(ci->connect_fd, SIOCOUTQ, &outq) < 0 || outq < 0)
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
void fsd_sent_count(struct fsd_req *rq)
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

void fsd_sent_respond(struct fsd_req *rq, struct MHD_Response *resp,
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
	bool mapped;            /* sent from a mapping of it */
	bool tripped;
	struct fsd_body_watch *prev, *next;
	char path[];
};

/* This worker's watches and their timer (which exists while they do). */
static __thread struct fsd_body_watch *watches;
static __thread struct event *watch_timer;

/* Has @b's file shrunk below the end of its body? Logs it (once), with
 * @what followed. */
static bool shrank(struct fsd_body_watch *b, const char *what)
{
	struct statx sx;

	/* cached attributes: never a round trip to a network fs here */
	if (b->tripped ||
	    statx(b->fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_SIZE, &sx) < 0 ||
	    sx.stx_size >= b->end)
		return false;
	fsd_log(LOG_ERR, "read %s: file shrank to %llu bytes while %llu were being sent; %s",
	        b->path, (unsigned long long)sx.stx_size, (unsigned long long)b->end, what);
	b->tripped = true;
	return true;
}

static void watch_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	for (struct fsd_body_watch *b = watches; b; b = b->next) {
		if (!shrank(b, "connection closed"))
			continue;
		const union MHD_ConnectionInfo *ci = b->rq->conn ?
			MHD_get_connection_info(b->rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
		/* What is queued still goes out, then FIN; libmicrohttpd sees
		 * the hang-up on its epoll set and closes the connection. */
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
	}
}

void fsd_sent_watch(struct fsd_req *rq, int fd, uint64_t end, const char *path,
                    bool mapped)
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
	b->mapped = mapped;
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

void fsd_sent_end(struct fsd_req *rq, struct MHD_Connection *conn,
                  enum MHD_RequestTerminationCode toe)
{
	uint64_t now;

	if (rq->watch) {
		/* A body sent from a mapping ends at once when whole pages
		 * went (the kernel's copy fails), before any tick; in the
		 * page the file now ends in, the copy reads zeros instead,
		 * and the response looks complete. */
		if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
			shrank(rq->watch, "the response ended early");
		else if (rq->watch->mapped)
			shrank(rq->watch, "the client may have received zeros in place of "
			       "the bytes cut");
		watch_drop(rq->watch);
		rq->watch = NULL;
	}
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK || !rq->sock0_set ||
	    !rq->body_len || !sock_written(conn, &now))
		return;
	/* under TLS the socket carried records: their overhead is not body */
	uint64_t w = fsd_tls_plain_bytes(conn, now > rq->sock0 ? now - rq->sock0 : 0);
	uint64_t sent = w > rq->hdr_len ? w - rq->hdr_len : 0;
	if (sent < rq->body_len)
		rq->body_len = sent;
}
