/*
 * fsd-sftp: connections. Reads length-prefixed packets (each one checked
 * against SFTP_MAX_PACKET before a byte of it is trusted), hands them to
 * the dispatcher, and writes the replies queued by completions. A
 * connection whose client sends faster than it reads, or keeps too many
 * requests in progress, stops being read until that drains.
 *
 * Connections on sockets sit in an epoll set of their own, one
 * descriptor for tevent: a turn on it serves every connection that is
 * ready, and the bulk work (ops_dir.c) polls it before each NAME reply.
 * tevent takes one ready descriptor per turn: with a descriptor per
 * connection, a request that comes in would wait for the turns of every
 * descriptor ready ahead of it, where it waits for one piece of bulk
 * work.
 */
#include "first.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "contrib/sftpd/sftpd.h"

#define X__INCAP (SFTP_MAX_PACKET + 4)

/* Replies in progress count with what they may still add (READ, READDIR:
 * sreq.reserve), so that the output buffer stays near SFTPD_MAX_QUEUED
 * whatever the client keeps in flight. */
static bool sftpd__throttled(const struct sconn *c)
{
	return c->pending >= SFTPD_MAX_PENDING ||
	       c->out.len - c->out.off + c->reserved >= SFTPD_MAX_QUEUED;
}

/* A whole packet (or a bad length, which ends the connection) waits at
 * the head of the input: a partial one would have parsing scheduled for
 * nothing, turn after turn. */
static bool sftpd__has_packet(const struct sconn *c)
{
	if (c->inlen < 4)
		return false;
	uint32_t len = (uint32_t)c->in[0] << 24 | (uint32_t)c->in[1] << 16 |
	               (uint32_t)c->in[2] << 8 | c->in[3];
	return len < 5 || len > SFTP_MAX_PACKET || c->inlen >= 4 + (size_t)len;
}

static void sftpd__resume(struct tevent_context *ev, struct tevent_immediate *im,
                          void *arg);

/* Sets the events the connection waits for. Parsing input left while
 * throttled resumes from here, whatever ended the throttle (a flush, a
 * completion), since the client may have sent everything already and
 * wait for replies. A connection whose reply could not be allocated is
 * freed from the loop: whoever calls this may still hold parts of it. */
static void sftpd__update(struct sconn *c)
{
	if (c->out.oom || (!c->parsing && !c->eof && !sftpd__throttled(c) &&
	                   sftpd__has_packet(c))) {
		tevent_schedule_immediate(c->resume, c->srv->ev, sftpd__resume, c);
		if (c->out.oom)
			return;
	}
	uint16_t r = !c->eof && !sftpd__throttled(c) && c->inlen < X__INCAP ?
	             TEVENT_FD_READ : 0;
	uint16_t w = c->out.len > c->out.off ? TEVENT_FD_WRITE : 0;

	if (!c->rfde) {
		uint32_t ev = (r ? EPOLLIN : 0) | (w ? EPOLLOUT : 0);
		if (ev != c->ep_events) {
			struct epoll_event e = { .events = ev, .data.ptr = c };
			if (epoll_ctl(c->srv->cep, EPOLL_CTL_MOD, c->rfd, &e) == 0)
				c->ep_events = ev;
		}
	} else if (c->rfde == c->wfde) {
		tevent_fd_set_flags(c->rfde, r | w);
	} else {
		tevent_fd_set_flags(c->rfde, r);
		tevent_fd_set_flags(c->wfde, w);
	}
}

static void sftpd__close(struct sconn *c, const char *why)
{
	if (why)
		sftpd_log("%s: connection closed: %s", c->peer, why);
	talloc_free(c);
}

/* Writes what is queued until done or the socket is full: 0, or the
 * errno of a failed write. */
static int sftpd__flush(struct sconn *c)
{
	int err = 0;
	uint64_t t0 = sftpd_tl_on ? sftpd_tl_now() : 0;

	while (c->out.off < c->out.len) {
		ssize_t n = write(c->wfd, c->out.b + c->out.off,
		                  c->out.len - c->out.off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			break;
		}
		c->out.off += (size_t)n;
	}
	if (c->out.off == c->out.len)
		c->out.off = c->out.len = 0;
	else if (c->out.off > c->out.cap / 2)
		sw_compact(&c->out);
	if (t0)
		sftpd_tl_write(sftpd_tl_now() - t0);
	return err;
}

/* Returns false when the connection is gone. */
static bool sftpd__write(struct sconn *c)
{
	int err = sftpd__flush(c);

	if (err) {
		sftpd__close(c, err == EPIPE || err == ECONNRESET ? NULL : strerror(err));
		return false;
	}
	return true;
}

