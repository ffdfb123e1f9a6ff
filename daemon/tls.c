#include "first.h"

#include "daemon/tls.h"
#include "daemon/daemon.h"
#include "daemon/priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <event2/event.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <fibril/fibril.h>

/* TLS 1.2 and 1.3 only: older versions have no cipher suite left that
 * is not deprecated (RFC 8996). GnuTLS's NORMAL set otherwise. */
#define FSD_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* A certificate chain or key beyond this is not a PEM file. */
#define FSD_TLS_PEM_MAX (1u << 20)

struct tls_check {
	const struct conf *c;   /* its file and lines, for messages */
	const char *file;       /* the configuration file, for messages */
	conf_err_fn *err;
	void *arg;
	int errors;
};

/* "file:line: key path: why", the line where the file sets @key */
static void tls_report(struct tls_check *ck, const char *key, const char *path,
                       const char *why)
{
	int line = strcmp(key, "ssl_certificate") ? ck->c->ssl_certificate_key_line :
	           ck->c->ssl_certificate_line;
	char msg[1024], at[16] = "";

	if (line > 0)
		snprintf(at, sizeof at, ":%d", line);
	snprintf(msg, sizeof msg, "%s%s: %s %s: %s", ck->file, at, key, path, why);
	ck->errors++;
	if (ck->err)
		ck->err(ck->arg, msg);
}

/* The whole of @path, NUL-terminated, or NULL (reported). */
static char *tls_read(struct tls_check *ck, const char *key, const char *path,
                      size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	/* directly, or after privileges are gone through the root helper;
	 * non-blocking, so that a FIFO named by mistake is refused below
	 * instead of holding start-up or a reload until a writer comes */
	char why[LO_MSG];
	int fd = fsd_priv_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, why);

	if (fd < 0) {
		tls_report(ck, key, path, why);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		tls_report(ck, key, path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > FSD_TLS_PEM_MAX) {
		tls_report(ck, key, path, S_ISDIR(st.st_mode) ? "is a directory" :
		           !S_ISREG(st.st_mode) ? "not a regular file" : "too large for a PEM file");
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0) {
			tls_report(ck, key, path, r < 0 ? strerror(errno) : "shorter than its size");
			free(buf);
			buf = NULL;
			break;
		}
		got += (size_t)r;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[got] = 0;
	*len = got;
	return buf;
}

/* Each file on its own first, so that a message names the one at
 * fault; then the pair. */
