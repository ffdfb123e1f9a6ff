#include "first.h"

#include "proto/url.h"

#include <errno.h>
#include <string.h>

#include "t/tmain.h"

static char buf[256];
static struct proto_target t;

static int parse(const char *s)
{
	memset(&t, 0, sizeof t);
	return proto_url_parse(s, strlen(s), buf, sizeof buf, &t);
}

/* target -> normalised path and trailing-slash flag */
static void ok(const char *in, const char *path, bool slash)
{
	int r = parse(in);

	ck_assert_msg(r == 0, "%s: %d", in, r);
	ck_assert_str_eq(t.path, path);
	ck_assert_uint_eq(t.pathlen, strlen(path));
	ck_assert_msg(t.trailing_slash == slash, "%s: slash %d", in, t.trailing_slash);
}

static void bad(const char *in, int err)
{
	int r = parse(in);

	ck_assert_msg(r == err, "%s: got %d want %d", in, r, err);
}

START_TEST(normalise)
{
	ok("/", "/", true);
	ok("/a", "/a", false);
	ok("/a/", "/a/", true);
	ok("//a///b//", "/a/b/", true);
	ok("/a/./b", "/a/b", false);
	ok("/a/.", "/a/", true);
	ok("/a/b/..", "/a/", true);
	ok("/a/b/../c", "/a/c", false);
	ok("/a/b/../../c/", "/c/", true);
	ok("/a/..", "/", true);
	ok("/.", "/", true);
	ok("/./", "/", true);
	ok("/...", "/...", false);       /* just a name */
	ok("/..a/b..", "/..a/b..", false);
	ok("/a%20b", "/a b", false);
	ok("/%41%62%63", "/Abc", false);
}
END_TEST

START_TEST(dots_encoded)
{
	/* decoding first: %2e is '.', so these are dot segments */
	ok("/a/%2e%2e/b", "/b", false);
	ok("/a/%2E/b", "/a/b", false);
	ok("/a/.%2e", "/", true);
	bad("/%2e%2e/%2e%2e/etc/passwd", -EPERM);
	bad("/%2e%2e/", -EPERM);
	bad("/..", -EPERM);
	bad("/../", -EPERM);
	bad("/a/../../b", -EPERM);
	bad("/a/./../..", -EPERM);
	bad("/..%2f", -EINVAL);         /* encoded slash */
	bad("/..%2Fetc", -EINVAL);
	ok("/a/b/%2e%2e%2e", "/a/b/...", false);
}
END_TEST

START_TEST(hostile_bytes)
{
	bad("/a%00b", -EINVAL);
	bad("/a%2fb", -EINVAL);
	bad("/a%2Fb", -EINVAL);
	bad("/a%", -EINVAL);
	bad("/a%4", -EINVAL);
	bad("/a%4g", -EINVAL);
	bad("/a%g4", -EINVAL);
	bad("/%%41", -EINVAL);
	bad("/a b", -EINVAL);
	bad("/a\tb", -EINVAL);
	bad("/a\x7f", -EINVAL);
	bad("/a\x01", -EINVAL);
	bad("", -EINVAL);
	bad("a/b", -EINVAL);
	bad("*", -EINVAL);
	bad("?a", -EINVAL);
	/* the query and fragment too */
	bad("/a?b c", -EINVAL);
	bad("/a?b\x01", -EINVAL);
	bad("/a#b\x7f", -EINVAL);
	ck_assert_int_eq(proto_url_parse("/9?\0x", 5, buf, sizeof buf, &t), -EINVAL);
	/* a ?-terminated path ends before the escape */
	ok("/a?%zz", "/a", false);
	ck_assert_str_eq(t.query, "%zz");
}
END_TEST

START_TEST(overlong_is_bytes)
{
	/* %C0%AF is an overlong '/', but we decode bytes, not characters:
	 * it stays two bytes inside one segment and cannot split it. */
	ck_assert_int_eq(parse("/a%C0%AFb"), 0);
	ck_assert_uint_eq(t.pathlen, 5);
	ck_assert_int_eq(memcmp(t.path, "/a\xC0\xAF" "b", 5), 0);
	ck_assert_ptr_null(strchr(t.path + 1, '/'));
}
END_TEST

