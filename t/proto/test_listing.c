#include "first.h"

#include "proto/listing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "t/tmain.h"

/* ---- a small strict JSON parser: validates and collects strings ---- */

struct jctx {
	const char *p, *end;
	int depth;
	/* decoded values of "name", "name_pct" and "next" keys, in order */
	char names[64][256];
	size_t namelens[64];
	int nnames;
	char pcts[64][800];
	int npcts;
	char next[256];
	size_t nextlen;
	bool next_null;
	int nobjects;           /* objects at depth 3 (entries) */
};

static bool jvalue(struct jctx *c, char *out, size_t *outlen);

static void ws(struct jctx *c)
{
	while (c->p < c->end && strchr(" \t\r\n", *c->p) && *c->p)
		c->p++;
}

static size_t put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) { o[0] = (char)cp; return 1; }
	if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
	if (cp < 0x10000) { o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 63)); o[2] = (char)(0x80 | (cp & 63)); return 3; }
	o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 63));
	o[2] = (char)(0x80 | (cp >> 6 & 63)); o[3] = (char)(0x80 | (cp & 63));
	return 4;
}

static bool hex4(struct jctx *c, unsigned long *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char ch = c->p < c->end ? *c->p++ : 0;
		int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
		        ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
		if (d < 0)
			return false;
		*v = *v * 16 + (unsigned long)d;
	}
	return true;
}

/* a string; decoded into out (up to 800 bytes) */
static bool jstring(struct jctx *c, char *out, size_t *outlen)
{
	size_t o = 0;

	if (c->p >= c->end || *c->p != '"')
		return false;
	c->p++;
	while (c->p < c->end && *c->p != '"') {
		unsigned char ch = (unsigned char)*c->p;

		if (o > 790)
			return false;
		if (ch < 0x20)
			return false;
		if (ch == '\\') {
			unsigned long cp;

			c->p++;
			if (c->p >= c->end)
				return false;
			switch (*c->p++) {
			case '"': out[o++] = '"'; break;
			case '\\': out[o++] = '\\'; break;
			case '/': out[o++] = '/'; break;
			case 'b': out[o++] = '\b'; break;
			case 'f': out[o++] = '\f'; break;
			case 'n': out[o++] = '\n'; break;
			case 'r': out[o++] = '\r'; break;
			case 't': out[o++] = '\t'; break;
			case 'u':
				if (!hex4(c, &cp))
					return false;
				if (cp >= 0xD800 && cp <= 0xDBFF) {
					unsigned long lo;

					if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u')
						return false;
					c->p += 2;
					if (!hex4(c, &lo) || lo < 0xDC00 || lo > 0xDFFF)
						return false;
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
					return false;
				}
				o += put_utf8(out + o, cp);
				break;
			default:
				return false;
			}
			continue;
		}
		/* raw bytes must be valid UTF-8: check via a re-encode */
		if (ch >= 0x80) {
			int n = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC2 ? 2 : 0;
			unsigned long cp = ch & (0x3F >> (n - 1 > 0 ? n - 1 : 0));

			if (!n || c->end - c->p < n)
				return false;
			for (int i = 1; i < n; i++) {
				if (((unsigned char)c->p[i] & 0xC0) != 0x80)
					return false;
				cp = cp << 6 | ((unsigned char)c->p[i] & 0x3F);
			}
			if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
			    (cp >= 0xD800 && cp <= 0xDFFF))
				return false;
			memcpy(out + o, c->p, (size_t)n);
			o += (size_t)n;
			c->p += n;
			continue;
		}
		out[o++] = (char)ch;
		c->p++;
	}
	if (c->p >= c->end)
		return false;
	c->p++;
	out[o] = 0;
	*outlen = o;
	return true;
}

