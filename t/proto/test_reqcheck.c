#include "first.h"

#include "proto/reqcheck.h"

#include <string.h>

#include "t/tmain.h"

#define MAXT 4096

/* Checks a request given as "Name: value" lines ("\n"-separated; a
 * value may hold other bytes, given with explicit lengths below). */
static struct proto_verdict run(const char *method, const char *version,
                                const char *target, const char *fields)
{
	struct proto_header h[32];
	size_t n = 0;
	const char *p = fields;

	while (p && *p) {
		const char *nl = strchr(p, '\n'), *colon;
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		colon = memchr(p, ':', len);
		ck_assert_ptr_nonnull(colon);
		h[n].name = p;
		h[n].namelen = (size_t)(colon - p);
		h[n].value = colon + 1;
		while (h[n].value < p + len && *h[n].value == ' ')
			h[n].value++;
		h[n].valuelen = (size_t)(p + len - h[n].value);
		n++;
		p = nl ? nl + 1 : NULL;
	}
	return proto_reqcheck(method, version, target, strlen(target), h, n, MAXT);
}

static void expect(const char *what, struct proto_verdict v, unsigned status,
                   bool close)
{
	ck_assert_msg(v.status == status && v.close_connection == close,
	              "%s: got %u close=%d (%s), want %u close=%d", what,
	              v.status, v.close_connection, v.reason, status, close);
	ck_assert_ptr_nonnull(v.reason);
	ck_assert_msg(!!status == !!*v.reason, "%s: reason '%s'", what, v.reason);
}

#define GET(fields) run("GET", "HTTP/1.1", "/", fields)

START_TEST(good)
{
	expect("plain", GET("Host: example.com"), 0, false);
	expect("port", GET("Host: example.com:8080"), 0, false);
	expect("ipv4", GET("Host: 127.0.0.1:80"), 0, false);
	expect("ipv6", GET("Host: [::1]:8080"), 0, false);
	expect("ipv6 bare", GET("Host: [2001:db8::7]"), 0, false);
	expect("empty host", GET("Host: "), 0, false);
	expect("empty port", GET("Host: a:"), 0, false);
	expect("case", GET("hOsT: a"), 0, false);
	expect("1.0 no host", run("GET", "HTTP/1.0", "/", ""), 0, false);
	expect("CL 0", GET("Host: a\nContent-Length: 0"), 0, false);
	expect("CL 0, 0", GET("Host: a\nContent-Length: 0, 0"), 0, false);
	expect("CL twice same", GET("Host: a\nContent-Length: 0\nContent-Length: 0"), 0, false);
	expect("expect 100", GET("Host: a\nExpect: 100-Continue"), 0, false);
	expect("token chars", GET("Host: a\nX-a!#$%&'*+-.^_`|~9: v\tw"), 0, false);
	expect("obs-text", GET("Host: a\nX: caf\xc3\xa9 \x80\xff"), 0, false);
	expect("absolute", run("GET", "HTTP/1.1", "http://a/x", "Host: a"), 0, false);
	expect("options *", run("OPTIONS", "HTTP/1.1", "*", "Host: a"), 0, false);
}
END_TEST

START_TEST(host)
{
	expect("missing", GET("X: y"), 400, false);
	expect("duplicate", GET("Host: a\nHost: a"), 400, false);
	expect("duplicate differing", GET("Host: a\nHost: b"), 400, false);
	static const char *const badhosts[] = { "Host: a b", "Host: a/b",
		"Host: a@b", "Host: a\\b", "Host: a?b", "Host: a#b",
		"Host: a:80x", "Host: a:80:90", "Host: [::1", "Host: []",
		"Host: [::1]x", "Host: a%zz", "Host: \"a\"", "Host: <a>",
		"Host: a\xc3\xa9" };
	for (size_t i = 0; i < sizeof badhosts / sizeof *badhosts; i++)
		expect(badhosts[i], GET(badhosts[i]), 400, false);
}
END_TEST

START_TEST(fields)
{
	expect("space in name", GET("Host: a\nX Y: z"), 400, true);
	expect("space before colon", GET("Host: a\nX : z"), 400, true);
	expect("empty name", GET("Host: a\n: z"), 400, true);
	expect("bad char name", GET("Host: a\nX(y): z"), 400, true);
	expect("utf8 name", GET("Host: a\nX\xc3\xa9: z"), 400, true);
	/* values: control bytes (other than HTAB) */
	struct proto_header h[2] = { { "Host", 4, "a", 1 }, { "X", 1, NULL, 0 } };
	static const char *const vals[] = { "a\rb", "a\nb", "a\r\n b", "a\x01",
		"\x7f", "a\0b", "\x1b[31m" };
	static const size_t lens[] = { 3, 3, 5, 2, 1, 3, 5 };
	for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
		h[1].value = vals[i];
		h[1].valuelen = lens[i];
		expect("ctl value", proto_reqcheck("GET", "HTTP/1.1", "/", 1, h, 2, 0),
		       400, true);
	}
}
END_TEST