START_TEST(query_and_fragment)
{
	ok("/a/b?x=1&y=2", "/a/b", false);
	ck_assert_str_eq(t.query, "x=1&y=2");
	ck_assert_uint_eq(t.querylen, 7);
	ok("/a#frag", "/a", false);
	ck_assert_ptr_null(t.query);
	ok("/a?q#frag", "/a", false);
	ck_assert_str_eq(t.query, "q");
	ok("/?", "/", true);
	ck_assert_str_eq(t.query, "");
	ok("/d/?format=json", "/d/", true);
	ck_assert_str_eq(t.query, "format=json");
}
END_TEST

START_TEST(absolute_form)
{
	ok("http://example.com/a/../b", "/b", false);
	ok("HTTPS://example.com", "/", true);
	ok("http://h:80?x", "/", true);
	ck_assert_str_eq(t.query, "x");
	bad("ftp://h/x", -EINVAL);
}
END_TEST

START_TEST(buffer_limits)
{
	const char *s = "/abc?de";
	char small[16];
	struct proto_target tt;

	/* needs len + 2 at most */
	ck_assert_int_eq(proto_url_parse(s, strlen(s), small, strlen(s) + 2, &tt), 0);
	ck_assert_str_eq(tt.path, "/abc");
	ck_assert_str_eq(tt.query, "de");
	ck_assert_int_eq(proto_url_parse(s, strlen(s), small, 3, &tt), -ENAMETOOLONG);
	/* not NUL-terminated input: only len bytes are read */
	ck_assert_int_eq(proto_url_parse("/abc/def", 4, small, sizeof small, &tt), 0);
	ck_assert_str_eq(tt.path, "/abc");
}
END_TEST

START_TEST(relpath)
{
	ck_assert_str_eq(proto_url_relpath("/"), ".");
	ck_assert_str_eq(proto_url_relpath("/a/b/"), "a/b/");
	ck_assert_str_eq(proto_url_relpath("/a"), "a");
}
END_TEST

START_TEST(query_get)
{
	const char *q = "a=1&b=x%20y+z&c&d=&e=%00&f=%zz&a=2&g=%2F%26";
	char v[32];

	ck_assert_int_eq(proto_query_get(q, strlen(q), "a", v, sizeof v), 1);
	ck_assert_str_eq(v, "1");
	ck_assert_int_eq(proto_query_get(q, strlen(q), "b", v, sizeof v), 5);
	ck_assert_str_eq(v, "x y z");
	ck_assert_int_eq(proto_query_get(q, strlen(q), "c", v, sizeof v), 0);
	ck_assert_str_eq(v, "");
	ck_assert_int_eq(proto_query_get(q, strlen(q), "d", v, sizeof v), 0);
	ck_assert_int_eq(proto_query_get(q, strlen(q), "e", v, sizeof v), -EINVAL);
	ck_assert_int_eq(proto_query_get(q, strlen(q), "f", v, sizeof v), -EINVAL);
	ck_assert_int_eq(proto_query_get(q, strlen(q), "g", v, sizeof v), 2);
	ck_assert_str_eq(v, "/&");
	ck_assert_int_eq(proto_query_get(q, strlen(q), "zz", v, sizeof v), -ENOENT);
	ck_assert_int_eq(proto_query_get(q, strlen(q), "", v, sizeof v), -ENOENT);
	ck_assert_int_eq(proto_query_get(q, strlen(q), "b", v, 5), -ENAMETOOLONG);
	ck_assert_int_eq(proto_query_get(NULL, 0, "a", v, sizeof v), -ENOENT);
	/* only qlen bytes count */
	ck_assert_int_eq(proto_query_get("a=12345", 4, "a", v, sizeof v), 2);
	ck_assert_str_eq(v, "12");
}
END_TEST