static bool jvalue(struct jctx *c, char *out, size_t *outlen)
{
	char key[800], val[800];
	size_t kl, vl;

	ws(c);
	if (c->p >= c->end)
		return false;
	if (*c->p == '"')
		return jstring(c, out, outlen);
	if (*c->p == '{') {
		c->p++;
		c->depth++;
		if (c->depth == 3)
			c->nobjects++;
		ws(c);
		if (c->p < c->end && *c->p == '}') {
			c->p++;
			c->depth--;
			return true;
		}
		for (;;) {
			ws(c);
			if (!jstring(c, key, &kl))
				return false;
			ws(c);
			if (c->p >= c->end || *c->p++ != ':')
				return false;
			vl = (size_t)-1;
			if (!jvalue(c, val, &vl))
				return false;
			if (c->depth == 3 && !strcmp(key, "name") && vl != (size_t)-1 && c->nnames < 64) {
				memcpy(c->names[c->nnames], val, vl + 1);
				c->namelens[c->nnames++] = vl;
			}
			if (c->depth == 3 && !strcmp(key, "name_pct") && c->npcts < 64)
				memcpy(c->pcts[c->npcts++], val, vl + 1);
			if (c->depth == 1 && !strcmp(key, "next")) {
				c->next_null = vl == (size_t)-1;
				if (!c->next_null) {
					memcpy(c->next, val, vl + 1);
					c->nextlen = vl;
				}
			}
			ws(c);
			if (c->p < c->end && *c->p == ',') {
				c->p++;
				continue;
			}
			if (c->p < c->end && *c->p == '}') {
				c->p++;
				c->depth--;
				return true;
			}
			return false;
		}
	}
	if (*c->p == '[') {
		c->p++;
		c->depth++;
		ws(c);
		if (c->p < c->end && *c->p == ']') {
			c->p++;
			c->depth--;
			return true;
		}
		for (;;) {
			if (!jvalue(c, val, &vl))
				return false;
			ws(c);
			if (c->p < c->end && *c->p == ',') {
				c->p++;
				continue;
			}
			if (c->p < c->end && *c->p == ']') {
				c->p++;
				c->depth--;
				return true;
			}
			return false;
		}
	}
	if (c->end - c->p >= 4 && !memcmp(c->p, "null", 4)) {
		c->p += 4;
		return true;
	}
	if (c->end - c->p >= 4 && !memcmp(c->p, "true", 4)) {
		c->p += 4;
		return true;
	}
	if (c->end - c->p >= 5 && !memcmp(c->p, "false", 5)) {
		c->p += 5;
		return true;
	}
	/* number: -?int frac? exp? */
	const char *s = c->p;
	if (*c->p == '-')
		c->p++;
	if (c->p < c->end && *c->p == '0')
		c->p++;
	else if (c->p < c->end && *c->p >= '1' && *c->p <= '9')
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
			c->p++;
	else
		return false;
	(void)s;
	return true;
}

static bool jdoc(struct jctx *c, const char *s, size_t len)
{
	char v[800];
	size_t vl;

	memset(c, 0, sizeof *c);
	c->p = s;
	c->end = s + len;
	if (!jvalue(c, v, &vl))
		return false;
	ws(c);
	return c->p == c->end;
}

static size_t pct_decode(const char *s, char *out)
{
	size_t o = 0;

	for (; *s; s++) {
		if (*s == '%') {
			unsigned v;
			sscanf(s + 1, "%2x", &v);
			out[o++] = (char)v;
			s += 2;
		} else {
			out[o++] = *s;
		}
	}
	return o;
}

/* ---- fixtures ---- */

static const char *const hostile[] = {
	"plain", "with space", "quo\"te", "apos'trophe", "back\\slash",
	"<script>alert(1)</script>", "a&b&amp;", "100%", "50%25", "new\nline",
	"cr\rret", "tab\there", "\x01\x02\x1f", "del\x7f", "caf\xc3\xa9",
	"emoji \xf0\x9f\x98\x80", "?q=1#frag", "a:b", "+plus+", "\xe2\x80\xa8",
	/* invalid UTF-8 */
	"\xff\xfe", "bad\x80", "over\xc0\xaf", "sur\xed\xa0\x80", "big\xf4\x90\x80\x80",
	"trunc\xe2\x82",
};
#define NH (sizeof hostile / sizeof *hostile)

static bool valid_utf8_ctl_free(const char *s)
{
	struct jctx c;
	char tmp[1024], out[800];
	size_t ol;

	/* reuse the JSON string checker on a quoted copy */
	snprintf(tmp, sizeof tmp, "\"%s\"", s);
	for (char *p = tmp + 1; p[1]; p++)
		if ((unsigned char)*p < 0x20 || *p == '"' || *p == '\\')
			*p = 'x';
	c.p = tmp;
	c.end = tmp + strlen(tmp);
	return jstring(&c, out, &ol);
}

static struct proto_entry E(const char *name, enum proto_ftype t)
{
	return (struct proto_entry){ .name = name, .namelen = strlen(name),
		.type = t, .size = 827, .mtime_sec = 1700000000,
		.mtime_nsec = 5, .mode = 0100644 };
}