/*
 * From a completion: writes what is queued at once, instead of asking
 * the loop for EPOLLOUT and waiting for the connection's turn among
 * every ready descriptor (tevent takes one event per turn): a STAT
 * answered at once went out only after the turns of the connections
 * ahead of it, each with a listing reply to send. An error is left for
 * sftpd__on_io (the descriptor stays readable or writable with it),
 * where the connection may go: here a caller may still hold parts of it.
 */
static void sftpd__write_now(struct sconn *c)
{
	sftpd__flush(c);
}

/* Dispatches every whole packet in the input, unless throttled.
 * Returns false when the connection is gone. */
static bool sftpd__parse(struct sconn *c)
{
	size_t at = 0;
	size_t mark = sftpd_tl_on ? sftpd_tl_mark() : 0;

	c->parsing = true;
	while (c->inlen - at >= 4 && !sftpd__throttled(c)) {
		const uint8_t *p = c->in + at;
		uint32_t len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		               (uint32_t)p[2] << 8 | p[3];
		if (len < 5 || len > SFTP_MAX_PACKET) {
			/* Framing is lost: nothing after this can be trusted. */
			char why[64];
			snprintf(why, sizeof(why), "bad packet length %u", len);
			sftpd__close(c, why);
			return false;
		}
		if (c->inlen - at < 4 + (size_t)len)
			break;
		struct sw_reader rd = { .p = p + 5, .n = len - 1 };
		at += 4 + (size_t)len;
		if (!c->inited && p[4] != SSH_FXP_INIT) {
			sftpd__close(c, "first packet is not INIT");
			return false;
		}
		sftpd_dispatch(c, p[4], &rd);
		if (c->eof) {
			sftpd__close(c, "INIT after INIT");
			return false;
		}
		if (c->out.oom) {
			sftpd__close(c, "out of memory");
			return false;
		}
	}
	c->parsing = false;
	if (at) {
		memmove(c->in, c->in + at, c->inlen - at);
		c->inlen -= at;
	}
	/* The replies made while parsing, all in one write. */
	if (c->out.len != c->out.off && !sftpd__write(c))
		return false;
	if (sftpd_tl_on && c->out.len == 0)
		sftpd_tl_written(mark);
	return true;
}

/* read(2), and with the timeline on, the kernel's arrival time of
 * what was read (the socket's SO_TIMESTAMPNS; 0 on a pipe). */
