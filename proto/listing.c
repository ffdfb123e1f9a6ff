#include "first.h"

#include "proto/listing.h"

#include "proto/accept.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define TRY(x) do { int r__ = (x); if (r__ < 0) return r__; } while (0)
/* Copies the string literal @lit to @p and moves @p past it. */
#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) += sizeof(lit) - 1)

static const char repl[] = "\xEF\xBF\xBD";      /* U+FFFD */

/* Length of the valid UTF-8 sequence at s[0..n) (RFC 3629: no
 * overlongs, no surrogates, nothing above U+10FFFF), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4;
	else
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

/* Writes the JSON string of s[0..len) at @p, which has room for
 * JSON_STR_MAX(len) bytes; returns the end. Bytes that are not UTF-8
 * become U+FFFD and set *invalid. */
#define JSON_STR_MAX(len) (6 * (len) + 2)   /* "\u00XX" per byte at worst */
static char *raw_json_string(char *p, const char *s, size_t len, bool *invalid)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;

	*invalid = false;
	*p++ = '"';
	while (i < len) {
		unsigned char c = u[i];
		const char *e;
		size_t k;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0x80 && (k = utf8_seq(u + i, len - i))) {
			i += k;
			continue;
		}
		memcpy(p, s + run, i - run);    /* the plain run s[run..i) */
		p += i - run;
		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		default: e = NULL;
		}
		if (e) {
			memcpy(p, e, 2);
			p += 2;
		} else if (c < 0x20) {
			memcpy(p, "\\u00", 4);
			p[4] = hex[c >> 4];
			p[5] = hex[c & 15];
			p += 6;
		} else {
			memcpy(p, "\\ufffd", 6);
			p += 6;
			*invalid = true;
		}
		run = ++i;
	}
	memcpy(p, s + run, i - run);
	p += i - run;
	*p++ = '"';
	return p;
}

int proto_json_string(struct proto_buf *b, const char *s, size_t len,
                      bool *invalid)
{
	bool bad;

	if (len > SIZE_MAX / 8)
		return -EOVERFLOW;
	TRY(proto_buf_reserve(b, JSON_STR_MAX(len)));
	b->len = (size_t)(raw_json_string(b->data + b->len, s, len, &bad) - b->data);
	if (invalid)
		*invalid = bad;
	return 0;
}

/* Writes the escape of s[0..len) at @p, which has room for
 * HTML_ESC_MAX(len) bytes; returns the end. Runs that need no escape
 * (most names) go in one copy. */
#define HTML_ESC_MAX(len) (6 * (len))   /* "&quot;" per byte at worst */
static char *raw_html_escape(char *p, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;

	while (i < len) {
		unsigned char c = u[i];
		const char *e;
		size_t k, el;

		if (c >= 0x80 && (k = utf8_seq(u + i, len - i))) {
			i += k;
			continue;
		}
		if (c >= 0x20 && c < 0x7f && c != '&' && c != '<' && c != '>' &&
		    c != '"' && c != '\'') {
			i++;
			continue;
		}
		memcpy(p, s + run, i - run);
		p += i - run;
		switch (c) {
		case '&': e = "&amp;"; el = 5; break;
		case '<': e = "&lt;"; el = 4; break;
		case '>': e = "&gt;"; el = 4; break;
		case '"': e = "&quot;"; el = 6; break;
		case '\'': e = "&#39;"; el = 5; break;
		default: e = repl; el = 3;      /* control, DEL, invalid UTF-8 */
		}
		memcpy(p, e, el);
		p += el;
		run = ++i;
	}
	memcpy(p, s + run, i - run);
	return p + (i - run);
}

int proto_html_escape(struct proto_buf *b, const char *s, size_t len)
{
	if (len > SIZE_MAX / 8)
		return -EOVERFLOW;
	TRY(proto_buf_reserve(b, HTML_ESC_MAX(len)));
	b->len = (size_t)(raw_html_escape(b->data + b->len, s, len) - b->data);
	return 0;
}

