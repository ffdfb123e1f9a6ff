#include "first.h"

#include "daemon/reqhdr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "daemon/log.h"
#include "proto/errpage.h"
#include "proto/httpdate.h"
#include "proto/reqcheck.h"

/* Longest request-target served (414 beyond): static.c decodes into an
 * 8 KiB buffer, and libmicrohttpd's own limit is about 32 KiB. */
#define FSD_MAX_TARGET 8000

/* Headers the handlers read, by index into struct fsd_hdrs. A list's
 * lines are one value joined by ", " (RFC 9110 5.3); of any other,
 * the first line counts. */
static const struct {
	const char *name;
	size_t off;
	bool list;
} wanted[] = {
	{ "Host", offsetof(struct fsd_hdrs, host), false },
	{ "Range", offsetof(struct fsd_hdrs, range), false },
	{ "If-Range", offsetof(struct fsd_hdrs, if_range), false },
	{ "If-Match", offsetof(struct fsd_hdrs, if_match), true },
	{ "If-None-Match", offsetof(struct fsd_hdrs, if_none_match), true },
	{ "If-Modified-Since", offsetof(struct fsd_hdrs, if_modified_since), false },
	{ "If-Unmodified-Since", offsetof(struct fsd_hdrs, if_unmodified_since), false },
	{ "Accept-Encoding", offsetof(struct fsd_hdrs, accept_encoding), true },
	{ "Accept", offsetof(struct fsd_hdrs, accept), true },
	{ "Referer", offsetof(struct fsd_hdrs, referer), false },
	{ "User-Agent", offsetof(struct fsd_hdrs, user_agent), false },
};
#define NWANTED (sizeof wanted / sizeof *wanted)

struct collect {
	struct fsd_req *rq;
	struct proto_reqcheck chk;
	/* first pass: sizes; second: copies */
	const char *val[NWANTED];
	size_t len[NWANTED];        /* a list's: its lines joined */
	bool joined[NWANTED];       /* a list of more than one line */
	bool folded;
	bool nul;               /* a NUL byte somewhere in the head */
	const char *line_end;   /* end of the last line's value, or NULL */
	size_t head;            /* bytes of the request head, counted again */
	size_t fields;
};

/* Client bytes for the error log, which escapes them itself: cut (with
 * "...") to fit @size, a NUL byte shown as '@' since the log takes C
 * strings (the reason in the same line says when NUL was the fault). */
static const char *clip(char *out, size_t size, const char *s, size_t len)
{
	size_t n = len < size ? len : size - 4;

	for (size_t i = 0; i < n; i++)
		out[i] = s[i] ? s[i] : '@';
	if (n < len) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = 0;
	return out;
}

/*
 * NUL bytes. libmicrohttpd 0.9.75 parses the head in place, turning each
 * CR and LF into a NUL and handing out NUL-terminated strings: a NUL
 * sent inside a value silently cuts it ("Host: local\0host" arrives as
 * "local"). What it leaves in the buffer still shows it: between the end
 * of one line's value (or of the request-line) and the start of the next
 * line there must be exactly its terminator, CRLF or LF, so one or two
 * NULs; anything else there (the rest of a cut value, more NULs) is a
 * NUL the client sent. The one case this cannot see, a NUL just before
 * a bare LF, is indistinguishable from CRLF and cuts nothing.
 */
static bool line_gap_ok(const char *end, const char *next, size_t min, size_t max)
{
	if (next < end + min || next > end + max)
		return false;
	for (const char *p = end; p < next; p++)
		if (*p)
			return false;
	return true;
}

/*
 * Obsolete line folding (RFC 9112 5.2: reject with 400). libmicrohttpd
 * 0.9.75 accepts it even in strict mode and leaves no trace in the
 * value: it appends the continuation to the field *name* and moves the
 * value elsewhere in its pool. An unfolded field has its value in place
 * in the read buffer, right after "name:" and optional whitespace; a
 * folded one does not. (Measured on 0.9.75: the gap is 1 + whitespace
 * for normal fields, about -16k for folded ones.)
 */
static bool in_place(const char *key, size_t key_size, const char *value)
{
	const char *end = key + key_size;

	if (value <= end || (size_t)(value - end) > fsd->conf.request_header_max)
		return false;
	for (const char *p = end + 1; p < value; p++)
		if (*p != ' ' && *p != '\t')
			return false;
	return true;
}

/* Trailing OWS is not part of a value (0.9.75 keeps it; leading OWS it
 * skips). */
static size_t trim_ows(const char *value, size_t size)
{
	while (size && (value[size - 1] == ' ' || value[size - 1] == '\t'))
		size--;
	return size;
}