static ssize_t sftpd__read(struct sconn *c, uint8_t *buf, size_t len)
{
	if (!sftpd_tl_on)
		return read(c->rfd, buf, len);
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	union {
		char b[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	                     .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
	ssize_t n = recvmsg(c->rfd, &mh, 0);
	if (n < 0 && errno == ENOTSOCK)
		n = read(c->rfd, buf, len), mh.msg_controllen = 0;
	c->tl_read = sftpd_tl_now();
	c->tl_arr = 0;
	for (struct cmsghdr *cm = mh.msg_controllen ? CMSG_FIRSTHDR(&mh) : NULL;
	     cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
			c->tl_arr = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		}
	return n;
}

/* @w: the write side is ready, @r: the read side. */
static void sftpd__io(struct sconn *c, bool w, bool r)
{
	if (sftpd_tl_on)
		sftpd_tl_conn();
	/* What is queued may end in a partial packet: nothing more goes out. */
	if (c->out.oom) {
		sftpd__close(c, "out of memory");
		return;
	}
	if (w && !sftpd__write(c))
		return;
	if (r && !c->eof) {
		ssize_t n = sftpd__read(c, c->in + c->inlen, X__INCAP - c->inlen);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			/* Like OpenSSH's sftp-server: the client is gone, and
			 * so is everything it asked for (freeing the requests
			 * cancels their operations). */
			sftpd__close(c, n < 0 && errno != ECONNRESET ? strerror(errno) : NULL);
			return;
		}
		if (n > 0) {
			c->inlen += (size_t)n;
			if (!sftpd__parse(c))
				return;
		}
	}
	sftpd__update(c);
}

static void sftpd__on_io(struct tevent_context *ev, struct tevent_fd *fde,
                     uint16_t flags, void *arg)
{
	struct sconn *c = arg;

	(void)ev;
	sftpd__io(c, (flags & TEVENT_FD_WRITE) && fde == c->wfde,
	          (flags & TEVENT_FD_READ) && fde == c->rfde);
}

void sftpd_conns_poll(struct sftpd *srv)
{
	struct epoll_event evs[64];
	int n = epoll_wait(srv->cep, evs, 64, 0);

	/* Serving one connection never frees another. */
	for (int i = 0; i < n; i++) {
		uint32_t e = evs[i].events;
		bool err = e & (EPOLLERR | EPOLLHUP);
		sftpd__io(evs[i].data.ptr, (e & EPOLLOUT) || err, (e & EPOLLIN) || err);
	}
}

static void sftpd__on_conns(struct tevent_context *ev, struct tevent_fd *fde,
                            uint16_t flags, void *arg)
{
	(void)ev;
	(void)fde;
	(void)flags;
	sftpd_conns_poll(arg);
}

int sftpd_conns_init(struct sftpd *srv)
{
	srv->bulk_before = sftpd_conns_poll;
	srv->cep = epoll_create1(EPOLL_CLOEXEC);
	if (srv->cep < 0)
		return -errno;
	srv->cep_fde = tevent_add_fd(srv->ev, srv, srv->cep, TEVENT_FD_READ,
	                             sftpd__on_conns, srv);
	if (!srv->cep_fde) {
		close(srv->cep);
		srv->cep = -1;
		return -ENOMEM;
	}
	tevent_fd_set_auto_close(srv->cep_fde);
	return 0;
}

static void sftpd__resume(struct tevent_context *ev, struct tevent_immediate *im,
                      void *arg)
{
	struct sconn *c = arg;
	(void)ev;
	(void)im;
	if (c->out.oom) {
		sftpd__close(c, "out of memory");
		return;
	}
	if (sftpd__parse(c))
		sftpd__update(c);
}

/* Never frees the connection: completions and the parse loop go on
 * using it after this returns. Parsing resumes from the loop (through
 * sftpd__update), not from here: it dispatches, and a reply made at
 * once would bring us back here. */
static void sftpd__req_done(struct sreq *r)
{
	struct sconn *c = r->c;
	uint8_t type = r->type;
	bool tl = sftpd_tl_on && sftpd_tl_cheap(type);
	uint64_t arr = r->tl_arr, rd = r->tl_read, built = tl ? sftpd_tl_now() : 0;

	c->pending--;
	c->reserved -= r->reserve;
	talloc_free(r);
	if (!c->parsing && !c->out.oom)
		sftpd__write_now(c);
	if (tl)
		sftpd_tl_req(type, arr, rd, built,
		             !c->parsing && c->out.len == 0 ? sftpd_tl_now() : 0);
	sftpd__update(c);
}

static int sftpd__conn_destructor(struct sconn *c)
{
	struct sftpd *srv = c->srv;

	/* The fd events go before their fds; requests and handles (our
	 * children) are freed after this returns, which cancels the
	 * requests' operations and closes the handles' fds. */
	if (!c->rfde)
		epoll_ctl(srv->cep, EPOLL_CTL_DEL, c->rfd, NULL);
	if (c->wfde != c->rfde)
		TALLOC_FREE(c->wfde);
	TALLOC_FREE(c->rfde);
	c->wfde = NULL;
	if (c->rfd != c->wfd)
		close(c->wfd);
	close(c->rfd);
	talloc_free(c->out.b);
	srv->nconns--;
	if (srv->stdio)
		srv->done = true;
	return 0;
}

int sftpd_conn_new(struct sftpd *srv, int rfd, int wfd, const char *peer)
{
	struct sconn *c = talloc_zero(srv->conns, struct sconn);
	if (!c)
		return -ENOMEM;
	c->srv = srv;
	c->req_done = sftpd__req_done;
	c->rfd = rfd;
	c->wfd = wfd;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->in = talloc_size(c, X__INCAP);
	c->resume = tevent_create_immediate(c);
	if (!c->in || !c->resume) {
		talloc_free(c);
		return -ENOMEM;
	}
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };
	if (rfd == wfd && srv->cep >= 0 &&
	    epoll_ctl(srv->cep, EPOLL_CTL_ADD, rfd, &e) == 0) {
		c->ep_events = EPOLLIN;
	} else {
		/* Pipes of the stdin/stdout connection: tevent's own. */
		c->rfde = tevent_add_fd(srv->ev, c, rfd, TEVENT_FD_READ, sftpd__on_io, c);
		c->wfde = rfd == wfd ? c->rfde :
		          tevent_add_fd(srv->ev, c, wfd, 0, sftpd__on_io, c);
		if (!c->rfde || !c->wfde) {
			talloc_free(c);
			return -ENOMEM;
		}
	}
	if (sftpd_tl_on)
		setsockopt(rfd, SOL_SOCKET, SO_TIMESTAMPNS, &(int){ 1 }, sizeof(int));
	srv->nconns++;
	talloc_set_destructor(c, sftpd__conn_destructor);
	return 0;
}