/* Appends the percent-encoding of s (url.h rules). */
static int put_encoded(struct proto_buf *b, const char *s, size_t len,
                       unsigned flags)
{
	size_t need = proto_url_encode(s, len, NULL, 0, flags);

	TRY(proto_buf_reserve(b, need + 1));
	proto_url_encode(s, len, b->data + b->len, need + 1, flags);
	b->len += need;
	return 0;
}

/* Numbers and dates by hand: a 100,000-row listing formats 300,000 of
 * them, and printf/strftime were most of the rendering time. The raw_
 * writers write at @p (room for RAW_NUM_MAX bytes) and return the end. */
#define RAW_NUM_MAX 24
static const char digit_pairs[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Two digits of @v < 100 at @o. */
static void put2(char *o, unsigned v)
{
	o[0] = digit_pairs[2 * v];
	o[1] = digit_pairs[2 * v + 1];
}

static char *raw_u64(char *p, uint64_t v)
{
	size_t n = 1;

	for (uint64_t t = v; t >= 10; t /= 10)
		n++;
	char *o = p + n;
	while (v >= 100) {
		o -= 2;
		put2(o, (unsigned)(v % 100));
		v /= 100;
	}
	if (v >= 10)
		put2(o - 2, (unsigned)v);
	else
		o[-1] = (char)('0' + v);
	return p + n;
}

/* "YYYY-MM-DD HH:MM:SS" (UTC) of @t; civil_from_days as in httpdate.c
 * (H. Hinnant's algorithm) once per day, since a directory's rows
 * fall on few days: @l keeps the last day's date. */
static char *raw_datetime(struct proto_listing *l, char *o, int64_t t)
{
	int64_t days = t / 86400, secs = t % 86400;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	if (!l->proto__dated || days != l->proto__day) {
		int64_t era, y, z = days + 719468;
		unsigned doe, yoe, doy, mp, d, m;

		era = (z >= 0 ? z : z - 146096) / 146097;
		doe = (unsigned)(z - era * 146097);
		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
		mp = (5 * doy + 2) / 153;
		d = doy - (153 * mp + 2) / 5 + 1;
		m = mp < 10 ? mp + 3 : mp - 9;
		y = (int64_t)yoe + era * 400 + (m <= 2);
		if (y < 0 || y > 9999) {
			*o = '?';
			return o + 1;
		}
		char *c = l->proto__date;
		put2(c, (unsigned)(y / 100));
		put2(c + 2, (unsigned)(y % 100));
		c[4] = '-';
		put2(c + 5, m);
		c[7] = '-';
		put2(c + 8, d);
		l->proto__day = days;
		l->proto__dated = true;
	}
	memcpy(o, l->proto__date, 10);
	o[10] = ' ';
	put2(o + 11, (unsigned)(secs / 3600));
	o[13] = ':';
	put2(o + 14, (unsigned)(secs / 60 % 60));
	o[16] = ':';
	put2(o + 17, (unsigned)(secs % 60));
	return o + 19;
}

/* ls -lh style: "827", "1.2K", "35M". */
static char *raw_human(char *o, uint64_t v)
{
	static const char units[] = "KMGTPE";
	uint64_t tenths;
	int u = 0;

	if (v < 1024)
		return raw_u64(o, v);
	/* v / 1024^(u+1) in tenths, rounded to nearest */
	while (u < 5 && v >= (uint64_t)1024 << (10 * (u + 1)) && (10 * (u + 1)) < 64 - 10)
		u++;
	tenths = (uint64_t)(((unsigned __int128)v * 10 + ((uint64_t)1 << (10 * (u + 1))) / 2) >> (10 * (u + 1)));
	if (tenths < 100) {
		o[0] = (char)('0' + tenths / 10);
		o[1] = '.';
		o[2] = (char)('0' + tenths % 10);
		o[3] = units[u];
		return o + 4;
	}
	o = raw_u64(o, (tenths + 5) / 10);
	*o = units[u];
	return o + 1;
}

static int put_u64(struct proto_buf *b, uint64_t v)
{
	TRY(proto_buf_reserve(b, RAW_NUM_MAX));
	b->len = (size_t)(raw_u64(b->data + b->len, v) - b->data);
	return 0;
}

static const struct { const char *s; size_t len; } type_names[] = {
#define TN(t, s) [t] = { s, sizeof(s) - 1 }
	TN(PROTO_FT_UNKNOWN, "unknown"), TN(PROTO_FT_REG, "file"),
	TN(PROTO_FT_DIR, "dir"), TN(PROTO_FT_LNK, "symlink"),
	TN(PROTO_FT_CHR, "char"), TN(PROTO_FT_BLK, "block"),
	TN(PROTO_FT_FIFO, "fifo"), TN(PROTO_FT_SOCK, "socket"),
#undef TN
};

/* The name of @t ("file", "dir"...) at @p; returns the end. */
static char *raw_type(char *p, enum proto_ftype t)
{
	unsigned i = (unsigned)t < sizeof type_names / sizeof type_names[0] ? (unsigned)t : 0;

	memcpy(p, type_names[i].s, type_names[i].len);
	return p + type_names[i].len;
}

const char *proto_listing_content_type(enum proto_list_format f)
{
	switch (f) {
	case PROTO_FMT_JSON: return "application/json";
	case PROTO_FMT_NDJSON: return "application/x-ndjson";
	default: return "text/html; charset=utf-8";
	}
}

/* ---- HTML ----
 *
 * Not a <table>: Chromium lays out every row of a 100,000-row table
 * before the first paint (measured here: > 4x the time of the same rows
 * as grid rows, more than a plain <pre>). Rows are CSS grid lines in
 * blocks of HTML_CHUNK with content-visibility:auto, so the browser only
 * lays out the blocks on screen; find-in-page still sees every row.
 * A block's placeholder height is its 256 rows at 23.6 px; the last,
 * partial block is always laid out, so End lands on the true bottom in
 * the first frame instead of a placeholder's worth below it.
 */

#define HTML_CHUNK 256

static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222;background:#fff}"
	"h1{font-size:1.2em;font-weight:600;overflow-wrap:anywhere}"
	"h1 a{text-decoration:none}"
	".r{display:grid;grid-template-columns:minmax(0,1fr) 7em 11em 5em;"
	"gap:0 1em;padding:2px 8px}"
	".r>*{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}"
	".r>:first-child{white-space:normal;overflow-wrap:anywhere}"
	".r>:nth-child(2){text-align:right}"
	".h{font-weight:600;border-bottom:1px solid #bbb;position:sticky;top:0;background:inherit}"
	".h a{color:inherit}.h .s:after{content:\" \\25B2\"}.h .d:after{content:\" \\25BC\"}"
	".c{content-visibility:auto;contain-intrinsic-size:auto 6042px}"
	".c:last-of-type{content-visibility:visible}"
	".c>.r:nth-child(even){background:#f4f4f4}.c>.r:hover{background:#e8f0fe}"
	"a{color:#15c}a:visited{color:#639}.l{color:#777}.n{margin-top:1em}"
	"@media(prefers-color-scheme:dark){body{background:#111;color:#ddd}"
	".c>.r:nth-child(even){background:#1a1a1a}.c>.r:hover{background:#223}"
	"a{color:#8ab4f8}a:visited{color:#c58af9}.h{border-color:#444}}";

size_t proto_listing_size_hint(const struct proto_listing *l, size_t entries,
                               size_t name_bytes)
{
	/* A row's fixed text and numbers: ~130 bytes of HTML (the name
	 * twice), ~95 of JSON; the page's head and tail a few KiB. */
	size_t row = l->format == PROTO_FMT_JSON || l->format == PROTO_FMT_NDJSON ? 96 : 136;
	size_t per_name = row == 96 ? 1 : 2;

	if (entries > (SIZE_MAX / 2 - 8192) / row || name_bytes > (SIZE_MAX / 2) / per_name)
		return SIZE_MAX / 2;
	return 8192 + entries * row + name_bytes * per_name;
}

static const char *sort_word(enum proto_list_sort s)
{
	switch (s) {
	case PROTO_SORT_SIZE: return "size";
	case PROTO_SORT_MTIME: return "mtime";
	case PROTO_SORT_NONE: return "none";
	default: return "name";
	}
}

static enum proto_list_sort eff_sort(const struct proto_listing *l)
{
	return l->sort == PROTO_SORT_DEFAULT ? PROTO_SORT_NAME : l->sort;
}

/* A column header: a link that reloads the page sorted by it. */
static int html_th(struct proto_buf *b, const struct proto_listing *l,
                   enum proto_list_sort col, const char *label)
{
	bool cur = eff_sort(l) == col;
	/* clicking the current column flips the order; another column
	 * starts ascending */
	const char *order = cur && !l->desc ? "desc" : "asc";

	TRY(proto_buf_printf(b, "<span%s><a href=\"?sort=%s&amp;order=%s",
	                     !cur ? "" : l->desc ? " class=d" : " class=s",
	                     sort_word(col), order));
	if (l->dirs_first)
		TRY(proto_buf_puts(b, "&amp;dirs=first"));
	if (l->limit && col == PROTO_SORT_NAME && !l->dirs_first)
		TRY(proto_buf_printf(b, "&amp;limit=%llu", l->limit));
	return proto_buf_printf(b, "\">%s</a></span>", label);
}

static int html_begin(struct proto_listing *l, struct proto_buf *b)
{
	size_t seg = 0;

	TRY(proto_buf_puts(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
	                   "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
	                   "<title>Index of "));
	TRY(proto_html_escape(b, l->path, l->pathlen));
	TRY(proto_buf_printf(b, "</title><style>%s</style></head>\n<body><h1>Index of ",
	                     css));
	/* breadcrumbs: each prefix of the path links to itself */
	for (size_t i = 0; i < l->pathlen; i++) {
		if (l->path[i] != '/' && i + 1 < l->pathlen)
			continue;
		TRY(proto_buf_puts(b, "<a href=\""));
		TRY(put_encoded(b, l->path, i + 1, PROTO_ENC_KEEP_SLASH));
		TRY(proto_buf_puts(b, "\">"));
		TRY(proto_html_escape(b, l->path + seg, i + 1 - seg));
		TRY(proto_buf_puts(b, "</a>"));
		seg = i + 1;
	}
	TRY(proto_buf_puts(b, "</h1>\n<div class=\"r h\">"));
	TRY(html_th(b, l, PROTO_SORT_NAME, "Name"));
	TRY(html_th(b, l, PROTO_SORT_SIZE, "Size"));
	TRY(html_th(b, l, PROTO_SORT_MTIME, "Last modified"));
	TRY(proto_buf_puts(b, "<span>Type</span></div>\n"));
	if (!(l->pathlen == 1 && l->path[0] == '/'))
		TRY(proto_buf_puts(b, "<div class=r><a href=\"../\">../</a>"
		                   "<span></span><span></span><span>dir</span></div>\n"));
	return 0;
}

/* One row, into room reserved for its longest form: a row is ~150
 * bytes, and bounds checks per field were a fifth of rendering. */
static int html_entry(struct proto_listing *l, struct proto_buf *b,
                      const struct proto_entry *e)
{
	bool dir = e->type == PROTO_FT_DIR;
	bool link = e->type == PROTO_FT_LNK && e->target;
	size_t tl = link ? e->targetlen : 0;

	if (e->namelen > SIZE_MAX / 16 || tl > SIZE_MAX / 16)
		return -EOVERFLOW;
	/* url-encoded (3 per byte) and escaped name, escaped target, and
	 * the fixed text and numbers, ~250 bytes */
	TRY(proto_buf_reserve(b, 3 * e->namelen + HTML_ESC_MAX(e->namelen) +
	                         HTML_ESC_MAX(tl) + 512));
	char *p = b->data + b->len;
	if (l->proto__count % HTML_CHUNK == 0) {
		if (l->proto__count)
			PUT_LIT(p, "</div><div class=c>\n");
		else
			PUT_LIT(p, "<div class=c>\n");
	}
	if (link)
		PUT_LIT(p, "<div class=r><span><a href=\"");
	else
		PUT_LIT(p, "<div class=r><a href=\"");
	/* Most names are the same encoded and escaped (what encoding
	 * leaves as it is holds no HTML markup): copied twice. */
	bool plain = proto_url_plain_span(e->name, e->namelen) == e->namelen;
	if (plain) {
		memcpy(p, e->name, e->namelen);
		p += e->namelen;
	} else {
		/* ':' is encoded, so a name such as "a:b" cannot read as a scheme */
		p += proto_url_encode(e->name, e->namelen, p, 3 * e->namelen + 1, 0);
	}
	if (dir)
		*p++ = '/';
	PUT_LIT(p, "\">");
	if (plain) {
		memcpy(p, e->name, e->namelen);
		p += e->namelen;
	} else {
		p = raw_html_escape(p, e->name, e->namelen);
	}
	if (dir)
		*p++ = '/';
	PUT_LIT(p, "</a>");
	if (link) {
		PUT_LIT(p, "<span class=l> \xE2\x86\x92 ");
		p = raw_html_escape(p, e->target, e->targetlen);
		PUT_LIT(p, "</span></span>");
	}
	if (dir) {
		PUT_LIT(p, "<span>-");
	} else {
		PUT_LIT(p, "<span title=\"");
		p = raw_u64(p, e->size);
		PUT_LIT(p, " bytes\">");
		p = raw_human(p, e->size);
	}
	PUT_LIT(p, "</span><span>");
	p = raw_datetime(l, p, e->mtime_sec);
	PUT_LIT(p, "</span><span>");
	p = raw_type(p, e->type);
	PUT_LIT(p, "</span></div>\n");
	b->len = (size_t)(p - b->data);
	return 0;
}

static int html_end(struct proto_listing *l, struct proto_buf *b,
                    const char *next, size_t nextlen)
{
	if (l->proto__count)
		TRY(proto_buf_puts(b, "</div>\n"));
	if (next) {
		TRY(proto_buf_printf(b, "<p class=n><a rel=\"next\" href=\"?sort=%s&amp;order=%s",
		                     sort_word(eff_sort(l)), l->desc ? "desc" : "asc"));
		if (l->limit)
			TRY(proto_buf_printf(b, "&amp;limit=%llu", l->limit));
		TRY(proto_buf_puts(b, "&amp;after="));
		TRY(put_encoded(b, next, nextlen, 0));
		TRY(proto_buf_puts(b, "\">Next page</a></p>\n"));
	}
	return proto_buf_printf(b, "<p class=n>%llu %s</p></body></html>\n",
	                        l->proto__count, l->proto__count == 1 ? "entry" : "entries");
}

/* ---- JSON ---- */

/* One object, into room reserved for its longest form, as html_entry. */
static int json_entry(struct proto_buf *b, const struct proto_entry *e)
{
	size_t tl = e->target ? e->targetlen : 0;
	bool bad_name, bad_target = false;

	if (e->namelen > SIZE_MAX / 32 || tl > SIZE_MAX / 32)
		return -EOVERFLOW;
	/* each string escaped and, if not UTF-8, percent-encoded too; the
	 * keys and numbers ~150 bytes */
	TRY(proto_buf_reserve(b, JSON_STR_MAX(e->namelen) + 3 * e->namelen +
	                         JSON_STR_MAX(tl) + 3 * tl + 256));
	char *p = b->data + b->len;
	PUT_LIT(p, "{\"name\":");
	p = raw_json_string(p, e->name, e->namelen, &bad_name);
	PUT_LIT(p, ",\"type\":\"");
	p = raw_type(p, e->type);
	PUT_LIT(p, "\",\"size\":");
	p = raw_u64(p, e->size);
	PUT_LIT(p, ",\"mtime\":");
	if (e->mtime_sec < 0)
		*p++ = '-';
	p = raw_u64(p, e->mtime_sec < 0 ? (uint64_t)0 - (uint64_t)e->mtime_sec
	                                : (uint64_t)e->mtime_sec);
	PUT_LIT(p, ",\"mtime_ns\":");
	p = raw_u64(p, e->mtime_nsec);
	PUT_LIT(p, ",\"mode\":");
	p = raw_u64(p, e->mode);
	if (e->target) {
		PUT_LIT(p, ",\"target\":");
		p = raw_json_string(p, e->target, tl, &bad_target);
	}
	/* the exact bytes of what was not valid UTF-8 (the encoding uses
	 * only ASCII, so it needs no JSON escaping) */
	if (bad_name) {
		PUT_LIT(p, ",\"name_pct\":\"");
		p += proto_url_encode(e->name, e->namelen, p, 3 * e->namelen + 1, 0);
		*p++ = '"';
	}
	if (bad_target) {
		PUT_LIT(p, ",\"target_pct\":\"");
		p += proto_url_encode(e->target, tl, p, 3 * tl + 1, 0);
		*p++ = '"';
	}
	*p++ = '}';
	b->len = (size_t)(p - b->data);
	return 0;
}

int proto_listing_next_url(const struct proto_listing *l, struct proto_buf *b,
                           const char *next, size_t nextlen)
{
	size_t save = b->len;
	int r;

	if ((r = put_encoded(b, l->path, l->pathlen, PROTO_ENC_KEEP_SLASH)) < 0 ||
	    (r = proto_buf_puts(b, "?")) < 0 ||
	    (l->format == PROTO_FMT_JSON && (r = proto_buf_puts(b, "format=json&")) < 0) ||
	    (l->format == PROTO_FMT_NDJSON && (r = proto_buf_puts(b, "format=ndjson&")) < 0) ||
	    (r = proto_buf_puts(b, "sort=")) < 0 ||
	    (r = proto_buf_puts(b, sort_word(eff_sort(l)))) < 0 ||
	    (r = proto_buf_puts(b, l->desc ? "&order=desc" : "&order=asc")) < 0 ||
	    (l->limit && ((r = proto_buf_puts(b, "&limit=")) < 0 ||
	                  (r = put_u64(b, l->limit)) < 0)) ||
	    (r = proto_buf_puts(b, "&after=")) < 0 ||
	    (r = put_encoded(b, next, nextlen, 0)) < 0) {
		b->len = save;
		return r;
	}
	return 0;
}

/* ---- dispatch; each keeps the buffer unchanged on failure ---- */

int proto_listing_begin(struct proto_listing *l, struct proto_buf *b)
{
	size_t save = b->len;
	int r = 0;

	l->proto__count = 0;
	l->proto__dated = false;
	switch (l->format) {
	case PROTO_FMT_JSON: {
		bool bad = false;
		/* as for names: bytes that are not UTF-8 also go exact, as
		 * path_pct */
		if ((r = proto_buf_puts(b, "{\"path\":")) < 0 ||
		    (r = proto_json_string(b, l->path, l->pathlen, &bad)) < 0)
			break;
		if (bad && ((r = proto_buf_puts(b, ",\"path_pct\":\"")) < 0 ||
		            (r = put_encoded(b, l->path, l->pathlen, PROTO_ENC_KEEP_SLASH)) < 0 ||
		            (r = proto_buf_puts(b, "\"")) < 0))
			break;
		r = proto_buf_puts(b, ",\"entries\":[\n");
		break;
	}
	case PROTO_FMT_NDJSON:
		break;
	default:
		r = html_begin(l, b);
	}
	if (r < 0)
		b->len = save;
	return r;
}

int proto_listing_entry(struct proto_listing *l, struct proto_buf *b,
                        const struct proto_entry *e)
{
	size_t save = b->len;
	int r;

	switch (l->format) {
	case PROTO_FMT_JSON:
		r = l->proto__count ? proto_buf_append(b, ",\n", 2) : 0;
		if (r >= 0)
			r = json_entry(b, e);
		break;
	case PROTO_FMT_NDJSON:
		r = json_entry(b, e);
		if (r >= 0)
			r = proto_buf_append(b, "\n", 1);
		break;
	default:
		r = html_entry(l, b, e);
	}
	if (r < 0) {
		b->len = save;
		return r;
	}
	l->proto__count++;
	return 0;
}

int proto_listing_end(struct proto_listing *l, struct proto_buf *b,
                      const char *next, size_t nextlen)
{
	size_t save = b->len;
	bool bad = false;
	int r = 0;

	switch (l->format) {
	case PROTO_FMT_JSON:
		if ((r = proto_buf_puts(b, l->proto__count ? "\n],\"next\":" : "],\"next\":")) < 0)
			break;
		if (!next) {
			r = proto_buf_puts(b, "null");
		} else if ((r = proto_json_string(b, next, nextlen, &bad)) >= 0 && bad) {
			if ((r = proto_buf_puts(b, ",\"next_pct\":\"")) >= 0 &&
			    (r = put_encoded(b, next, nextlen, 0)) >= 0)
				r = proto_buf_puts(b, "\"");
		}
		if (r >= 0)
			r = proto_buf_puts(b, "}\n");
		break;
	case PROTO_FMT_NDJSON:
		break;
	default:
		r = html_end(l, b, next, nextlen);
	}
	if (r < 0)
		b->len = save;
	return r;
}

bool proto_path_hidden(const char *path, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (path[i] == '/' || (i && path[i - 1] != '/') || path[i] != '.')
			continue;
		/* a component starting with '.' at i: "." and ".." are not names */
		size_t end = i;
		while (end < len && path[end] != '/')
			end++;
		if (end - i > 2 || (end - i == 2 && path[i + 1] != '.'))
			return true;
	}
	return false;
}