START_TEST(listq)
{
	char b[64];
	struct proto_listq q;
	const char *s;

	ck_assert_int_eq(proto_listq_parse(NULL, 0, b, sizeof b, &q), 0);
	ck_assert_int_eq(q.format, PROTO_FMT_DEFAULT);
	ck_assert_int_eq(q.sort, PROTO_SORT_DEFAULT);
	ck_assert_ptr_null(q.after);

	s = "format=ndjson&sort=size&order=desc&limit=100&after=a%2Bb+c&dirsfirst=1&x=y";
	ck_assert_int_eq(proto_listq_parse(s, strlen(s), b, sizeof b, &q), 0);
	ck_assert_int_eq(q.format, PROTO_FMT_NDJSON);
	ck_assert_int_eq(q.sort, PROTO_SORT_SIZE);
	ck_assert(q.desc);
	ck_assert(q.dirs_first);
	ck_assert_uint_eq(q.limit, 100);
	ck_assert_str_eq(q.after, "a+b c");
	ck_assert_uint_eq(q.afterlen, 5);

	s = "format=html&sort=none&order=asc";
	ck_assert_int_eq(proto_listq_parse(s, strlen(s), b, sizeof b, &q), 0);
	ck_assert_int_eq(q.format, PROTO_FMT_HTML);
	ck_assert_int_eq(q.sort, PROTO_SORT_NONE);
	ck_assert(!q.desc);

	static const char *const bad_q[] = { "format=xml", "sort=inode",
		"order=up", "limit=0", "limit=-1", "limit=abc", "limit=",
		"limit=99999999999999999999", "limit=1000000001", "after=%00",
		"after=%", "dirsfirst=maybe", "format=json%00" };
	for (size_t i = 0; i < sizeof bad_q / sizeof *bad_q; i++)
		ck_assert_msg(proto_listq_parse(bad_q[i], strlen(bad_q[i]), b,
		                                sizeof b, &q) == -EINVAL,
		              "%s accepted", bad_q[i]);
	s = "after=0123456789";
	ck_assert_int_eq(proto_listq_parse(s, strlen(s), b, 5, &q), -ENAMETOOLONG);
}
END_TEST

START_TEST(encode)
{
	char out[128];
	const char *in = "a b?#%&+:\"'<>\\\x01\x7f\xc3\xa9/~-._!$()*,;=@";
	size_t n = proto_url_encode(in, strlen(in), out, sizeof out, 0);

	ck_assert_str_eq(out, "a%20b%3F%23%25%26%2B%3A%22%27%3C%3E%5C%01%7F%C3%A9%2F~-._!$()*,;=@");
	ck_assert_uint_eq(n, strlen(out));
	n = proto_url_encode("a/b c", 5, out, sizeof out, PROTO_ENC_KEEP_SLASH);
	ck_assert_str_eq(out, "a/b%20c");
	/* truncation: snprintf-like length, output a prefix of whole escapes */
	n = proto_url_encode("ab cd", 5, out, 5, 0);
	ck_assert_uint_eq(n, 7);
	ck_assert_str_eq(out, "ab");
	n = proto_url_encode("ab cd", 5, out, 6, 0);
	ck_assert_str_eq(out, "ab%20");
	n = proto_url_encode("abc", 3, NULL, 0, 0);
	ck_assert_uint_eq(n, 3);
	/* round trip through the decoder for every byte but NUL and '/' */
	char raw[256], enc[800], tgt[802], dec[900];
	size_t k = 0;
	struct proto_target tt;
	for (int c = 1; c < 256; c++)
		if (c != '/')
			raw[k++] = (char)c;
	tgt[0] = '/';
	n = proto_url_encode(raw, k, enc, sizeof enc, 0);
	ck_assert_uint_lt(n, sizeof enc);
	memcpy(tgt + 1, enc, n + 1);
	ck_assert_int_eq(proto_url_parse(tgt, n + 1, dec, sizeof dec, &tt), 0);
	ck_assert_uint_eq(tt.pathlen, k + 1);
	ck_assert_int_eq(memcmp(tt.path + 1, raw, k), 0);
	ck_assert_ptr_null(tt.query);
}
END_TEST

TMAIN_TESTS("url", normalise, dots_encoded, hostile_bytes, overlong_is_bytes,
            query_and_fragment, absolute_form, buffer_limits, relpath, query_get,
            listq, encode);
