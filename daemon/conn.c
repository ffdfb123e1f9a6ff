#include "first.h"

/*
 * Connections: accepting them, and the limits that hold per connection.
 *
 * libmicrohttpd runs without a listening socket of its own
 * (MHD_USE_NO_LISTEN_SOCKET): every worker watches the shared listening
 * sockets and accepts itself, so that a connection over a limit is
 * answered at once instead of waiting unseen in the kernel's accept
 * queue (0.9.75 stops watching its socket at MHD_OPTION_CONNECTION_LIMIT
 * and, at MHD_OPTION_PER_IP_CONNECTION_LIMIT, closes without a word):
 *  - max_connections per worker and max_connections_per_ip over all
 *    workers: beyond them the connection gets a 503 with Retry-After
 *    and is closed, and the refusals are logged (summed once a second);
 *  - header_timeout: the whole request head must arrive within that
 *    many seconds of the connection's start or of the end of its
 *    previous response. MHD's own timeout (connection_timeout) restarts
 *    with every byte, so a client trickling its head held a connection
 *    for ever;
 *  - min_send_rate: past its first header_timeout seconds, a response
 *    must have been acknowledged by the client (TCP_INFO's bytes_acked)
 *    at that average rate, or the connection is reset: a client taking
 *    a byte now and then (MHD's timeout restarts with each write) held
 *    it for ever too.
 * A connection over a deadline is shut down; MHD sees the end of the
 * stream and closes it the usual way (completion callbacks included).
 */

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/reqhdr.h"
#include "daemon/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <fibril/fibril.h>

/* Connections accepted per wake-up of one worker: the workers share
 * the listening socket, and a small batch leaves the rest of a burst
 * to the others. */
#define CONN_ACCEPT_BATCH 8

enum conn_state {
	CONN_HEAD,      /* waiting for a request head */
	CONN_BUSY,      /* head complete, no response queued yet */
	CONN_SENDING,   /* a response is queued */
};

struct fsd_conn {
	struct fsd_worker *w;
	struct MHD_Connection *mc;
	int fd;
	bool has_addr;
	bool served;            /* a response was completed on it */
	bool tls;               /* on an ssl listener: no plain-text answers */
	struct fsd_tls_io *tls_io;      /* its transport under GnuTLS, or NULL */
	uint8_t addr[16];       /* IPv4 as ::ffff:a.b.c.d */
	enum conn_state state;
	uint64_t t0;            /* start of the head, or of the response */
	uint64_t acked0;        /* bytes_acked when the rate was first
	                         * measured, or ACKED_UNSET */
	uint64_t paused;        /* ns suspended (waiting on the file system) */
	uint64_t swept;         /* last sweep that saw it */
	struct fsd_conn *prev, *next;
};

/* ---- connections per client address, over all workers ---- */

#define IP_BUCKETS 4096

struct ip_node {
	uint8_t addr[16];
	unsigned n;
	struct ip_node *next;
};

static struct ip_node *ip_tab[IP_BUCKETS];
static pthread_mutex_t ip_mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned ip_hash(const uint8_t a[16])
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < 16; i++)
		h = (h ^ a[i]) * 16777619u;
	return h % IP_BUCKETS;
}

static struct ip_node **ip_find(const uint8_t a[16])
{
	struct ip_node **p = &ip_tab[ip_hash(a)];
	while (*p && memcmp((*p)->addr, a, 16))
		p = &(*p)->next;
	return p;
}

static unsigned ip_count(const uint8_t a[16])
{
	unsigned n;
	pthread_mutex_lock(&ip_mu);
	n = *ip_find(a) ? (*ip_find(a))->n : 0;
	pthread_mutex_unlock(&ip_mu);
	return n;
}

static void ip_add(const uint8_t a[16], int d)
{
	pthread_mutex_lock(&ip_mu);
	struct ip_node **p = ip_find(a);
	if (!*p && d > 0) {
		*p = calloc(1, sizeof **p);
		if (*p)
			memcpy((*p)->addr, a, 16);
	}
	if (*p) {
		(*p)->n += (unsigned)d;
		if (!(*p)->n) {
			struct ip_node *dead = *p;
			*p = dead->next;
			free(dead);
		}
	}
	pthread_mutex_unlock(&ip_mu);
}

