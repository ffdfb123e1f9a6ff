/*
 * proto/reqcheck.h: request validation that RFC 9112 requires and that
 * libmicrohttpd 0.9.75 does not do by itself (docs/DESIGN.md, "Request
 * validation"). Pure, any
 * thread; the checker struct belongs to one request.
 *
 * Use: proto_reqcheck_begin(), then proto_reqcheck_field() for every
 * header field as delivered (e.g. from MHD_get_connection_values_n()
 * with MHD_HEADER_KIND), in order, then proto_reqcheck_end(). Or
 * proto_reqcheck() with an array. The first problem found decides the
 * status; close_connection accumulates (a framing problem anywhere means
 * the rest of the byte stream cannot be trusted).
 *
 * Choices (RFC 9112 / 9110 leave some to the server):
 *  - missing Host in HTTP/1.1, more than one Host, invalid Host syntax
 *    (RFC 9112 3.2, RFC 3986 host [":" port]) -> 400, keep-alive kept.
 *  - a field name that is not a token, a value with a control byte other
 *    than HTAB (incl. CR/LF: traces of obs-fold or smuggling) -> 400,
 *    close.
 *  - Transfer-Encoding: a coding we do not know (anything but chunked,
 *    gzip, x-gzip, deflate, compress, x-compress, identity) -> 501
 *    (RFC 9112 6.1 SHOULD); in HTTP/1.0, together with Content-Length,
 *    or chunked missing, repeated or not last -> 400 (RFC 9112 6.3).
 *  - Content-Length not a plain decimal, or several that differ
 *    ("5, 6", or two fields) -> 400, close (RFC 9112 6.3). Identical
 *    repeats are one value.
 *  - CONNECT -> 501, close: RFC 9110 9.1 asks 501 for a method the
 *    server does not implement, and a tunnel is not a resource that
 *    could allow it. Its target must be authority-form (host:port),
 *    which no other method may use (RFC 9112 3.2.3) -> 400.
 *  - any method but GET, HEAD, OPTIONS -> 405 (the daemon adds Allow;
 *    nginx does the same for POST on static files). The method is
 *    judged before the body, so POST with content is 405, not 413.
 *  - a body on a method we serve: chunked -> 411 (RFC 9112 6.3 MAY:
 *    a client with an empty body can retry with Content-Length: 0);
 *    Content-Length > 0 -> 413.
 *  - whatever the status, a request with a body (Content-Length > 0
 *    or Transfer-Encoding) closes the connection: the body is never
 *    read, and its bytes would otherwise be parsed as the next request.
 *  - Expect other than "100-continue" (case-insensitive) -> 417.
 *  - request target longer than @max_target bytes -> 414; a target that
 *    is not origin-form or absolute-form ("*" only with OPTIONS) -> 400.
 */
#ifndef PROTO_REQCHECK_H
#define PROTO_REQCHECK_H

#include <stdbool.h>
#include <stddef.h>

struct proto_verdict {
	unsigned status;        /* 0 = acceptable, else the status to send */
	bool close_connection;  /* send "Connection: close" and close */
	const char *reason;     /* static text for the error log, "" if ok */
};

/** Checker state; treat as opaque (fields may change). */
struct proto_reqcheck {
	struct proto_verdict v;
	bool http11;
	bool connect;           /* CONNECT */
	bool served;            /* GET, HEAD, OPTIONS */
	bool has_te;
	bool te_chunked_last;   /* the last coding so far is chunked */
	bool te_chunked_twice;
	unsigned hosts;
	long long content_length;       /* -1: none seen */
};

/** A header field; the value need not be NUL-terminated. */
struct proto_header {
	const char *name;
	size_t namelen;
	const char *value;
	size_t valuelen;
};

/**
 * Starts checking a request. @method and @version are NUL-terminated
 * ("GET", "HTTP/1.1"); @target is the raw request-target, @target_len
 * bytes. @max_target: longest target accepted (0: no limit).
 */
void proto_reqcheck_begin(struct proto_reqcheck *c, const char *method,
                          const char *version, const char *target,
                          size_t target_len, size_t max_target);

/** Checks one header field. Names are matched case-insensitively. */
void proto_reqcheck_field(struct proto_reqcheck *c, const char *name,
                          size_t namelen, const char *value, size_t valuelen);

/** Finishes (checks what needs all fields, e.g. a missing Host). */
struct proto_verdict proto_reqcheck_end(struct proto_reqcheck *c);

/** All of the above in one call. */
struct proto_verdict proto_reqcheck(const char *method, const char *version,
                                    const char *target, size_t target_len,
                                    const struct proto_header *h, size_t n,
                                    size_t max_target);

/**
 * Whether @buf, the first @len bytes received on a connection, can begin
 * an HTTP/1.x request: optional empty lines, a method token, SP, a
 * target without control bytes, SP, "HTTP/" DIGIT "." DIGIT. Returns 1
 * if so or if the bytes end before that can be told (a slow client), 0
 * if no request can start so (TLS handshake, binary, "GARBAGE\r\n").
 */
int proto_reqcheck_start(const char *buf, size_t len);

#endif