static enum MHD_Result each(void *cls, enum MHD_ValueKind kind,
                            const char *key, size_t key_size,
                            const char *value, size_t value_size)
{
	struct collect *c = cls;

	(void)kind;
	if (!in_place(key, key_size, value))
		c->folded = true;
	else if (c->line_end && !line_gap_ok(c->line_end, key, 1, 2))
		c->nul = true;
	c->line_end = value + value_size;
	c->head += key_size + 2 + value_size + 2;       /* "k: v\r\n" */
	c->fields++;
	proto_reqcheck_field(&c->chk, key, key_size, value, value_size);
	for (size_t i = 0; i < NWANTED; i++)
		if (!strcasecmp(key, wanted[i].name)) {
			value_size = trim_ows(value, value_size);
			if (!c->val[i]) {
				c->val[i] = value;
				c->len[i] = value_size;
			} else if (wanted[i].list) {
				c->joined[i] = true;
				c->len[i] += 2 + value_size;
			}
			/* (a repeated Host: the checker's 400) */
			break;
		}
	return MHD_YES;
}

/* A list's lines, joined into @out (sized by each()'s count). */
struct join {
	const char *name;
	char *out;
	size_t len;
	bool more;              /* a line written: the next one after ", " */
};

static enum MHD_Result join_each(void *cls, enum MHD_ValueKind kind,
                                 const char *key, size_t key_size,
                                 const char *value, size_t value_size)
{
	struct join *j = cls;

	(void)kind;
	(void)key_size;
	if (strcasecmp(key, j->name))
		return MHD_YES;
	value_size = trim_ows(value, value_size);
	if (j->more) {
		memcpy(j->out + j->len, ", ", 2);
		j->len += 2;
	}
	j->more = true;
	memcpy(j->out + j->len, value, value_size);
	j->len += value_size;
	return MHD_YES;
}

/* The request-line as libmicrohttpd left it: "METHOD\0 ...target\0VERSION"
 * with the target's end where rq->uri (copied before it split off the
 * query) ends. A NUL in the method or target ends them early. */
static bool request_line_ok(const struct fsd_req *rq, const char *method,
                            const char *url, const char *version)
{
	size_t ml = strlen(method);

	if (url <= method + ml || method[ml])
		return false;
	for (const char *p = method + ml + 1; p < url; p++)
		if (*p != ' ')
			return false;
	/* no version in the line: libmicrohttpd answers that itself */
	return !*version || url + strlen(rq->uri) + 1 == version;
}

/* The last line of the head: its terminator, then the empty line's. */
static bool last_line_ok(const struct collect *c, struct MHD_Connection *conn,
                         const char *method)
{
	const union MHD_ConnectionInfo *ci;

	if (!c->line_end)
		return true;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	return !ci || line_gap_ok(c->line_end, method + ci->header_size, 2, 4);
}

int fsd_reqhdr_collect(struct fsd_req *rq, struct MHD_Connection *conn,
                       const char *method, const char *url,
                       const char *version)
{
	struct collect c = { .rq = rq };
	size_t total = 0;
	char *mem, *p;

	size_t ulen = strlen(rq->uri);

	proto_reqcheck_begin(&c.chk, rq->method_str, rq->version, rq->uri,
	                     ulen, FSD_MAX_TARGET);
	c.head = strlen(rq->method_str) + 1 + ulen + 1 + strlen(rq->version) + 2 + 2;
	if (!request_line_ok(rq, method, url, version))
		c.nul = true;
	else if (*version)
		c.line_end = version + strlen(version);
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, each, &c);
	for (size_t i = 0; i < NWANTED; i++)
		if (c.val[i])
			total += c.len[i] + 1;
	if (total) {
		/* Most requests' headers fit in the request itself. */
		mem = p = total <= sizeof rq->hdr_inline ? rq->hdr_inline : malloc(total);
		if (!mem)
			return 503;
		for (size_t i = 0; i < NWANTED; i++)
			if (c.val[i]) {
				if (c.joined[i]) {
					struct join j = { wanted[i].name, p, 0, false };
					MHD_get_connection_values_n(conn, MHD_HEADER_KIND,
					                            join_each, &j);
				} else {
					memcpy(p, c.val[i], c.len[i]);
				}
				p[c.len[i]] = 0;
				*(const char **)((char *)&rq->h + wanted[i].off) = p;
				p += c.len[i] + 1;
			}
		if (mem != rq->hdr_inline)
			rq->hdr_mem = mem;
	}
	if (c.folded) {
		rq->close = true;
		return 400;
	}
	struct proto_verdict v = proto_reqcheck_end(&c.chk);
	if (c.nul || !last_line_ok(&c, conn, method)) {
		v.status = 400;
		v.close_connection = true;
		v.reason = "NUL byte in the request head";
	}
	/* libmicrohttpd's pool is sized for request_header_max and
	 * FSD_MAX_FIELDS (daemon.h): heads beyond that get its own 431
	 * (or 414); ours makes the limits the configured ones. Its own
	 * count of the head's bytes includes the whitespace it strips
	 * before each value. */
	const union MHD_ConnectionInfo *hs =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	size_t head = hs && hs->header_size > c.head ? hs->header_size : c.head;
	if (!v.status && head > fsd->conf.request_header_max) {
		v.status = 431;
		v.reason = "request head larger than request_header_max";
	} else if (!v.status && c.fields > FSD_MAX_FIELDS) {
		v.status = 431;
		v.reason = "more header fields than the server takes";
	}
	rq->close = v.close_connection;
	if (v.status) {
		char m[64], u[256];

		fsd_log(LOG_INFO, "%s %s: %u: %s", clip(m, sizeof m, rq->method_str, strlen(rq->method_str)),
		        clip(u, sizeof u, rq->uri, ulen), v.status, v.reason);
	}
	return (int)v.status;
}