static void tls_check_pem(struct tls_check *ck, const struct conf *c,
                          const char *cert, size_t clen,
                          const char *key, size_t klen)
{
	gnutls_datum_t cd = { (unsigned char *)cert, (unsigned)clen };
	gnutls_datum_t kd = { (unsigned char *)key, (unsigned)klen };
	gnutls_x509_crt_t *crts = NULL;
	unsigned ncrt = 0;
	gnutls_x509_privkey_t pk;
	gnutls_certificate_credentials_t cred;
	char why[256];
	int r;

	if (!strstr(cert, "-----BEGIN CERTIFICATE-----")) {
		tls_report(ck, "ssl_certificate", c->ssl_certificate,
		           "no PEM certificate in it (-----BEGIN CERTIFICATE-----)");
		return;
	}
	r = gnutls_x509_crt_list_import2(&crts, &ncrt, &cd, GNUTLS_X509_FMT_PEM,
	                                 GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
	if (r < 0) {
		snprintf(why, sizeof why, "not a valid PEM certificate chain: %s",
		         gnutls_strerror(r));
		tls_report(ck, "ssl_certificate", c->ssl_certificate, why);
		return;
	}
	for (unsigned i = 0; i < ncrt; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);

	if (!strstr(key, "PRIVATE KEY-----")) {
		tls_report(ck, "ssl_certificate_key", c->ssl_certificate_key,
		           "no PEM private key in it (-----BEGIN PRIVATE KEY-----)");
		return;
	}
	if (gnutls_x509_privkey_init(&pk) < 0)
		return;
	r = gnutls_x509_privkey_import2(pk, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	gnutls_x509_privkey_deinit(pk);
	if (r < 0) {
		snprintf(why, sizeof why, "not a valid PEM private key%s: %s",
		         r == GNUTLS_E_DECRYPTION_FAILED ? " (encrypted keys are not supported)" : "",
		         gnutls_strerror(r));
		tls_report(ck, "ssl_certificate_key", c->ssl_certificate_key, why);
		return;
	}

	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return;
	r = gnutls_certificate_set_x509_key_mem2(cred, &cd, &kd, GNUTLS_X509_FMT_PEM,
	                                         NULL, 0);
	gnutls_certificate_free_credentials(cred);
	if (r < 0) {
		snprintf(why, sizeof why, "%s%s: %s",
		         r == GNUTLS_E_CERTIFICATE_KEY_MISMATCH ? "does not match ssl_certificate " : "",
		         r == GNUTLS_E_CERTIFICATE_KEY_MISMATCH ? c->ssl_certificate : "unusable",
		         gnutls_strerror(r));
		tls_report(ck, "ssl_certificate_key", c->ssl_certificate_key, why);
	}
}

/* The key that encrypts TLS resumption tickets: made once per process, in
 * memory only, and kept across reloads so that tickets issued before
 * one still resume after it. GnuTLS derives the key actually used from
 * it and rotates that (gnutls_session_ticket_enable_server(3)), so a
 * stolen ticket key does not open all sessions of the process's life. */
static gnutls_datum_t tls_ticket_key;

int fsd_tls_load(struct fsd_server *srv, conf_err_fn *err, void *arg)
{
	const struct conf *c = &srv->conf;
	struct tls_check ck = { .c = c, .file = c->file ? c->file : "fileserverd",
	                        .err = err, .arg = arg };
	size_t clen = 0, klen = 0, i;
	char *cert, *key;

	for (i = 0; i < c->nlisten && !c->listen[i].ssl; i++)
		;
	/* no ssl listener, or none usable (conf_validate said why) */
	if (i == c->nlisten || !c->ssl_certificate || !c->ssl_certificate_key)
		return 0;
	cert = tls_read(&ck, "ssl_certificate", c->ssl_certificate, &clen);
	key = tls_read(&ck, "ssl_certificate_key", c->ssl_certificate_key, &klen);
	if (cert && key)
		tls_check_pem(&ck, c, cert, clen, key, klen);
	if (ck.errors) {
		free(cert);
		if (key) {
			explicit_bzero(key, klen);
			free(key);
		}
		return ck.errors;
	}
	/* (start-up and reloads run on the main thread, before the workers
	 * of this configuration read the key) */
	if (!tls_ticket_key.data && gnutls_session_ticket_key_generate(&tls_ticket_key) < 0)
		tls_ticket_key.data = NULL;
	fsd_tls_free(srv);
	srv->tls_cert = cert;
	srv->tls_key = key;
	return 0;
}

void fsd_tls_free(struct fsd_server *srv)
{
	free(srv->tls_cert);
	if (srv->tls_key) {
		explicit_bzero(srv->tls_key, strlen(srv->tls_key));
		free(srv->tls_key);
	}
	srv->tls_cert = srv->tls_key = NULL;
}

unsigned fsd_tls_options(const struct fsd_server *srv, size_t i,
                         struct MHD_OptionItem *opt)
{
	size_t n = 0;
	unsigned flags = 0;

	/* without a certificate libmicrohttpd refuses to start: never a
	 * plain listener where ssl was asked for */
	if (srv->conf.listen[i].ssl) {
		opt[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls_cert };
		opt[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key };
		opt[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
		                                    (void *)FSD_TLS_PRIORITIES };
		flags = MHD_USE_TLS;
	}
	opt[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	return flags;
}

bool fsd_tls_conn(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON) : NULL;
	const union MHD_DaemonInfo *di =
		ci ? MHD_get_daemon_info(ci->daemon, MHD_DAEMON_INFO_FLAGS) : NULL;

	return di && (di->flags & MHD_USE_TLS);
}

uint64_t fsd_tls_plain_bytes(struct MHD_Connection *conn, uint64_t wire)
{
	const union MHD_ConnectionInfo *ci = fsd_tls_conn(conn) ?
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION) : NULL;
	gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
	uint64_t full, over, rest;

	if (!s)
		return wire;
	/* the negotiated record size (a client may ask for smaller ones) */
	full = gnutls_record_get_max_size(s);
	over = gnutls_record_overhead_size(s);
	if (!full)
		return wire;
	rest = wire % (full + over);
	return wire / (full + over) * full + (rest > over ? rest - over : 0);
}

/* ---- the transport under GnuTLS ----
 *
 * libmicrohttpd 0.9.75 sends a buffered response as two records, the
 * header and then the body, each with its own send; and GnuTLS reads a
 * record in two recvs, its 5-byte header and then the rest. A client
 * pays for each record too: a decryption and usually a read. So:
 *
 * - A response that fits one record is corked in GnuTLS when it is
 *   queued and uncorked when libmicrohttpd reports it complete: header
 *   and body leave as one record in one write. The uncork runs outside
 *   libmicrohttpd's send, so nothing may be left in GnuTLS (its next
 *   send would be taken for a retry of this one): what the socket does
 *   not take waits in out[], written when it is writable (an event of
 *   our own, since libmicrohttpd may have nothing more to send) and
 *   before any later record. While bytes wait there, responses take
 *   the next way, whose sends wait for the socket: a client that
 *   pipelines requests and reads nothing is not buffered for. Should
 *   libmicrohttpd close the connection meanwhile, the bytes are still
 *   written, on a copy of the descriptor (tls_orphan()).
 *   libmicrohttpd keeps TLS sockets corked (TCP_CORK) and pushes with
 *   TCP_NODELAY after its own sends; a write after those would wait,
 *   so the first uncork takes TCP_CORK off for good (libmicrohttpd,
 *   believing it set, never sets it again).
 * - The header record of a larger response is held and leaves with
 *   the body's first record in one writev; a push that cannot write
 *   everything reports EAGAIN for its own record, so libmicrohttpd
 *   waits for the socket and retries, and the held rest goes first.
 * - Each read also fills a small read-ahead buffer, handed out before
 *   the socket is read again; a read returns EAGAIN only when that is
 *   empty too: libmicrohttpd (epoll, edge-triggered) keeps reading a
 *   TLS connection until it sees EAGAIN.
 */

#define TLS_HELD_MAX 1024       /* a response header record fits */
#define TLS_AHEAD_MAX 2048      /* a typical request record fits */
/* A body this small, with its header, fits one 16 KiB record. */
#define TLS_ONE_RECORD (15u * 1024)

struct fsd_tls_io {
	int fd;
	gnutls_session_t s;
	struct event_base *base;
	struct event *flush;    /* writes out[] once the socket takes it */
	bool hold;              /* hold the next push: another one follows */
	bool corked;            /* GnuTLS corked for the response queued */
	bool keep_all;          /* in the uncork: push keeps what is refused */
	bool tcp_uncorked;
	bool key_update;        /* the peer asked for one: GnuTLS answers in
	                         * its next send, which a cork would undo */
	/* closed by libmicrohttpd with bytes in out[]: on the worker's
	 * list of those, with its own descriptor, until they are written
	 * or the deadline */
	bool orphan;
	uint64_t until_ns;
	struct fsd_tls_io *onext, *oprev;
	unsigned char *out;     /* bytes for the socket before any other */
	size_t out_off, out_len, out_cap;
	size_t ahead_off, ahead_len;
	unsigned char ahead[TLS_AHEAD_MAX];
};

/* Records GnuTLS has queued at most (its MAX_QUEUE, a handshake
 * flight); a push writes them all or reports a full socket. */
#define TLS_PUSH_IOV 32

/* The transport left to a GnuTLS state whose connection is closed (its io
 * freed): every call fails, nothing is touched. */
static struct fsd_tls_io tls_io_closed;

static bool tls_out_add(struct fsd_tls_io *io, const void *p, size_t n)
{
	if (io->out_len + n > io->out_cap) {
		size_t cap = io->out_cap ? io->out_cap : TLS_HELD_MAX;
		unsigned char *o;

		while (cap < io->out_len + n)
			cap *= 2;
		if (!(o = realloc(io->out, cap)))
			return false;
		io->out = o;
		io->out_cap = cap;
	}
	memcpy(io->out + io->out_len, p, n);
	io->out_len += n;
	return true;
}

/* What @iov holds from byte @skip on goes to out[], to be written when
 * the socket is writable. False if out of memory. */
static bool tls_out_keep(struct fsd_tls_io *io, const giovec_t *iov, int iovcnt,
                         size_t skip)
{
	for (int i = 0; i < iovcnt; i++) {
		size_t n = iov[i].iov_len;
		if (skip >= n) {
			skip -= n;
			continue;
		}
		if (!tls_out_add(io, (const char *)iov[i].iov_base + skip, n - skip))
			return false;
		skip = 0;
	}
	if (io->flush)
		event_add(io->flush, NULL);
	return true;
}

/* Writes out[]; true when it is empty. A failed socket drops it: the
 * connection's next read or write then fails for libmicrohttpd too. */
static bool tls_out_write(struct fsd_tls_io *io)
{
	while (io->out_off < io->out_len) {
		ssize_t w = write(io->fd, io->out + io->out_off, io->out_len - io->out_off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN) {
			io->out_off = io->out_len;
			break;
		}
		if (w < 0)
			return false;
		io->out_off += (size_t)w;
	}
	io->out_off = io->out_len = 0;
	return true;
}

/* Connections libmicrohttpd closed while bytes of theirs were in out[]
 * (a close right after a response, a drain, a client that half-closed):
 * the bytes are a response libmicrohttpd counts as sent. */
static __thread struct fsd_tls_io *tls_orphans;
static __thread unsigned tls_norphans;

static void tls_orphan_end(struct fsd_tls_io *io)
{
	if (io->oprev)
		io->oprev->onext = io->onext;
	else
		tls_orphans = io->onext;
	if (io->onext)
		io->onext->oprev = io->oprev;
	tls_norphans--;
	event_free(io->flush);
	close(io->fd);
	free(io->out);
	free(io);
}

static void tls_out_ready(evutil_socket_t fd, short what, void *arg)
{
	struct fsd_tls_io *io = arg;
	uint64_t now;

	(void)fd;
	if (!io->orphan) {
		if (!tls_out_write(io))
			event_add(io->flush, NULL);
		return;
	}
	now = fibril_now_ns();
	if ((what & EV_TIMEOUT) || tls_out_write(io) || now >= io->until_ns) {
		tls_orphan_end(io);
		return;
	}
	uint64_t left = io->until_ns - now;
	struct timeval tv = { (time_t)(left / 1000000000u),
	                      (suseconds_t)(left % 1000000000u / 1000u) };
	event_add(io->flush, &tv);
}

/* Takes over @io, whose descriptor libmicrohttpd is about to close,
 * to write out[] on a copy of it, for at most connection_timeout.
 * False if it cannot (the bytes are lost, as with a reset). */
static bool tls_orphan(struct fsd_tls_io *io)
{
	unsigned secs = fsd->conf.connection_timeout ? fsd->conf.connection_timeout : 60;
	struct timeval tv = { (time_t)secs, 0 };
	int fd = fcntl(io->fd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0)
		return false;
	io->flush = event_new(io->base, fd, EV_WRITE, tls_out_ready, io);
	if (!io->flush || event_add(io->flush, &tv) < 0) {
		if (io->flush)
			event_free(io->flush);
		close(fd);
		return false;
	}
	io->fd = fd;
	io->orphan = true;
	io->until_ns = fibril_now_ns() + (uint64_t)secs * 1000000000u;
	io->oprev = NULL;
	io->onext = tls_orphans;
	if (tls_orphans)
		tls_orphans->oprev = io;
	tls_orphans = io;
	tls_norphans++;
	return true;
}

unsigned fsd_tls_orphans(void)
{
	return tls_norphans;
}

void fsd_tls_orphans_free(void)
{
	while (tls_orphans)
		tls_orphan_end(tls_orphans);
}

/* Writes out[], then @iov; returns the bytes of @iov taken, or -1 with
 * errno (EAGAIN when the socket is full, out[] kept). */
static ssize_t tls_io_push(gnutls_transport_ptr_t p, const giovec_t *iov, int iovcnt)
{
	struct fsd_tls_io *io = p;
	struct iovec v[1 + TLS_PUSH_IOV];
	size_t total = 0, pending;
	int n = 0, i;
	ssize_t w;

	if (io == &tls_io_closed || iovcnt > TLS_PUSH_IOV) {
		errno = io == &tls_io_closed ? EBADF : EINVAL;
		return -1;
	}
	for (i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	pending = io->out_len - io->out_off;
	if (io->hold && pending + total <= TLS_HELD_MAX) {
		io->hold = false;
		for (i = 0; i < iovcnt; i++)
			if (!tls_out_add(io, iov[i].iov_base, iov[i].iov_len))
				return -1;
		return (ssize_t)total;
	}
	io->hold = false;
	if (pending)
		v[n++] = (struct iovec){ io->out + io->out_off, pending };
	for (i = 0; i < iovcnt; i++)
		v[n++] = (struct iovec){ iov[i].iov_base, iov[i].iov_len };
	w = writev(io->fd, v, n);
	if (w < 0 && io->keep_all && (errno == EAGAIN || errno == EINTR))
		w = 0;
	if (w < 0)
		return -1;
	if ((size_t)w < pending) {
		io->out_off += (size_t)w;
		if (!io->keep_all) {
			errno = EAGAIN;
			return -1;
		}
		return tls_out_keep(io, iov, iovcnt, 0) ? (ssize_t)total : -1;
	}
	io->out_off = io->out_len = 0;
	w -= (ssize_t)pending;
	if (io->keep_all && (size_t)w < total)
		return tls_out_keep(io, iov, iovcnt, (size_t)w) ? (ssize_t)total : -1;
	return w;
}

static ssize_t tls_io_pull(gnutls_transport_ptr_t p, void *data, size_t len)
{
	struct fsd_tls_io *io = p;
	struct iovec v[2];
	ssize_t r;

	if (io == &tls_io_closed) {
		errno = EBADF;
		return -1;
	}
	/* Bytes in out[] go before anything this read leads to. A held
	 * header is never among them when the caller of fsd_tls_sending()
	 * is right; should it be, it goes out now rather than later. */
	io->hold = false;
	if (io->out_len > io->out_off)
		tls_out_write(io);
	if (io->ahead_len) {
		size_t n = len < io->ahead_len ? len : io->ahead_len;
		memcpy(data, io->ahead + io->ahead_off, n);
		io->ahead_off += n;
		io->ahead_len -= n;
		return (ssize_t)n;
	}
	v[0] = (struct iovec){ data, len };
	v[1] = (struct iovec){ io->ahead, TLS_AHEAD_MAX };
	r = readv(io->fd, v, 2);
	if (r <= 0 || (size_t)r <= len)
		return r;
	io->ahead_off = 0;
	io->ahead_len = (size_t)r - len;
	return (ssize_t)len;
}

static int tls_io_pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
	struct fsd_tls_io *io = p;
	struct pollfd pfd = { io->fd, POLLIN, 0 };

	if (io == &tls_io_closed) {
		errno = EBADF;
		return -1;
	}
	if (io->ahead_len)
		return 1;
	return poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
}

static gnutls_session_t tls_session(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	return ci ? (gnutls_session_t)ci->tls_session : NULL;
}

/* A KeyUpdate came in: if it asks for ours, GnuTLS sends it with the
 * next record, a state that gnutls_record_cork() would overwrite. */
static int tls_key_update(gnutls_session_t s, unsigned type, unsigned when,
                          unsigned incoming, const gnutls_datum_t *msg)
{
	struct fsd_tls_io *io = gnutls_transport_get_ptr(s);

	(void)when;
	(void)msg;
	if (type == GNUTLS_HANDSHAKE_KEY_UPDATE && incoming && io && io != &tls_io_closed)
		io->key_update = true;
	return 0;
}

struct fsd_tls_io *fsd_tls_attach(struct MHD_Connection *mc, int fd,
                                  struct event_base *base)
{
	gnutls_session_t s = tls_session(mc);
	struct fsd_tls_io *io;

	if (!s || fd < 0 || !(io = calloc(1, sizeof *io)))
		return NULL;    /* GnuTLS's own transport then */
	io->fd = fd;
	io->s = s;
	io->base = base;
	io->flush = event_new(base, fd, EV_WRITE, tls_out_ready, io);
	if (!io->flush) {
		free(io);
		return NULL;
	}
	gnutls_transport_set_ptr(s, io);
	gnutls_transport_set_vec_push_function(s, tls_io_push);
	gnutls_transport_set_pull_function(s, tls_io_pull);
	gnutls_transport_set_pull_timeout_function(s, tls_io_pull_timeout);
	gnutls_handshake_set_hook_function(s, GNUTLS_HANDSHAKE_KEY_UPDATE,
	                                   GNUTLS_HOOK_POST, tls_key_update);
	/* before the handshake, which sends the ticket */
	if (fsd->conf.ssl_session_tickets && tls_ticket_key.data)
		gnutls_session_ticket_enable_server(s, &tls_ticket_key);
	return io;
}

void fsd_tls_sending(struct fsd_tls_io *io, uint64_t body_len)
{
	if (!io || !body_len)
		return;
	/* bytes still wait for the socket: sends that wait for it too */
	if (io->out_len > io->out_off)
		return;
	if (io->key_update) {
		io->key_update = false;
		io->hold = true;
		return;
	}
	if (body_len <= TLS_ONE_RECORD) {
		gnutls_record_cork(io->s);
		io->corked = true;
	} else {
		io->hold = true;
	}
}

void fsd_tls_sent(struct fsd_tls_io *io)
{
	static const int off = 0;

	if (!io || !io->corked)
		return;
	io->corked = false;
	if (!io->tcp_uncorked) {
		setsockopt(io->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
		io->tcp_uncorked = true;
	}
	io->keep_all = true;
	/* On failure GnuTLS stays corked and would keep every later
	 * response: the connection is ended, libmicrohttpd meets it next. */
	if (gnutls_record_uncork(io->s, 0) < 0)
		shutdown(io->fd, SHUT_RDWR);
	io->keep_all = false;
}

void fsd_tls_detach(struct MHD_Connection *mc, struct fsd_tls_io *io)
{
	gnutls_session_t s;

	if (!io)
		return;
	s = tls_session(mc);
	if (s)
		gnutls_transport_set_ptr(s, &tls_io_closed);
	event_free(io->flush);
	io->flush = NULL;
	if (io->out_len > io->out_off && tls_orphan(io))
		return;
	free(io->out);
	free(io);
}
