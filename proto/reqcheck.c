#include "first.h"

#include "proto/reqcheck.h"

#include <string.h>
#include <strings.h>

static void fail(struct proto_reqcheck *c, unsigned status, bool close,
                 const char *reason)
{
	if (!c->v.status) {
		c->v.status = status;
		c->v.reason = reason;
	}
	c->v.close_connection |= close;
}

/* tchar (RFC 9110 5.6.2) */
static bool tchar(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
	       (ch >= 'A' && ch <= 'Z') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && !strncasecmp(name, want, len);
}

static bool hexdig(unsigned char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* Host = uri-host [ ":" port ] (RFC 9110 7.2, RFC 3986 3.2.2). An empty
 * value is valid (RFC 9112 3.2: an empty authority). With @need_port
 * (CONNECT's authority-form, RFC 9112 3.2.3) the port must be there. */
static bool valid_host(const char *v, size_t len, bool need_port)
{
	size_t i = 0;

	if (len && v[0] == '[') {
		/* IP-literal: IPv6address or IPvFuture; checked loosely by
		 * alphabet, which is all a lookup-by-path server needs */
		for (i = 1; i < len && v[i] != ']'; i++) {
			unsigned char c = (unsigned char)v[i];

			if (!hexdig(c) && c != ':' && c != '.' && c != 'v' &&
			    c != 'V' && !strchr("-_~!$&'()*+,;=", c))
				return false;
		}
		if (i >= len || i == 1)
			return false;
		i++;
	} else {
		/* reg-name / IPv4address: unreserved / pct-encoded /
		 * sub-delims */
		for (; i < len && v[i] != ':'; i++) {
			unsigned char c = (unsigned char)v[i];

			if (c == '%') {
				if (len - i < 3 || !hexdig((unsigned char)v[i + 1]) ||
				    !hexdig((unsigned char)v[i + 2]))
					return false;
				i += 2;
			} else if (!((c >= '0' && c <= '9') ||
			             (c >= 'a' && c <= 'z') ||
			             (c >= 'A' && c <= 'Z') ||
			             strchr("-._~!$&'()*+,;=", c)) || !c) {
				return false;
			}
		}
	}
	if (i < len) {
		if (v[i] != ':' || (need_port && i + 1 == len))
			return false;
		for (i++; i < len; i++)
			if (v[i] < '0' || v[i] > '9')
				return false;
		return true;
	}
	return !need_port;
}

/* Codings a server might understand (RFC 9112 7, the IANA registry);
 * anything else gets 501. */
static bool known_coding(const char *s, size_t len)
{
	static const char *const known[] = { "chunked", "gzip", "x-gzip",
		"deflate", "compress", "x-compress", "identity" };

	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		if (is(s, len, known[i]))
			return true;
	return false;
}

static void check_te(struct proto_reqcheck *c, const char *v, size_t len)
{
	bool unknown = false, any = false;

	for (size_t i = 0; i < len;) {
		size_t s, e;

		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < len && v[i] != ',' && v[i] != ';' && v[i] != ' ' &&
		       v[i] != '\t')
			i++;
		e = i;
		while (i < len && v[i] != ',')   /* parameters */
			i++;
		if (e > s) {
			any = true;
			if (!known_coding(v + s, e - s))
				unknown = true;
			/* chunked applied twice, or anything applied after
			 * it, leaves the length unknowable (RFC 9112 6.3) */
			if (c->te_chunked_last)
				c->te_chunked_twice |= is(v + s, e - s, "chunked");
			c->te_chunked_last = is(v + s, e - s, "chunked");
		}
	}
	c->has_te = true;
	if (!c->http11)
		fail(c, 400, true, "Transfer-Encoding in HTTP/1.0");
	else if (unknown || !any)
		fail(c, 501, true, "unknown transfer coding");
}

static void check_cl(struct proto_reqcheck *c, const char *v, size_t len)
{
	/* Content-Length = 1*DIGIT; a list of identical values may be
	 * taken as one (RFC 9110 8.6), anything else is invalid framing. */
	for (size_t i = 0; i < len;) {
		long long n = 0;
		size_t s;

		while (i < len && (v[i] == ' ' || v[i] == '\t'))
			i++;
		s = i;
		while (i < len && v[i] >= '0' && v[i] <= '9') {
			if (n > (0x7fffffffffffffffLL - 9) / 10) {
				fail(c, 400, true, "Content-Length overflow");
				return;
			}
			n = n * 10 + (v[i++] - '0');
		}
		while (i < len && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (i == s || (i < len && v[i] != ',')) {
			fail(c, 400, true, "invalid Content-Length");
			return;
		}
		if (i < len)
			i++;            /* ',' */
		if (c->content_length >= 0 && c->content_length != n) {
			fail(c, 400, true, "conflicting Content-Length");
			return;
		}
		c->content_length = n;
		if (i == len && v[len - 1] == ',') {
			fail(c, 400, true, "invalid Content-Length");
			return;
		}
	}
	if (!len)
		fail(c, 400, true, "empty Content-Length");
}

void proto_reqcheck_begin(struct proto_reqcheck *c, const char *method,
                          const char *version, const char *target,
                          size_t target_len, size_t max_target)
{
	memset(c, 0, sizeof *c);
	c->v.reason = "";
	c->content_length = -1;
	c->http11 = version && strcmp(version, "HTTP/1.0") &&
	            strcmp(version, "HTTP/0.9");
	c->connect = method && !strcmp(method, "CONNECT");
	c->served = method && (!strcmp(method, "GET") || !strcmp(method, "HEAD") ||
	                       !strcmp(method, "OPTIONS"));
	if (max_target && target_len > max_target) {
		fail(c, 414, false, "request target too long");
		return;
	}
	if (!target || !target_len) {
		fail(c, 400, false, "empty request target");
	} else if (c->connect) {
		/* authority-form, and only here (RFC 9112 3.2.3) */
		if (!valid_host(target, target_len, true))
			fail(c, 400, true, "CONNECT without authority-form target");
	} else if (target[0] == '/') {
		/* origin-form */
	} else if (target_len == 1 && target[0] == '*') {
		if (!method || strcmp(method, "OPTIONS"))
			fail(c, 400, false, "asterisk-form outside OPTIONS");
	} else if ((target_len > 7 && !strncasecmp(target, "http://", 7)) ||
	           (target_len > 8 && !strncasecmp(target, "https://", 8))) {
		/* absolute-form */
	} else {
		fail(c, 400, false, "invalid request target");
	}
	for (size_t i = 0; target && i < target_len; i++) {
		unsigned char ch = (unsigned char)target[i];

		if (ch <= 0x20 || ch == 0x7f) {
			fail(c, 400, true, "control byte in request target");
			break;
		}
	}
}

void proto_reqcheck_field(struct proto_reqcheck *c, const char *name,
                          size_t namelen, const char *value, size_t valuelen)
{
	if (!namelen) {
		fail(c, 400, true, "empty field name");
		return;
	}
	for (size_t i = 0; i < namelen; i++)
		if (!tchar((unsigned char)name[i])) {
			fail(c, 400, true, "invalid field name");
			return;
		}
	for (size_t i = 0; i < valuelen; i++) {
		unsigned char ch = (unsigned char)value[i];

		if (ch == '\r' || ch == '\n') {
			fail(c, 400, true, "CR/LF in field value (obs-fold?)");
			return;
		}
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
			fail(c, 400, true, "control byte in field value");
			return;
		}
	}
	/* OWS around a value is not part of it (RFC 9112 5) */
	while (valuelen && (*value == ' ' || *value == '\t'))
		value++, valuelen--;
	while (valuelen && (value[valuelen - 1] == ' ' || value[valuelen - 1] == '\t'))
		valuelen--;
	if (is(name, namelen, "Host")) {
		if (++c->hosts > 1)
			fail(c, 400, false, "more than one Host");
		else if (!valid_host(value, valuelen, false))
			fail(c, 400, false, "invalid Host");
	} else if (is(name, namelen, "Content-Length")) {
		check_cl(c, value, valuelen);
		if (c->has_te)
			fail(c, 400, true, "Transfer-Encoding with Content-Length");
	} else if (is(name, namelen, "Transfer-Encoding")) {
		if (c->content_length >= 0)
			fail(c, 400, true, "Transfer-Encoding with Content-Length");
		check_te(c, value, valuelen);
	} else if (is(name, namelen, "Expect")) {
		if (!is(value, valuelen, "100-continue"))
			fail(c, 417, false, "unsupported Expect");
	}
}

struct proto_verdict proto_reqcheck_end(struct proto_reqcheck *c)
{
	bool body = c->has_te || c->content_length > 0;

	/* A body we do not read would be parsed as the next request,
	 * whatever the answer is. */
	c->v.close_connection |= body;
	if (c->has_te && (!c->te_chunked_last || c->te_chunked_twice))
		fail(c, 400, true, "chunked is not the final transfer coding");
	if (c->http11 && !c->hosts)
		fail(c, 400, false, "missing Host");
	/* The method before the body: a POST is refused for what it is,
	 * not for carrying content. */
	if (c->connect)
		fail(c, 501, true, "CONNECT (no tunnels)");
	else if (!c->served)
		fail(c, 405, body, "method not allowed");
	if (c->has_te)
		fail(c, 411, true, "request body without Content-Length");
	if (c->content_length > 0)
		fail(c, 413, true, "request body not accepted");
	return c->v;
}

struct proto_verdict proto_reqcheck(const char *method, const char *version,
                                    const char *target, size_t target_len,
                                    const struct proto_header *h, size_t n,
                                    size_t max_target)
{
	struct proto_reqcheck c;

	proto_reqcheck_begin(&c, method, version, target, target_len,
	                     max_target);
	for (size_t i = 0; i < n; i++)
		proto_reqcheck_field(&c, h[i].name, h[i].namelen, h[i].value,
		                     h[i].valuelen);
	return proto_reqcheck_end(&c);
}

int proto_reqcheck_start(const char *buf, size_t len)
{
	static const char version[] = "HTTP/";
	size_t i = 0, n;

	/* empty lines before the request-line are ignored (RFC 9112 2.2) */
	while (i < len && (buf[i] == '\r' || buf[i] == '\n')) {
		if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n')
			return 0;
		i++;
	}
	/* method = token */
	for (n = 0; i < len && buf[i] != ' '; i++, n++)
		if (!tchar((unsigned char)buf[i]))
			return 0;
	if (i == len)
		return 1;
	if (!n)
		return 0;
	while (i < len && buf[i] == ' ')
		i++;
	/* request-target: visible bytes (the full checks come later) */
	for (n = 0; i < len && buf[i] != ' '; i++, n++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch < 0x20 || ch == 0x7f)
			return 0;       /* no HTTP-version: HTTP/0.9 or not HTTP */
	}
	while (i < len && buf[i] == ' ')
		i++;
	if (i == len)
		return 1;
	/* HTTP-version = "HTTP/" DIGIT "." DIGIT; which one is answered
	 * later (505 for versions not served) */
	for (n = 0; i < len && n < sizeof version - 1; i++, n++)
		if (buf[i] != version[n])
			return 0;
	if (i < len && (buf[i] < '0' || buf[i] > '9'))
		return 0;
	if (++i < len && buf[i] != '.')
		return 0;
	if (++i < len && (buf[i] < '0' || buf[i] > '9'))
		return 0;
	return 1;
}