/*
 * Connections whose first bytes cannot start an HTTP request (a TLS
 * handshake, binary, "GARBAGE\r\n"). libmicrohttpd 0.9.75 closes on a
 * request-line without a space without answering, skips lines that
 * start with a NUL as empty, and waits for a line end that binary input
 * may never send: the connection is held until the idle timeout. It
 * calls this before it first reads from the socket, and the listening
 * sockets defer accept until data has arrived (main.c), so the first
 * segment can be looked at here: if it cannot be HTTP it is read and
 * dropped, a 400 is sent, and both directions are shut down, which
 * libmicrohttpd sees as a hang-up and closes the connection at once.
 * Later requests on a connection, and a first segment that is a valid
 * prefix, are libmicrohttpd's to judge.
 *
 * On an ssl listener the first segment must be a TLS handshake record
 * instead (GnuTLS judges the rest); anything else is most likely plain
 * HTTP sent to the https port, and is told so in plain HTTP, as nginx
 * does, rather than left to a handshake failure the client cannot read.
 */
static const char plain_on_tls[] =
	"400 Bad Request: a plain HTTP request was sent to an HTTPS port; use https://\n";

static void refuse_not_http(int fd, const char *peek, size_t n, bool tls)
{
	char head[320], date[PROTO_HTTPDATE_LEN], addr[48] = "client", what[80];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	size_t blen = sizeof plain_on_tls - 1;
	const char *body = tls ? plain_on_tls : proto_errpage(400, &blen);
	char sink[4096];
	int hl;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof addr);
		else if (ss.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof addr);
	}
	fsd_log(LOG_INFO, "%s: 400: %s (\"%s\")", addr,
	        tls ? "not a TLS handshake on an ssl listener" : "not an HTTP request",
	        clip(what, sizeof what, peek, n < 16 ? n : 16));
	/* unread input at close would turn the FIN into a reset that can
	 * destroy the answer before the client reads it */
	for (int i = 0; i < 64 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
		;
	proto_httpdate_format(time(NULL), date);
	hl = snprintf(head, sizeof head,
	              "HTTP/1.1 400 Bad Request\r\n"
	              "Date: %s\r\n"
	              "Connection: close\r\n"
	              "Content-Type: %s\r\n"
	              "Server: fileserverd/" PACKAGE_VERSION "\r\n"
	              "Content-Length: %zu\r\n\r\n", date,
	              tls ? "text/plain; charset=utf-8" : "text/html; charset=utf-8", blen);
	struct iovec iov[2] = { { head, (size_t)hl }, { (void *)body, blen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	/* a fresh socket's buffer takes this whole; if not, the client
	 * gets less and the close all the same */
	(void)sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(fd, SHUT_RDWR);
}

void fsd_conn_notify_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *ci;
	const union MHD_DaemonInfo *di;
	char peek[256];
	ssize_t n;
	bool tls;

	(void)cls;
	(void)socket_context;
	if (code != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
	di = ci ? MHD_get_daemon_info(ci->daemon, MHD_DAEMON_INFO_FLAGS) : NULL;
	tls = di && (di->flags & MHD_USE_TLS);
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	n = recv(ci->connect_fd, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return;
	/* 22: a TLS handshake record (RFC 8446 5.1) */
	if (tls ? (unsigned char)peek[0] != 22 : !proto_reqcheck_start(peek, (size_t)n))
		refuse_not_http(ci->connect_fd, peek, (size_t)n, tls);
}