/* The weight Accept gives a format (its best media type). */
static int fmt_q(const char *accept, enum proto_list_format f)
{
	int q, q2;

	switch (f) {
	case PROTO_FMT_JSON:
		return proto_accept_q(accept, "application", "json");
	case PROTO_FMT_NDJSON:
		q = proto_accept_q(accept, "application", "x-ndjson");
		q2 = proto_accept_q(accept, "application", "ndjson");
		return q > q2 ? q : q2;
	default:
		return proto_accept_q(accept, "text", "html");
	}
}

enum proto_list_format proto_listing_negotiate(const char *accept,
                                               enum proto_list_format dflt)
{
	static const enum proto_list_format all[3] = {
		PROTO_FMT_HTML, PROTO_FMT_JSON, PROTO_FMT_NDJSON,
	};
	enum proto_list_format order[3], pick;
	int best = 0, k = 1;

	if (dflt == PROTO_FMT_DEFAULT)
		dflt = PROTO_FMT_HTML;
	pick = dflt;
	if (!accept || !*accept)
		return dflt;
	/* The default first, so that it wins ties (curl's "*" "/" "*");
	 * then HTML, JSON, NDJSON. */
	order[0] = dflt;
	for (int i = 0; i < 3; i++)
		if (all[i] != dflt)
			order[k++] = all[i];
	for (int i = 0; i < 3; i++) {
		int q = fmt_q(accept, order[i]);
		if (q > best) {
			best = q;
			pick = order[i];
		}
	}
	return pick;
}