START_TEST(json_string_exact)
{
	struct proto_buf b = { 0 };
	bool inv;

	ck_assert_int_eq(proto_json_string(&b, "a\"\\\n\x01\xff/\x7f\xc3\xa9", 10, &inv), 0);
	ck_assert_int_eq(b.len, strlen("\"a\\\"\\\\\\n\\u0001\\ufffd/\x7f\xc3\xa9\""));
	ck_assert_int_eq(memcmp(b.data, "\"a\\\"\\\\\\n\\u0001\\ufffd/\x7f\xc3\xa9\"", b.len), 0);
	ck_assert(inv);
	b.len = 0;
	ck_assert_int_eq(proto_json_string(&b, "ok", 2, &inv), 0);
	ck_assert(!inv);
	ck_assert_int_eq(memcmp(b.data, "\"ok\"", 4), 0);
	b.len = 0;
	ck_assert_int_eq(proto_html_escape(&b, "<a href='x'>&\"\n\xff\xc3\xa9", 18), 0);
	ck_assert_int_eq(b.len, strlen("&lt;a href=&#39;x&#39;&gt;&amp;&quot;\xEF\xBF\xBD\xEF\xBF\xBD\xc3\xa9"));
	ck_assert_int_eq(memcmp(b.data, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;\xEF\xBF\xBD\xEF\xBF\xBD\xc3\xa9", b.len), 0);
	proto_buf_free(&b);
}
END_TEST

START_TEST(json_exact_document)
{
	struct proto_buf b = { 0 };
	struct proto_listing l = { .format = PROTO_FMT_JSON, .path = "/d/", .pathlen = 3 };
	struct proto_entry e1 = E("a", PROTO_FT_REG), e2 = E("l", PROTO_FT_LNK);
	static const char want[] =
		"{\"path\":\"/d/\",\"entries\":[\n"
		"{\"name\":\"a\",\"type\":\"file\",\"size\":827,\"mtime\":1700000000,\"mtime_ns\":5,\"mode\":33188},\n"
		"{\"name\":\"l\",\"type\":\"symlink\",\"size\":827,\"mtime\":1700000000,\"mtime_ns\":5,\"mode\":33188,\"target\":\"../a\"}\n"
		"],\"next\":\"l\"}\n";

	e2.target = "../a";
	e2.targetlen = 4;
	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	ck_assert_int_eq(proto_listing_entry(&l, &b, &e1), 0);
	ck_assert_int_eq(proto_listing_entry(&l, &b, &e2), 0);
	ck_assert_int_eq(proto_listing_end(&l, &b, "l", 1), 0);
	ck_assert_uint_eq(b.len, sizeof want - 1);
	ck_assert_int_eq(memcmp(b.data, want, b.len), 0);

	/* empty listing */
	b.len = 0;
	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	ck_assert_int_eq(proto_listing_end(&l, &b, NULL, 0), 0);
	static const char empty[] = "{\"path\":\"/d/\",\"entries\":[\n],\"next\":null}\n";
	ck_assert_uint_eq(b.len, sizeof empty - 1);
	ck_assert_int_eq(memcmp(b.data, empty, b.len), 0);
	struct jctx c;
	ck_assert(jdoc(&c, b.data, b.len));
	ck_assert(c.next_null);

	/* a path that is not UTF-8: lossy "path", exact "path_pct" */
	b.len = 0;
	l.path = "/\xff d/";
	l.pathlen = 5;
	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	ck_assert_int_eq(proto_listing_end(&l, &b, NULL, 0), 0);
	static const char lossy[] = "{\"path\":\"/\\ufffd d/\",\"path_pct\":\"/%FF%20d/\","
		"\"entries\":[\n],\"next\":null}\n";
	ck_assert_uint_eq(b.len, sizeof lossy - 1);
	ck_assert_int_eq(memcmp(b.data, lossy, b.len), 0);
	ck_assert(jdoc(&c, b.data, b.len));
	proto_buf_free(&b);
}
END_TEST

START_TEST(json_hostile_roundtrip)
{
	struct proto_buf b = { 0 };
	struct proto_listing l = { .format = PROTO_FMT_JSON, .path = "/x\"</", .pathlen = 5 };
	static struct jctx c;
	int pct = 0;

	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	for (size_t i = 0; i < NH; i++) {
		struct proto_entry e = E(hostile[i], i % 2 ? PROTO_FT_DIR : PROTO_FT_REG);
		ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
	}
	ck_assert_int_eq(proto_listing_end(&l, &b, "\xff", 1), 0);
	ck_assert_msg(jdoc(&c, b.data, b.len), "invalid JSON near offset %zu: %.40s",
	              (size_t)(c.p - b.data), c.p);
	ck_assert_int_eq(c.nobjects, (int)NH);
	ck_assert_int_eq(c.nnames, (int)NH);
	for (size_t i = 0; i < NH; i++) {
		bool valid = valid_utf8_ctl_free(hostile[i]);

		if (valid) {
			/* valid UTF-8 comes back byte-exact */
			ck_assert_uint_eq(c.namelens[i], strlen(hostile[i]));
			ck_assert_int_eq(memcmp(c.names[i], hostile[i], c.namelens[i]), 0);
		} else {
			/* lossy name, exact bytes in name_pct */
			char raw[300];
			size_t n;

			ck_assert_msg(strstr(c.names[i], "\xEF\xBF\xBD"), "%zu", i);
			ck_assert_int_lt(pct, c.npcts);
			n = pct_decode(c.pcts[pct++], raw);
			ck_assert_uint_eq(n, strlen(hostile[i]));
			ck_assert_int_eq(memcmp(raw, hostile[i], n), 0);
		}
	}
	ck_assert_int_eq(pct, c.npcts);
	ck_assert_int_eq(c.npcts, 6);
	ck_assert_str_eq(c.next, "\xEF\xBF\xBD");
	ck_assert_ptr_nonnull(strstr(b.data, "\"next_pct\":\"%FF\""));
	proto_buf_free(&b);
}
END_TEST

START_TEST(ndjson_lines)
{
	struct proto_buf b = { 0 };
	struct proto_listing l = { .format = PROTO_FMT_NDJSON, .path = "/", .pathlen = 1 };
	const char *p;
	size_t lines = 0;

	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	ck_assert_uint_eq(b.len, 0);
	for (size_t i = 0; i < NH; i++) {
		struct proto_entry e = E(hostile[i], PROTO_FT_REG);
		ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
	}
	ck_assert_int_eq(proto_listing_end(&l, &b, "x", 1), 0);
	p = b.data;
	while (p < b.data + b.len) {
		const char *nl = memchr(p, '\n', (size_t)(b.data + b.len - p));
		static struct jctx c;

		ck_assert_ptr_nonnull(nl);
		ck_assert_msg(jdoc(&c, p, (size_t)(nl - p)), "line %zu", lines);
		ck_assert_int_eq(c.nobjects, 0);   /* depth 1 here */
		lines++;
		p = nl + 1;
	}
	ck_assert_uint_eq(lines, NH);
	proto_buf_free(&b);
}
END_TEST

static bool has(const struct proto_buf *b, const char *s)
{
	return memmem(b->data, b->len, s, strlen(s)) != NULL;
}

START_TEST(html_escaping)
{
	struct proto_buf b = { 0 };
	struct proto_listing l = { .format = PROTO_FMT_HTML, .path = "/a <b>&/",
		.pathlen = 8 };

	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	for (size_t i = 0; i < NH; i++) {
		struct proto_entry e = E(hostile[i], PROTO_FT_REG);
		ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
	}
	struct proto_entry d = E("sub dir", PROTO_FT_DIR);
	ck_assert_int_eq(proto_listing_entry(&l, &b, &d), 0);
	struct proto_entry s = E("ln", PROTO_FT_LNK);
	s.target = "<t>";
	s.targetlen = 3;
	ck_assert_int_eq(proto_listing_entry(&l, &b, &s), 0);
	ck_assert_int_eq(proto_listing_end(&l, &b, NULL, 0), 0);

	ck_assert(has(&b, "<title>Index of /a &lt;b&gt;&amp;/</title>"));
	ck_assert(has(&b, "<a href=\"/a%20%3Cb%3E%26/\">a &lt;b&gt;&amp;/</a>"));
	ck_assert(has(&b, "<a href=\"../\">../</a>"));
	ck_assert(has(&b, "<a href=\"%3Cscript%3Ealert(1)%3C%2Fscript%3E\">&lt;script&gt;alert(1)&lt;/script&gt;</a>"));
	ck_assert(!has(&b, "<script>"));
	ck_assert(has(&b, "<a href=\"quo%22te\">quo&quot;te</a>"));
	ck_assert(has(&b, "<a href=\"apos%27trophe\">apos&#39;trophe</a>"));
	ck_assert(has(&b, "<a href=\"a%26b%26amp;\">a&amp;b&amp;amp;</a>"));
	ck_assert(has(&b, "<a href=\"100%25\">100%</a>"));
	ck_assert(has(&b, "<a href=\"50%2525\">50%25</a>"));
	ck_assert(has(&b, "<a href=\"new%0Aline\">new\xEF\xBF\xBDline</a>"));
	ck_assert(has(&b, "<a href=\"%3Fq=1%23frag\">?q=1#frag</a>"));
	ck_assert(has(&b, "<a href=\"a%3Ab\">a:b</a>"));
	ck_assert(has(&b, "<a href=\"%2Bplus%2B\">+plus+</a>"));
	ck_assert(has(&b, "<a href=\"caf%C3%A9\">caf\xc3\xa9</a>"));
	ck_assert(has(&b, "<a href=\"%FF%FE\">\xEF\xBF\xBD\xEF\xBF\xBD</a>"));
	ck_assert(has(&b, "<a href=\"sub%20dir/\">sub dir/</a>"));
	ck_assert(has(&b, "<div class=r><span><a href=\"ln\">ln</a><span class=l> \xE2\x86\x92 &lt;t&gt;</span></span><span title="));
	ck_assert(has(&b, "<span title=\"827 bytes\">827</span>"));
	ck_assert(has(&b, "<span>2023-11-14 22:13:20</span>"));
	ck_assert(has(&b, "</span></div>\n</div>\n<p class=n>"));
	ck_assert(has(&b, "</html>\n"));
	/* the page's bytes are valid UTF-8 with no control bytes but \n */
	for (size_t i = 0; i < b.len; i++)
		ck_assert_msg((unsigned char)b.data[i] >= 0x20 || b.data[i] == '\n',
		              "control byte at %zu", i);
	ck_assert_ptr_null(memmem(b.data, b.len, "\xff", 1));
	proto_buf_free(&b);
}
END_TEST

START_TEST(html_sort_links)
{
	struct proto_buf b = { 0 };
	struct proto_listing l = { .format = PROTO_FMT_HTML, .path = "/", .pathlen = 1 };

	/* default (name asc): Name flips to desc, others start asc */
	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	ck_assert(has(&b, "class=s><a href=\"?sort=name&amp;order=desc\">Name</a>"));
	ck_assert(has(&b, "<span><a href=\"?sort=size&amp;order=asc\">Size</a></span>"));
	ck_assert(has(&b, "<span><a href=\"?sort=mtime&amp;order=asc\">Last modified</a></span>"));
	ck_assert(!has(&b, "href=\"../\""));       /* root: no parent */
	/* name desc with a limit: Name flips back to asc and keeps the
	 * limit; Size, which has no pages, drops it */
	b.len = 0;
	l.desc = true;
	l.limit = 50;
	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	ck_assert(has(&b, "class=d><a href=\"?sort=name&amp;order=asc&amp;limit=50\">Name</a>"));
	ck_assert(has(&b, "<span><a href=\"?sort=size&amp;order=asc\">Size</a></span>"));
	ck_assert_int_eq(proto_listing_end(&l, &b, "a b&c", 5), 0);
	ck_assert(has(&b, "<a rel=\"next\" href=\"?sort=name&amp;order=desc&amp;limit=50&amp;after=a%20b%26c\">"));
	ck_assert(has(&b, "<p class=n>0 entries</p>"));
	/* dirs first: kept in every column's link; no pages there */
	struct proto_buf d = { 0 };
	struct proto_listing ld = { .format = PROTO_FMT_HTML, .path = "/", .pathlen = 1,
	                            .dirs_first = true, .limit = 50 };
	ck_assert_int_eq(proto_listing_begin(&ld, &d), 0);
	ck_assert(has(&d, "<a href=\"?sort=size&amp;order=asc&amp;dirs=first\">Size</a>"));
	ck_assert(has(&d, "<a href=\"?sort=name&amp;order=desc&amp;dirs=first\">Name</a>"));
	proto_buf_free(&d);
	/* the Link header's URL */
	b.len = 0;
	l.path = "/a b/";
	l.pathlen = 5;
	ck_assert_int_eq(proto_listing_next_url(&l, &b, "x&y\xff", 4), 0);
	ck_assert_uint_eq(b.len, strlen("/a%20b/?sort=name&order=desc&limit=50&after=x%26y%FF"));
	ck_assert_int_eq(memcmp(b.data, "/a%20b/?sort=name&order=desc&limit=50&after=x%26y%FF", b.len), 0);
	b.len = 0;
	l.format = PROTO_FMT_JSON;
	l.sort = PROTO_SORT_DEFAULT;
	l.desc = false;
	l.limit = 0;
	ck_assert_int_eq(proto_listing_next_url(&l, &b, "n", 1), 0);
	ck_assert_uint_eq(b.len, strlen("/a%20b/?format=json&sort=name&order=asc&after=n"));
	ck_assert_int_eq(memcmp(b.data, "/a%20b/?format=json&sort=name&order=asc&after=n", b.len), 0);
	proto_buf_free(&b);
}
END_TEST

START_TEST(html_100k_rows)
{
	struct proto_buf b = { 0 };
	struct proto_listing l = { .format = PROTO_FMT_HTML, .path = "/big/", .pathlen = 5 };
	char name[32];
	size_t rows = 0;

	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	for (int i = 0; i < 100000; i++) {
		struct proto_entry e;

		snprintf(name, sizeof name, "file-%06d.txt", i);
		e = E(name, PROTO_FT_REG);
		e.size = (uint64_t)i * 1000;
		ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
	}
	ck_assert_int_eq(proto_listing_end(&l, &b, NULL, 0), 0);
	/* by hand: ASan's memmem checks the whole haystack on every call */
	for (size_t i = 0; i + 15 <= b.len; i++)
		if (b.data[i] == '<' && !memcmp(b.data + i, "<div class=r><a", 15))
			rows++;
	ck_assert_uint_eq(rows, 100001);          /* with the parent row */
	/* rows come in blocks of 256 (content-visibility) */
	ck_assert(has(&b, "</div><div class=c>\n"));
	/* compact enough to stream: < 160 bytes per row */
	ck_assert_uint_lt(b.len, 100000 * 160);
	ck_assert(has(&b, "<p class=n>100000 entries</p>"));
	ck_assert(has(&b, "<span title=\"99999000 bytes\">95M</span>"));
	ck_assert(has(&b, "<span title=\"1000 bytes\">1000</span>"));
	ck_assert(has(&b, "<span title=\"2000 bytes\">2.0K</span>"));
	proto_buf_free(&b);
}
END_TEST

/* Numbers and dates by hand, checked against printf and gmtime_r: digit
 * counts at every power of ten, times on either side of the epoch and
 * of a day's end, and a row's date kept from the row before only while
 * the day is the same. */
START_TEST(numbers_and_dates)
{
	static const uint64_t sizes[] = { 0, 1, 9, 10, 99, 100, 101, 999, 1000, 1023,
		1024, 9999999, 10000000, 123456789012ull, 999999999999999999ull,
		10000000000000000000ull, UINT64_MAX };
	static const int64_t times[] = { 0, 1, 86399, 86400, 86401, 1700000000,
		1700000001, 1700006399, 1700006400, 1700000000, -1, -86400, -86401,
		951782400, 951868799, 253402300799, 1700000000 };
	struct proto_buf b = { 0 }, j = { 0 };
	struct proto_listing l = { .format = PROTO_FMT_HTML, .path = "/", .pathlen = 1 };
	struct proto_listing lj = { .format = PROTO_FMT_NDJSON, .path = "/", .pathlen = 1 };
	char want[128], date[32];

	ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
	ck_assert_int_eq(proto_listing_begin(&lj, &j), 0);
	for (size_t i = 0; i < sizeof times / sizeof *times; i++) {
		struct proto_entry e = E("n", PROTO_FT_REG);
		struct tm tm;
		time_t t = (time_t)times[i];

		e.size = sizes[i % (sizeof sizes / sizeof *sizes)];
		e.mtime_sec = times[i];
		e.mtime_nsec = (uint32_t)(i * 111111111u % 1000000000u);
		ck_assert_ptr_nonnull(gmtime_r(&t, &tm));
		strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
		b.len = 0;
		ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
		snprintf(want, sizeof want, "<span title=\"%llu bytes\">",
		         (unsigned long long)e.size);
		ck_assert_msg(has(&b, want), "%s in %.*s", want, (int)b.len, b.data);
		snprintf(want, sizeof want, "</span><span>%s</span>", date);
		ck_assert_msg(has(&b, want), "%s in %.*s", want, (int)b.len, b.data);
		j.len = 0;
		ck_assert_int_eq(proto_listing_entry(&lj, &j, &e), 0);
		snprintf(want, sizeof want,
		         "{\"name\":\"n\",\"type\":\"file\",\"size\":%llu,\"mtime\":%lld,"
		         "\"mtime_ns\":%u,\"mode\":33188}\n", (unsigned long long)e.size,
		         (long long)e.mtime_sec, e.mtime_nsec);
		ck_assert_uint_eq(j.len, strlen(want));
		ck_assert_int_eq(memcmp(j.data, want, j.len), 0);
	}
	/* past year 9999, after a day that was kept */
	struct proto_entry e = E("n", PROTO_FT_REG);
	e.mtime_sec = 253402300800;
	b.len = 0;
	ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
	ck_assert(has(&b, "</span><span>?</span>"));
	e.mtime_sec = 253402300799;
	b.len = 0;
	ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
	ck_assert(has(&b, "</span><span>9999-12-31 23:59:59</span>"));
	/* a row of a listing zeroed and not begun is dated all the same */
	struct proto_listing z = { .format = PROTO_FMT_HTML };
	e.mtime_sec = 0;
	b.len = 0;
	ck_assert_int_eq(proto_listing_entry(&z, &b, &e), 0);
	ck_assert(has(&b, "</span><span>1970-01-01 00:00:00</span>"));
	proto_buf_free(&b);
	proto_buf_free(&j);
}
END_TEST

/* A page of plain names fits the size it hints, in either format. */
START_TEST(size_hint)
{
	static const enum proto_list_format fmts[] = { PROTO_FMT_HTML, PROTO_FMT_JSON,
		PROTO_FMT_NDJSON };

	for (size_t f = 0; f < 3; f++) {
		struct proto_buf b = { 0 };
		struct proto_listing l = { .format = fmts[f], .path = "/d/", .pathlen = 3 };
		size_t names = 0;
		char name[64];

		ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
		for (int i = 0; i < 5000; i++) {
			snprintf(name, sizeof name, "%.*s-%d.dat", i % 40,
			         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN", i);
			struct proto_entry e = E(name, i % 7 ? PROTO_FT_REG : PROTO_FT_DIR);
			e.size = 999999999u - (uint64_t)i;
			e.mtime_sec = 1700000000 + i * 7919;
			e.mtime_nsec = 999999999;
			names += e.namelen + 1;
			ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
		}
		ck_assert_int_eq(proto_listing_end(&l, &b, NULL, 0), 0);
		size_t hint = proto_listing_size_hint(&l, 5000, names);
		ck_assert_msg(hint >= b.len && hint < b.len + b.len / 4, "format %d: hint %zu for %zu",
		              (int)fmts[f], hint, b.len);
		proto_buf_free(&b);
	}
}
END_TEST

static size_t count(const struct proto_buf *b, const char *needle)
{
	size_t n = 0, k = strlen(needle);

	for (size_t i = 0; i + k <= b->len; i++)
		if (b->data[i] == needle[0] && !memcmp(b->data + i, needle, k))
			n++;
	return n;
}

START_TEST(html_divs_balance)
{
	static const int sizes[] = { 0, 1, 255, 256, 257, 512, 1000 };

	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		struct proto_buf b = { 0 };
		struct proto_listing l = { .format = PROTO_FMT_HTML, .path = "/d/", .pathlen = 3 };

		ck_assert_int_eq(proto_listing_begin(&l, &b), 0);
		for (int i = 0; i < sizes[k]; i++) {
			struct proto_entry e = E("x", PROTO_FT_REG);
			ck_assert_int_eq(proto_listing_entry(&l, &b, &e), 0);
		}
		ck_assert_int_eq(proto_listing_end(&l, &b, NULL, 0), 0);
		ck_assert_msg(count(&b, "<div") == count(&b, "</div>"), "%d rows: %zu <div, %zu </div>",
		              sizes[k], count(&b, "<div"), count(&b, "</div>"));
		ck_assert_uint_eq(count(&b, "<div class=c>"), (size_t)(sizes[k] + 255) / 256);
		ck_assert_uint_eq(count(&b, "<span"), count(&b, "</span>"));
		proto_buf_free(&b);
	}
}
END_TEST

START_TEST(negotiate)
{
	ck_assert_int_eq(proto_listing_negotiate(NULL, PROTO_FMT_DEFAULT), PROTO_FMT_HTML);
	ck_assert_int_eq(proto_listing_negotiate("", PROTO_FMT_DEFAULT), PROTO_FMT_HTML);
	ck_assert_int_eq(proto_listing_negotiate("*/*", PROTO_FMT_DEFAULT), PROTO_FMT_HTML);
	ck_assert_int_eq(proto_listing_negotiate(
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", PROTO_FMT_DEFAULT),
		PROTO_FMT_HTML);
	ck_assert_int_eq(proto_listing_negotiate("application/json", PROTO_FMT_DEFAULT), PROTO_FMT_JSON);
	ck_assert_int_eq(proto_listing_negotiate("Application/JSON;charset=utf-8", PROTO_FMT_DEFAULT), PROTO_FMT_JSON);
	ck_assert_int_eq(proto_listing_negotiate("application/x-ndjson", PROTO_FMT_DEFAULT), PROTO_FMT_NDJSON);
	ck_assert_int_eq(proto_listing_negotiate("text/html;q=0.5, application/json", PROTO_FMT_DEFAULT),
	                 PROTO_FMT_JSON);
	ck_assert_int_eq(proto_listing_negotiate("text/html, application/json;q=0.9", PROTO_FMT_DEFAULT),
	                 PROTO_FMT_HTML);
	ck_assert_int_eq(proto_listing_negotiate("application/*", PROTO_FMT_DEFAULT), PROTO_FMT_JSON);
	ck_assert_int_eq(proto_listing_negotiate("application/json;q=0, */*", PROTO_FMT_DEFAULT), PROTO_FMT_HTML);
	ck_assert_int_eq(proto_listing_negotiate("garbage", PROTO_FMT_DEFAULT), PROTO_FMT_HTML);
	ck_assert_int_eq(proto_listing_negotiate("application/ndjson", PROTO_FMT_HTML),
	                 PROTO_FMT_NDJSON);
	/* The configured default: without Accept, and on a tie. */
	ck_assert_int_eq(proto_listing_negotiate(NULL, PROTO_FMT_NDJSON), PROTO_FMT_NDJSON);
	ck_assert_int_eq(proto_listing_negotiate("*/*", PROTO_FMT_JSON), PROTO_FMT_JSON);
	ck_assert_int_eq(proto_listing_negotiate("text/html, application/json", PROTO_FMT_JSON),
	                 PROTO_FMT_JSON);
	ck_assert_int_eq(proto_listing_negotiate("text/html, application/json;q=0.9",
	                                         PROTO_FMT_JSON), PROTO_FMT_HTML);
	ck_assert_int_eq(proto_listing_negotiate("image/png", PROTO_FMT_NDJSON), PROTO_FMT_NDJSON);
	ck_assert_str_eq(proto_listing_content_type(PROTO_FMT_JSON), "application/json");
	ck_assert_str_eq(proto_listing_content_type(PROTO_FMT_NDJSON), "application/x-ndjson");
	ck_assert_str_eq(proto_listing_content_type(PROTO_FMT_DEFAULT), "text/html; charset=utf-8");
}
END_TEST

START_TEST(buf_ops)
{
	struct proto_buf b = { 0 };

	ck_assert_int_eq(proto_buf_printf(&b, "%s-%d", "abc", 42), 0);
	ck_assert_uint_eq(b.len, 6);
	ck_assert_int_eq(memcmp(b.data, "abc-42", 6), 0);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(proto_buf_printf(&b, "%04d", i), 0);
	ck_assert_uint_eq(b.len, 4006);
	ck_assert_int_eq(memcmp(b.data + 4002, "0999", 4), 0);
	ck_assert_int_eq(proto_buf_append(&b, "x", 1), 0);
	ck_assert_int_eq(proto_buf_reserve(&b, SIZE_MAX), -EOVERFLOW);
	ck_assert_uint_eq(b.len, 4007);
	proto_buf_free(&b);
	ck_assert_ptr_null(b.data);
}
END_TEST

START_TEST(path_hidden)
{
	static const struct { const char *p; bool hidden; } cases[] = {
		{ "", false }, { ".", false }, { "..", false }, { "../x", false },
		{ "a/./b", false }, { "a/../b", false }, { "/a/b.c/d.", false },
		{ ".env", true }, { "a/.git/config", true }, { "/.well-known/x", true },
		{ "a/..b", true }, { "a/...", true }, { "x/.", false }, { "a//.h", true },
		{ "a/b/.h", true }, { "a.b/c", false },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		ck_assert_msg(proto_path_hidden(cases[i].p, strlen(cases[i].p)) == cases[i].hidden,
		              "%s", cases[i].p);
	/* the length bounds the scan: ".env" cut before its dot is visible */
	ck_assert(!proto_path_hidden("a/.env", 2));
}
END_TEST

TMAIN_TESTS("listing", json_string_exact, json_exact_document, json_hostile_roundtrip,
            ndjson_lines, html_escaping, html_sort_links, html_100k_rows,
            html_divs_balance, numbers_and_dates, size_hint, negotiate,
            buf_ops, path_hidden);