START_TEST(framing)
{
	/* a body without Content-Length on a method we serve: 411 */
	expect("TE chunked", GET("Host: a\nTransfer-Encoding: chunked"), 411, true);
	expect("TE gzip, chunked", GET("Host: a\nTransfer-Encoding: gzip, chunked"), 411, true);
	expect("TE two fields", GET("Host: a\nTransfer-Encoding: gzip\nTransfer-Encoding: chunked"), 411, true);
	expect("TE chunked, gzip", GET("Host: a\nTransfer-Encoding: chunked, gzip"), 400, true);
	expect("TE chunked twice", GET("Host: a\nTransfer-Encoding: chunked, chunked"), 400, true);
	expect("TE gzip only", GET("Host: a\nTransfer-Encoding: gzip"), 400, true);
	expect("TE chunked then gzip field", GET("Host: a\nTransfer-Encoding: chunked\nTransfer-Encoding: gzip"), 400, true);
	expect("TE unknown", GET("Host: a\nTransfer-Encoding: foo"), 501, true);
	expect("TE unknown in list", GET("Host: a\nTransfer-Encoding: chunked, foo"), 501, true);
	expect("TE empty", GET("Host: a\nTransfer-Encoding: "), 501, true);
	expect("TE 1.0", run("GET", "HTTP/1.0", "/", "Transfer-Encoding: chunked"), 400, true);
	expect("TE + CL", GET("Host: a\nContent-Length: 0\nTransfer-Encoding: chunked"), 400, true);
	expect("CL + TE", GET("Host: a\nTransfer-Encoding: chunked\nContent-Length: 0"), 400, true);
	expect("CL 5, 6", GET("Host: a\nContent-Length: 5, 6"), 400, true);
	expect("CL two fields", GET("Host: a\nContent-Length: 5\nContent-Length: 6"), 400, true);
	expect("CL abc", GET("Host: a\nContent-Length: abc"), 400, true);
	expect("CL -1", GET("Host: a\nContent-Length: -1"), 400, true);
	expect("CL +1", GET("Host: a\nContent-Length: +1"), 400, true);
	expect("CL empty", GET("Host: a\nContent-Length: "), 400, true);
	expect("CL 1 2", GET("Host: a\nContent-Length: 1 2"), 400, true);
	expect("CL 0,", GET("Host: a\nContent-Length: 0,"), 400, true);
	expect("CL 0x10", GET("Host: a\nContent-Length: 0x10"), 400, true);
	expect("CL overflow", GET("Host: a\nContent-Length: 99999999999999999999999"), 400, true);
	expect("CL body", GET("Host: a\nContent-Length: 5"), 413, true);
	expect("CL body 5, 5", GET("Host: a\nContent-Length: 5, 5"), 413, true);
	expect("HEAD body", run("HEAD", "HTTP/1.1", "/", "Host: a\nContent-Length: 1"), 413, true);
}
END_TEST

START_TEST(expect_and_target)
{
	expect("expect other", GET("Host: a\nExpect: 200-ok"), 417, false);
	expect("expect empty", GET("Host: a\nExpect: "), 417, false);
	char longt[MAXT + 2];
	memset(longt, 'a', sizeof longt);
	longt[0] = '/';
	longt[MAXT + 1] = 0;
	expect("414", run("GET", "HTTP/1.1", longt, "Host: a"), 414, false);
	longt[MAXT] = 0;
	expect("at the limit", run("GET", "HTTP/1.1", longt, "Host: a"), 0, false);
	expect("* not OPTIONS", run("GET", "HTTP/1.1", "*", "Host: a"), 400, false);
	expect("authority-form", run("GET", "HTTP/1.1", "a:80", "Host: a"), 400, false);
	expect("relative", run("GET", "HTTP/1.1", "a/b", "Host: a"), 400, false);
	expect("empty target", run("GET", "HTTP/1.1", "", "Host: a"), 400, false);
	expect("space in target", run("GET", "HTTP/1.1", "/a b", "Host: a"), 400, true);
}
END_TEST

START_TEST(first_problem_wins_close_accumulates)
{
	/* Expect (417, keep) then a bad CL (400, close): 417 with close */
	expect("order", GET("Host: a\nExpect: x\nContent-Length: x"), 417, true);
	/* incremental API gives the same answer */
	struct proto_reqcheck c;
	proto_reqcheck_begin(&c, "GET", "HTTP/1.1", "/", 1, 0);
	proto_reqcheck_field(&c, "Host", 4, "a", 1);
	proto_reqcheck_field(&c, "Host", 4, "b", 1);
	proto_reqcheck_field(&c, "Transfer-Encoding", 17, "chunked", 7);
	struct proto_verdict v = proto_reqcheck_end(&c);
	expect("incremental", v, 400, true);
	ck_assert_str_eq(v.reason, "more than one Host");
}
END_TEST