static bool addr_key(const struct sockaddr *sa, uint8_t out[16])
{
	memset(out, 0, 16);
	if (sa && sa->sa_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

/* The prefix of an IPv4 address in the keys above (::ffff:a.b.c.d). */
static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static bool addr_loopback(const uint8_t a[16])
{
	static const uint8_t v6_loopback[16] = { [15] = 1 };

	return (!memcmp(a, v4_prefix, 12) && a[12] == 127) || !memcmp(a, v6_loopback, 16);
}

/*
 * A client on this host reads what the worker writes from the same
 * caches; the kernel's autotuning grows a busy loopback connection's
 * send buffer to tcp_wmem's maximum (4 MiB), and a body queued that far
 * ahead is out of those caches by the time the client copies it. A
 * loopback round trip is microseconds, so a fixed buffer costs no
 * throughput (docs/DESIGN.md, "Connections and limits"). Linux doubles
 * the value given and caps it at net.core.wmem_max; a failure leaves
 * the kernel's autotuning.
 */
static void set_loopback_sndbuf(int fd, const uint8_t key[16])
{
	/* (at most 1 GiB: conf.c's bound) */
	int v = (int)(fsd->conf.loopback_sndbuf / 2);

	if (v > 0 && addr_loopback(key))
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

static const char *addr_text(const uint8_t a[16], char *buf, size_t len)
{
	if (!memcmp(a, v4_prefix, 12))
		return inet_ntop(AF_INET, a + 12, buf, (socklen_t)len);
	return inet_ntop(AF_INET6, a, buf, (socklen_t)len);
}

/* ---- refusing at the limits ---- */

static const char resp_503[] =
	"HTTP/1.1 503 Service Unavailable\r\n"
	"Server: fileserverd/" PACKAGE_VERSION "\r\n"
	"Content-Type: text/plain\r\n"
	"Content-Length: 20\r\n"
	"Retry-After: 1\r\n"
	"Connection: close\r\n"
	"\r\n"
	"Too many connections";
static const char resp_408[] =
	"HTTP/1.1 408 Request Timeout\r\n"
	"Server: fileserverd/" PACKAGE_VERSION "\r\n"
	"Content-Length: 0\r\n"
	"Connection: close\r\n"
	"\r\n";

/* Writes a whole small answer if the socket takes it at once, then
 * ends our side. What the client sent is read first: closing with
 * unread data would reset the connection and could discard the answer
 * before the client reads it. */
static void say_and_shut(int fd, const char *msg, size_t len)
{
	char junk[4096];

	while (recv(fd, junk, sizeof junk, MSG_DONTWAIT) > 0)
		;
	if (msg && send(fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		(void)0;        /* nothing more to do for a client gone */
	shutdown(fd, SHUT_RDWR);
}

/* An ssl listener's client expects TLS records: a plain answer would
 * only be garbage to it, so it is just closed. */
static void refuse(struct fsd_worker *w, int fd, bool tls, const uint8_t *key,
                   bool per_ip)
{
	say_and_shut(fd, tls ? NULL : resp_503, sizeof resp_503 - 1);
	close(fd);
	if (per_ip) {
		w->cs.refused_ip++;
		if (key)
			memcpy(w->cs.refused_ip_addr, key, 16);
	} else
		w->cs.refused++;
}

/* Kept open to be given up when accept() meets EMFILE: the connection
 * it then admits is refused properly rather than left in the queue. */
static int spare_fd = -1;
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;

static void accept_over_fd_limit(struct fsd_worker *w, int lfd, bool tls)
{
	pthread_mutex_lock(&spare_mu);
	if (spare_fd >= 0) {
		close(spare_fd);
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			refuse(w, fd, tls, NULL, false);
			w->cs.refused_fds++;
			FSD_M_INC(limited[FSD_M_LIM_FDS]);
		}
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&spare_mu);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct fsd_worker *w = arg;
	const struct conf *c = &fsd->conf;
	size_t li;
	bool tls;

	(void)what;
	for (li = 0; li < w->nmhd && w->listen_fds[li] != lfd; li++)
		;
	if (li == w->nmhd || w->stopping)
		return;
	tls = c->listen[li].ssl;
	for (int i = 0; i < CONN_ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof ss;
		uint8_t key[16];
		int fd = accept4(lfd, (struct sockaddr *)&ss, &len,
		                 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE)
				accept_over_fd_limit(w, lfd, tls);
			else if (errno != EAGAIN)
				fsd_log(LOG_ERR, "accept: %s", strerror(errno));
			break;
		}
		bool keyed = addr_key((struct sockaddr *)&ss, key);
		if (w->nconns >= c->max_connections) {
			refuse(w, fd, tls, keyed ? key : NULL, false);
			FSD_M_INC(limited[FSD_M_LIM_CONNS]);
			continue;
		}
		if (keyed && c->max_connections_per_ip &&
		    ip_count(key) >= c->max_connections_per_ip) {
			refuse(w, fd, tls, key, true);
			FSD_M_INC(limited[FSD_M_LIM_CONNS_IP]);
			continue;
		}
		if (keyed)
			set_loopback_sndbuf(fd, key);
		/* MHD closes the socket itself if it cannot take it. */
		if (MHD_add_connection(w->mhd[li], fd, (struct sockaddr *)&ss, len) != MHD_YES)
			fsd_log(LOG_WARNING, "connection dropped: %s", strerror(errno));
		else
			FSD_M_INC(accepted);
	}
	fsd_worker_kick(w);
}

/* ---- per-connection state (MHD_OPTION_NOTIFY_CONNECTION) ---- */

void fsd_conn_track_cb(void *cls, struct MHD_Connection *mc, void **ctx,
                       enum MHD_ConnectionNotificationCode code)
{
	struct fsd_worker *w = cls;
	struct fsd_conn *cn = *ctx;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci;
		/* A first segment that cannot be HTTP is refused there (it
		 * ignores *ctx); the close then comes back here. */
		fsd_conn_notify_cb(cls, mc, ctx, code);
		cn = calloc(1, sizeof *cn);
		if (!cn)
			return;         /* unlimited, but served */
		cn->w = w;
		cn->mc = mc;
		ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		cn->fd = ci ? ci->connect_fd : -1;
		ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		cn->has_addr = addr_key(ci ? ci->client_addr : NULL, cn->addr);
		cn->tls = fsd_tls_conn(mc);
		if (cn->tls)
			cn->tls_io = fsd_tls_attach(mc, cn->fd, w->base);
		if (cn->has_addr)
			ip_add(cn->addr, 1);
		cn->state = CONN_HEAD;
		cn->t0 = fibril_now_ns();
		cn->next = w->conns;
		if (w->conns)
			w->conns->prev = cn;
		w->conns = cn;
		w->nconns++;
		*ctx = cn;
		return;
	}
	if (!cn)
		return;
	*ctx = NULL;
	fsd_tls_detach(mc, cn->tls_io);
	if (cn->has_addr)
		ip_add(cn->addr, -1);
	if (cn->prev)
		cn->prev->next = cn->next;
	else
		w->conns = cn->next;
	if (cn->next)
		cn->next->prev = cn->prev;
	w->nconns--;
	free(cn);
}

static struct fsd_conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* Most responses are gone before the next sweep: TCP_INFO is read at
 * the first sweep that finds one still sending, not for each response
 * (it cost a few per cent of a small-file hit's CPU). */
#define ACKED_UNSET UINT64_MAX

static uint64_t acked(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;

	memset(&ti, 0, sizeof ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return 0;
	return ti.tcpi_bytes_acked;
}

void fsd_conn_head_done(struct MHD_Connection *mc)
{
	struct fsd_conn *cn = conn_of(mc);
	if (cn)
		cn->state = CONN_BUSY;
}

void fsd_conn_sending(struct MHD_Connection *mc, uint64_t body_len)
{
	struct fsd_conn *cn = conn_of(mc);
	if (!cn)
		return;
	fsd_tls_sending(cn->tls_io, body_len);
	/* Draining: this response is the connection's last. As if the
	 * client had asked: libmicrohttpd then sends "Connection: close"
	 * and closes after the body, even with a response other requests
	 * share (a header added to it would reach them too). */
	if (cn->w->stopping)
		MHD_set_connection_value(mc, MHD_HEADER_KIND,
		                         MHD_HTTP_HEADER_CONNECTION, "close");
	cn->state = CONN_SENDING;
	cn->t0 = cn->swept = fibril_now_ns();
	cn->paused = 0;
	cn->acked0 = ACKED_UNSET;
}

void fsd_conn_request_done(struct MHD_Connection *mc)
{
	struct fsd_conn *cn = conn_of(mc);
	if (!cn)
		return;
	fsd_tls_sent(cn->tls_io);
	cn->state = CONN_HEAD;
	cn->served = true;
	cn->t0 = fibril_now_ns();
}

/* ---- deadlines, once a second ---- */

static bool too_slow(struct fsd_conn *cn, uint64_t now)
{
	const struct conf *c = &fsd->conf;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(cn->mc, MHD_CONNECTION_INFO_CONNECTION_SUSPENDED);
	uint64_t grace = (uint64_t)c->header_timeout * 1000000000ull, run;

	/* Waiting for the file system (a listing's next entries) is not
	 * the client's time. */
	if (ci && ci->suspended == MHD_YES)
		cn->paused += now - cn->swept;
	cn->swept = now;
	if (cn->acked0 == ACKED_UNSET) {
		/* Measured from here: the response counts as started now,
		 * at most one sweep (a second) late. */
		cn->acked0 = acked(cn->fd);
		cn->t0 = now;
		cn->paused = 0;
		return false;
	}
	run = now - cn->t0 - (cn->paused < now - cn->t0 ? cn->paused : now - cn->t0);
	if (run <= grace)
		return false;
	uint64_t want = (uint64_t)((double)(run - grace) / 1e9 * (double)c->min_send_rate);
	return acked(cn->fd) - cn->acked0 < want;
}

static void log_sweep(struct fsd_worker *w)
{
	const struct conf *c = &fsd->conf;
	char a[INET6_ADDRSTRLEN];

	if (w->cs.refused)
		fsd_log(LOG_WARNING, "refused %u connection%s with 503: %u connections "
		        "per worker reached", w->cs.refused, w->cs.refused > 1 ? "s" : "",
		        c->max_connections);
	if (w->cs.refused_fds)
		fsd_log(LOG_WARNING, "refused %u connection%s with 503: out of file "
		        "descriptors", w->cs.refused_fds, w->cs.refused_fds > 1 ? "s" : "");
	if (w->cs.refused_ip)
		fsd_log(LOG_WARNING, "refused %u connection%s with 503: %u connections "
		        "per client address reached (%s)", w->cs.refused_ip,
		        w->cs.refused_ip > 1 ? "s" : "", c->max_connections_per_ip,
		        addr_text(w->cs.refused_ip_addr, a, sizeof a) ? a : "?");
	if (w->cs.head_closed)
		fsd_log(LOG_NOTICE, "closed %u connection%s: no complete request head "
		        "within %us", w->cs.head_closed, w->cs.head_closed > 1 ? "s" : "",
		        c->header_timeout);
	if (w->cs.slow_closed)
		fsd_log(LOG_NOTICE, "closed %u connection%s: response taken slower than "
		        "%zu bytes/s", w->cs.slow_closed, w->cs.slow_closed > 1 ? "s" : "",
		        c->min_send_rate);
	w->cs.refused = w->cs.refused_fds = w->cs.refused_ip = 0;
	w->cs.head_closed = w->cs.slow_closed = 0;
}

void fsd_conn_sweep(struct fsd_worker *w)
{
	const struct conf *c = &fsd->conf;
	uint64_t now = fibril_now_ns();
	uint64_t head = (uint64_t)c->header_timeout * 1000000000ull;

	if (now < w->next_sweep_ns)
		return;
	w->next_sweep_ns = now + 1000000000ull;
	for (struct fsd_conn *cn = w->conns; cn; cn = cn->next) {
		if (cn->fd < 0)
			continue;
		if (cn->state == CONN_HEAD && now - cn->t0 > head) {
			/* A keep-alive connection between requests just ends;
			 * one that never sent a whole head is told why (in
			 * plain text: not to a TLS client, handshake or not). */
			bool tell = !cn->served && !cn->tls;
			say_and_shut(cn->fd, tell ? resp_408 : NULL,
			             tell ? sizeof resp_408 - 1 : 0);
			cn->fd = -1;
			w->cs.head_closed++;
			FSD_M_INC(closed[FSD_M_CLOSE_HEAD]);
		} else if (cn->state == CONN_SENDING && c->min_send_rate &&
		           too_slow(cn, now)) {
			/* Reset, not a FIN queued behind megabytes the client
			 * would still take its time over. */
			struct linger lg = { 1, 0 };
			setsockopt(cn->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
			shutdown(cn->fd, SHUT_RDWR);
			cn->fd = -1;
			w->cs.slow_closed++;
			FSD_M_INC(closed[FSD_M_CLOSE_SLOW]);
		}
	}
	log_sweep(w);
}

void fsd_conn_drain(struct fsd_worker *w)
{
	/* Between two requests a connection just ends, like a keep-alive
	 * timeout (clients retry a request that meets such a close). One
	 * not served yet has its first request on the way (accepted once
	 * data came in): it is answered, within header_timeout. */
	for (struct fsd_conn *cn = w->conns; cn; cn = cn->next)
		if (cn->fd >= 0 && cn->state == CONN_HEAD && cn->served) {
			shutdown(cn->fd, SHUT_RDWR);
			cn->fd = -1;
		}
}

/* ---- set-up ---- */

int fsd_conn_start(struct fsd_worker *w)
{
	pthread_mutex_lock(&spare_mu);
	if (spare_fd < 0)
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_mutex_unlock(&spare_mu);
	w->accept_ev = calloc(w->nmhd, sizeof *w->accept_ev);
	if (!w->accept_ev)
		return -ENOMEM;
	for (size_t i = 0; i < w->nmhd; i++) {
		w->accept_ev[i] = event_new(w->base, w->listen_fds[i], EV_READ | EV_PERSIST,
		                            on_accept, w);
		if (!w->accept_ev[i] || event_add(w->accept_ev[i], NULL) < 0)
			return -ENOMEM;
	}
	return 0;
}

void fsd_conn_stop_accepting(struct fsd_worker *w)
{
	for (size_t i = 0; w->accept_ev && i < w->nmhd; i++)
		if (w->accept_ev[i]) {
			event_free(w->accept_ev[i]);
			w->accept_ev[i] = NULL;
		}
	free(w->accept_ev);
	w->accept_ev = NULL;
}
