#include "first.h"

/*
 * Listing rows as bytes: HTML (a table sortable by its column headers,
 * which are plain links: sorting happens in the server, so a 100,000-row
 * page needs no script), JSON ({"path", "entries": [...], "count",
 * "next"}) and NDJSON (one entry object per line).
 *
 * Names are arbitrary bytes. Links carry them exactly (percent-encoded);
 * text shows them as valid UTF-8: an invalid byte becomes U+FFFD, and in
 * HTML a control character becomes its Control Pictures symbol (U+2400 +
 * c) so that a newline in a name stays visible. JSON adds "name_pct"
 * (the exact bytes, percent-encoded) when the name is not valid UTF-8.
 *
 * Hot path: 100,000 rows per listing, so numbers and dates are formatted
 * by hand rather than through printf.
 */

#include "daemon/listing_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int lst_buf_grow(struct lst_buf *b, size_t extra)
{
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	char *p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

void lst_buf_compact(struct lst_buf *b)
{
	if (!b->off)
		return;
	memmove(b->p, b->p + b->off, b->len - b->off);
	b->len -= b->off;
	b->off = 0;
}

void lst_buf_free(struct lst_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

/* Length of the well-formed UTF-8 sequence at @s (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	size_t len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (c == 0xe0 && s[1] < 0xa0)
		return 0;       /* overlong */
	if (c == 0xed && s[1] > 0x9f)
		return 0;       /* surrogate */
	if (c == 0xf0 && s[1] < 0x90)
		return 0;       /* overlong */
	if (c == 0xf4 && s[1] > 0x8f)
		return 0;       /* > U+10FFFF */
	return len;
}

static bool utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq(u + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

#define REPLACEMENT "\xef\xbf\xbd"

static int put_html(struct lst_buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;
	int r = 0;

	/* Copy runs of bytes that need nothing in one go. */
	while (i < n && !r) {
		unsigned c = u[i];
		if (c >= 0x80) {
			size_t k = utf8_seq(u + i, n - i);
			if (k) {
				i += k;
				run += k;
				continue;
			}
		} else if (c >= 0x20 && c != 0x7f && c != '<' && c != '>' &&
		           c != '&' && c != '"' && c != '\'') {
			i++;
			run++;
			continue;
		}
		r = lst_put(b, u + i - run, run);
		run = 0;
		if (r)
			break;
		switch (c) {
		case '<': r = LST_PUTS(b, "&lt;"); break;
		case '>': r = LST_PUTS(b, "&gt;"); break;
		case '&': r = LST_PUTS(b, "&amp;"); break;
		case '"': r = LST_PUTS(b, "&quot;"); break;
		case '\'': r = LST_PUTS(b, "&#39;"); break;
		case 0x7f: r = LST_PUTS(b, "\xe2\x90\xa1"); break;
		default:
			if (c < 0x20) {
				char pic[3] = { (char)0xe2, (char)0x90, (char)(0x80 + c) };
				r = lst_put(b, pic, 3);
			} else {
				r = LST_PUTS(b, REPLACEMENT);
			}
		}
		i++;
	}
	if (!r && run)
		r = lst_put(b, u + i - run, run);
	return r;
}

static int put_json_str(struct lst_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;
	int r = LST_PUTS(b, "\"");

	while (i < n && !r) {
		unsigned c = u[i];
		if (c >= 0x80) {
			size_t k = utf8_seq(u + i, n - i);
			if (k) {
				i += k;
				run += k;
				continue;
			}
		} else if (c >= 0x20 && c != '"' && c != '\\') {
			i++;
			run++;
			continue;
		}
		r = lst_put(b, u + i - run, run);
		run = 0;
		if (r)
			break;
		switch (c) {
		case '"': r = LST_PUTS(b, "\\\""); break;
		case '\\': r = LST_PUTS(b, "\\\\"); break;
		case '\n': r = LST_PUTS(b, "\\n"); break;
		case '\r': r = LST_PUTS(b, "\\r"); break;
		case '\t': r = LST_PUTS(b, "\\t"); break;
		default:
			if (c < 0x20) {
				char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
				r = lst_put(b, e, 6);
			} else {
				r = LST_PUTS(b, "\\ufffd");
			}
		}
		i++;
	}
	if (!r && run)
		r = lst_put(b, u + i - run, run);
	return r ? r : LST_PUTS(b, "\"");
}

/* RFC 3986 unreserved plus the sub-delims that are harmless in a
 * relative path reference and in an HTML attribute: "!$()*,;=@".
 * ':' is encoded so that "a:b" cannot read as a scheme, '\'' and '"'
 * so that the result is safe in any attribute quoting. */
static bool keep_byte(unsigned c)
{
	static const char extra[] = "-._~!$()*,;=@";
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c && memchr(extra, (int)c, sizeof extra - 1);
}

int lst_put_pct(struct lst_buf *b, const char *s, size_t n, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	static signed char keep[256] = { -1 };

	if (keep[0] < 0) {
		for (unsigned c = 0; c < 256; c++)
			keep[c] = keep_byte(c);
	}
	if (b->len + 3 * n > b->cap && lst_buf_grow(b, 3 * n) < 0)
		return -ENOMEM;
	char *o = b->p + b->len;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (keep[c] || (keep_slash && c == '/')) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	b->len = (size_t)(o - b->p);
	return 0;
}

static char *fmt_u64(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

static int put_u64(struct lst_buf *b, uint64_t v)
{
	char t[24], *e = t + sizeof t;
	char *s = fmt_u64(e, v);
	return lst_put(b, s, (size_t)(e - s));
}

static void two(char *o, unsigned v)
{
	o[0] = (char)('0' + v / 10 % 10);
	o[1] = (char)('0' + v % 10);
}

/* "YYYY-MM-DD HH:MM" (16) or, with @iso, "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (30). */
static int put_time(struct lst_buf *b, int64_t sec, uint32_t nsec, bool iso)
{
	struct tm tm;
	time_t t = (time_t)sec;
	char o[32];

	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		return LST_PUTS(b, iso ? "\"1970-01-01T00:00:00Z\"" : "-");
	unsigned y = (unsigned)tm.tm_year + 1900;
	two(o, y / 100);
	two(o + 2, y % 100);
	o[4] = '-';
	two(o + 5, (unsigned)tm.tm_mon + 1);
	o[7] = '-';
	two(o + 8, (unsigned)tm.tm_mday);
	o[10] = iso ? 'T' : ' ';
	two(o + 11, (unsigned)tm.tm_hour);
	o[13] = ':';
	two(o + 14, (unsigned)tm.tm_min);
	if (!iso)
		return lst_put(b, o, 16);
	o[16] = ':';
	two(o + 17, (unsigned)tm.tm_sec);
	o[19] = '.';
	for (int i = 8; i >= 0; i--, nsec /= 10)
		o[20 + i] = (char)('0' + nsec % 10);
	o[29] = 'Z';
	return LST_PUTS(b, "\"") || lst_put(b, o, 30) || LST_PUTS(b, "\"");
}

/* "999 B", "1.5 KiB", "12.0 MiB", "120 GiB": one decimal below 100. */
static int put_human(struct lst_buf *b, uint64_t v)
{
	static const char *const unit[] = { " B", " KiB", " MiB", " GiB", " TiB",
	                                    " PiB", " EiB" };
	unsigned k = 0;
	char t[32], *e = t + sizeof t - 8, *s;

	while (k < 6 && v >> (10 * (k + 1)))
		k++;
	uint64_t whole = v >> (10 * k);
	if (k && whole < 100) {
		unsigned tenth = (unsigned)(((v >> (10 * k - 10)) & 1023) * 10 / 1024);
		*--e = (char)('0' + tenth);
		*--e = '.';
	}
	s = fmt_u64(e, whole);
	size_t ul = strlen(unit[k]);
	memcpy(e, unit[k], ul);
	return lst_put(b, s, (size_t)(e - s) + ul);
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "char";
	case S_IFBLK: return "block";
	}
	return "unknown";
}

static bool shows_as_dir(const struct lk_entry *e)
{
	if (e->err)
		return false;
	if (S_ISDIR(e->stx.stx_mode))
		return true;
	return S_ISLNK(e->stx.stx_mode) && S_ISDIR(e->target_mode);
}

const char *lst_content_type(enum lst_fmt f)
{
	switch (f) {
	case LST_JSON: return "application/json";
	case LST_NDJSON: return "application/x-ndjson";
	default: return "text/html; charset=utf-8";
	}
}

static int html_th(struct lst_buf *b, const struct lst_params *p,
                   enum lst_sort col, const char *label)
{
	/* Clicking the current column flips the order; another column
	 * starts in its natural order (names A-Z, largest and newest first,
	 * as ls -S and ls -t). */
	bool desc = col == p->sort ? !p->desc : col != LST_NAME;
	int r = LST_PUTS(b, "<th><a href=\"");
	struct lst_params q = *p;

	/* The link restarts paging: a cursor belongs to one order. */
	q.after = NULL;
	r = r || LST_PUTS(b, "?") ||
	    lst_params_url(b, &q, col, desc, false, NULL, true) ||
	    LST_PUTS(b, "\">") || lst_put(b, label, strlen(label));
	if (!r && col == p->sort)
		r = p->desc ? LST_PUTS(b, " \xe2\x86\x93") : LST_PUTS(b, " \xe2\x86\x91");
	return r || LST_PUTS(b, "</a></th>");
}

int lst_render_head(struct lst_buf *b, const struct lst_params *p)
{
	size_t ul = strlen(p->urlpath);
	int r;

	switch (p->fmt) {
	case LST_JSON:
		return LST_PUTS(b, "{\"path\":") || put_json_str(b, p->urlpath, ul) ||
		       LST_PUTS(b, ",\"entries\":[");
	case LST_NDJSON:
		return 0;
	case LST_HTML:
		break;
	}
	r = LST_PUTS(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
	             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
	             "<title>Index of ") ||
	    put_html(b, p->urlpath, ul) ||
	    LST_PUTS(b, "</title>\n<style>"
	             "body{font:15px/1.45 system-ui,sans-serif;margin:1.5em;color:#222}"
	             "h1{font-size:1.3em;font-weight:600;word-break:break-all}"
	             "table{border-collapse:collapse}"
	             "th,td{padding:.12em .9em .12em 0;text-align:left}"
	             "th{border-bottom:1px solid #ccc}th a{color:inherit;text-decoration:none}"
	             "td:nth-child(2){text-align:right;white-space:nowrap}"
	             "td:nth-child(3){white-space:nowrap;color:#555}"
	             "a{color:#0645ad}td a{word-break:break-all}"
	             "tbody tr:hover{background:#f3f6fb}.t{color:#777}"
	             "</style></head>\n<body><h1>Index of ") ||
	    put_html(b, p->urlpath, ul) ||
	    LST_PUTS(b, "</h1>\n<table><thead><tr>") ||
	    html_th(b, p, LST_NAME, "Name") ||
	    html_th(b, p, LST_SIZE, "Size") ||
	    html_th(b, p, LST_MTIME, "Modified (UTC)") ||
	    LST_PUTS(b, "</tr></thead>\n<tbody>\n");
	if (!r && strcmp(p->urlpath, "/"))
		r = LST_PUTS(b, "<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
	return r;
}

static int html_entry(struct lst_buf *b, const struct lk_entry *e)
{
	bool dir = shows_as_dir(e);
	int r = LST_PUTS(b, "<tr><td><a href=\"") ||
	        lst_put_pct(b, e->name, e->namelen, false) ||
	        (dir && LST_PUTS(b, "/")) ||
	        LST_PUTS(b, "\">") ||
	        put_html(b, e->name, e->namelen) ||
	        (dir && LST_PUTS(b, "/")) ||
	        LST_PUTS(b, "</a>");
	if (!r && e->link)
		r = LST_PUTS(b, " <span class=\"t\">\xe2\x86\x92 ") ||
		    put_html(b, e->link, strlen(e->link)) || LST_PUTS(b, "</span>");
	if (r)
		return r;
	if (e->err)
		return LST_PUTS(b, "</td><td data-size=\"-1\">?</td><td>?</td></tr>\n");
	r = LST_PUTS(b, "</td><td data-size=\"") || put_u64(b, e->stx.stx_size) ||
	    LST_PUTS(b, "\">");
	if (!r)
		r = S_ISDIR(e->stx.stx_mode) ? LST_PUTS(b, "\xe2\x80\x94")
		                              : put_human(b, e->stx.stx_size);
	return r || LST_PUTS(b, "</td><td>") ||
	       put_time(b, e->stx.stx_mtime.tv_sec, e->stx.stx_mtime.tv_nsec, false) ||
	       LST_PUTS(b, "</td></tr>\n");
}

static int json_entry(struct lst_buf *b, const struct lk_entry *e)
{
	int r = LST_PUTS(b, "{\"name\":") || put_json_str(b, e->name, e->namelen);

	if (!r && !utf8_valid(e->name, e->namelen))
		r = LST_PUTS(b, ",\"name_pct\":\"") ||
		    lst_put_pct(b, e->name, e->namelen, false) || LST_PUTS(b, "\"");
	if (r)
		return r;
	if (e->err)
		return LST_PUTS(b, ",\"type\":\"unknown\"}");
	const char *t = type_name(e->stx.stx_mode);
	char mode[4] = { (char)('0' + (e->stx.stx_mode >> 9 & 7)),
	                 (char)('0' + (e->stx.stx_mode >> 6 & 7)),
	                 (char)('0' + (e->stx.stx_mode >> 3 & 7)),
	                 (char)('0' + (e->stx.stx_mode & 7)) };
	r = LST_PUTS(b, ",\"type\":\"") || lst_put(b, t, strlen(t)) ||
	    LST_PUTS(b, "\",\"size\":") || put_u64(b, e->stx.stx_size) ||
	    LST_PUTS(b, ",\"mtime\":") ||
	    put_time(b, e->stx.stx_mtime.tv_sec, e->stx.stx_mtime.tv_nsec, true) ||
	    LST_PUTS(b, ",\"mode\":\"") || lst_put(b, mode, 4) || LST_PUTS(b, "\"");
	if (!r && e->link) {
		r = LST_PUTS(b, ",\"target\":") || put_json_str(b, e->link, strlen(e->link));
		if (!r && e->target_mode) {
			t = type_name(e->target_mode);
			r = LST_PUTS(b, ",\"target_type\":\"") ||
			    lst_put(b, t, strlen(t)) || LST_PUTS(b, "\"");
		}
	}
	return r || LST_PUTS(b, "}");
}

int lst_render_entry(struct lst_buf *b, const struct lst_params *p,
                     const struct lk_entry *e, size_t i)
{
	switch (p->fmt) {
	case LST_JSON:
		return (i ? LST_PUTS(b, ",\n") : LST_PUTS(b, "\n")) || json_entry(b, e);
	case LST_NDJSON:
		return json_entry(b, e) || LST_PUTS(b, "\n");
	case LST_HTML:
		break;
	}
	return html_entry(b, e);
}

int lst_render_tail(struct lst_buf *b, const struct lst_params *p,
                    size_t count, const char *next, size_t nextlen)
{
	int r;

	switch (p->fmt) {
	case LST_JSON:
		r = LST_PUTS(b, "\n],\"count\":") || put_u64(b, count) ||
		    LST_PUTS(b, ",\"next\":");
		if (next)
			r = r || put_json_str(b, next, nextlen);
		else
			r = r || LST_PUTS(b, "null");
		return r || LST_PUTS(b, "}\n");
	case LST_NDJSON:
		return 0;
	case LST_HTML:
		break;
	}
	r = LST_PUTS(b, "</tbody></table>\n<p class=\"t\">") || put_u64(b, count) ||
	    (count == 1 ? LST_PUTS(b, " entry") : LST_PUTS(b, " entries"));
	if (!r && next)
		r = LST_PUTS(b, " &middot; <a rel=\"next\" href=\"") ||
		    put_html(b, next, nextlen) || LST_PUTS(b, "\">next page</a>");
	return r || LST_PUTS(b, "</p>\n</body></html>\n");
}