START_TEST(methods)
{
	expect("POST", run("POST", "HTTP/1.1", "/", "Host: a"), 405, false);
	expect("POST CL 0", run("POST", "HTTP/1.1", "/", "Host: a\nContent-Length: 0"), 405, false);
	/* the method first, and a body not read closes */
	expect("POST CL 5", run("POST", "HTTP/1.1", "/", "Host: a\nContent-Length: 5"), 405, true);
	expect("POST chunked", run("POST", "HTTP/1.1", "/", "Host: a\nTransfer-Encoding: chunked"), 405, true);
	expect("PUT", run("PUT", "HTTP/1.1", "/x", "Host: a\nContent-Length: 1"), 405, true);
	expect("BREW", run("BREW", "HTTP/1.1", "/", "Host: a"), 405, false);
	expect("lower-case get", run("get", "HTTP/1.1", "/", "Host: a"), 405, false);
	/* framing errors stay 400 whatever the method */
	expect("POST bad CL", run("POST", "HTTP/1.1", "/", "Host: a\nContent-Length: x"), 400, true);
	expect("POST TE+CL", run("POST", "HTTP/1.1", "/",
	                         "Host: a\nTransfer-Encoding: chunked\nContent-Length: 3"), 400, true);
	expect("POST unknown TE", run("POST", "HTTP/1.1", "/", "Host: a\nTransfer-Encoding: foo"), 501, true);
	expect("POST no Host", run("POST", "HTTP/1.1", "/", ""), 400, false);
	/* CONNECT: authority-form parsed, then not implemented */
	expect("CONNECT", run("CONNECT", "HTTP/1.1", "example.com:443", "Host: example.com:443"), 501, true);
	expect("CONNECT v6", run("CONNECT", "HTTP/1.1", "[::1]:8443", "Host: a"), 501, true);
	expect("CONNECT no port", run("CONNECT", "HTTP/1.1", "example.com", "Host: a"), 400, true);
	expect("CONNECT empty port", run("CONNECT", "HTTP/1.1", "example.com:", "Host: a"), 400, true);
	expect("CONNECT origin-form", run("CONNECT", "HTTP/1.1", "/", "Host: a"), 400, true);
	expect("CONNECT path", run("CONNECT", "HTTP/1.1", "a:1/x", "Host: a"), 400, true);
	expect("OWS around Host", GET("Host:  a \t"), 0, false);
}
END_TEST

static int start(const char *s)
{
	return proto_reqcheck_start(s, strlen(s));
}

START_TEST(first_bytes)
{
	static const char *const http[] = { "GET / HTTP/1.1\r\n", "G", "GET",
		"GET ", "GET /x", "GET /x ", "GET /x H", "GET /x HTTP/", "GET /x HTTP/1",
		"GET /x HTTP/1.", "GET /x HTTP/1.1", "GET /x HTTP/2.0\r\n",
		"\r\nGET / HTTP/1.1\r\n", "\r", "\n\r\nGET", "BREW /  HTTP/1.1",
		"GET  /x HTTP/1.0", "OPTIONS * HTTP/1.1\r\n", "GET /caf\xc3\xa9 HTTP/1.1",
		"CONNECT a:443 HTTP/1.1\r\n", "" };
	static const char *const not_http[] = { "GARBAGE\r\n\r\n", "\x16\x03\x01",
		"\xff\xfe", "GET\r\n", "GET /\r\n", "GET / HTTQ/1.1", "GET / http/1.1",
		"GET / HTTP/x.1", "GET / HTTP/1-1", "GET / HTTP/1.x", " GET / HTTP/1.1",
		"\rGET", "G(T / HTTP/1.1", "GET /\x01 HTTP/1.1", "SSH-2.0-OpenSSH_9.2\r\n" };

	for (size_t i = 0; i < sizeof http / sizeof *http; i++)
		ck_assert_msg(start(http[i]) == 1, "'%s' should pass", http[i]);
	for (size_t i = 0; i < sizeof not_http / sizeof *not_http; i++)
		ck_assert_msg(start(not_http[i]) == 0, "'%s' is not HTTP", not_http[i]);
	ck_assert_int_eq(proto_reqcheck_start("\0\x01\x02\r\n", 5), 0);
}
END_TEST

TMAIN_TESTS("reqcheck", good, host, fields, framing, expect_and_target,
            first_problem_wins_close_accumulates, methods, first_bytes);
