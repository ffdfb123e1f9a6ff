#include "first.h"

#include "proto/url.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Skips "http://authority" or "https://authority" (RFC 9112 3.2.2: a
 * server must accept the absolute form). Returns the offset of the
 * path, or 0 when @t is not in absolute form. */
static size_t skip_absolute(const char *t, size_t len)
{
	size_t i;

	if (len >= 7 && !strncasecmp(t, "http://", 7))
		i = 7;
	else if (len >= 8 && !strncasecmp(t, "https://", 8))
		i = 8;
	else
		return 0;
	while (i < len && t[i] != '/' && t[i] != '?' && t[i] != '#')
		i++;
	return i;
}

/* Removes dot segments and empty segments of the decoded path p[0..n)
 * (starting with '/') in place. Returns the new length or -EPERM when a
 * ".." would climb above the root. Sets *slash when the result ends
 * with '/'. */
static long remove_dots(char *p, size_t n, bool *slash)
{
	size_t r = 1, w = 1;    /* read and write positions after a '/' */
	bool trailing = true;   /* "/" alone */

	while (r <= n) {
		size_t s = r, len;

		while (r < n && p[r] != '/')
			r++;
		len = r - s;
		/* the segment is p[s..r); r is at '/' or at n */
		trailing = r < n;
		if (len == 0 || (len == 1 && p[s] == '.')) {
			trailing = true;
		} else if (len == 2 && p[s] == '.' && p[s + 1] == '.') {
			if (w <= 1)
				return -EPERM;
			/* drop the last written segment and its '/' */
			w--;                    /* at the '/' after it */
			while (w > 0 && p[w - 1] != '/')
				w--;
			trailing = true;
		} else {
			memmove(p + w, p + s, len);
			w += len;
			if (r < n)
				p[w++] = '/';
		}
		r++;
	}
	if (trailing && p[w - 1] != '/')
		p[w++] = '/';
	*slash = p[w - 1] == '/';
	return (long)w;
}

int proto_url_parse(const char *target, size_t len, char *buf, size_t bufsz,
                    struct proto_target *out)
{
	size_t i = skip_absolute(target, len), pend, qbeg = 0, qend = 0;
	bool absolute = i > 0, hasq = false;
	size_t o = 0;
	long n;

	pend = i;
	while (pend < len && target[pend] != '?' && target[pend] != '#')
		pend++;
	if (pend < len && target[pend] == '?') {
		hasq = true;
		qbeg = qend = pend + 1;
		while (qend < len && target[qend] != '#')
			qend++;
	}
	/* raw control bytes and spaces are invalid anywhere in the target
	 * (RFC 3986 has no place for them, and a NUL would cut the query
	 * short for C string users) */
	for (size_t k = pend; k < len; k++)
		if ((unsigned char)target[k] <= 0x20 || target[k] == 0x7f)
			return -EINVAL;
	if (pend == i && !absolute)
		return -EINVAL;
	if (pend > i && target[i] != '/')
		return -EINVAL;
	if ((pend - i) + 1 + 1 + (hasq ? qend - qbeg + 1 : 0) > bufsz)
		return -ENAMETOOLONG;

	if (pend == i)          /* "http://host" or "http://host?q" */
		buf[o++] = '/';
	for (; i < pend; i++) {
		unsigned char c = (unsigned char)target[i];

		if (c == '%') {
			int h, l;

			if (pend - i < 3)
				return -EINVAL;
			h = hexval((unsigned char)target[i + 1]);
			l = hexval((unsigned char)target[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = (unsigned char)(h * 16 + l);
			if (c == 0 || c == '/')
				return -EINVAL;
			i += 2;
		} else if (c <= 0x20 || c == 0x7f) {
			return -EINVAL;
		}
		buf[o++] = (char)c;
	}
	n = remove_dots(buf, o, &out->trailing_slash);
	if (n < 0)
		return (int)n;
	buf[n] = 0;
	out->path = buf;
	out->pathlen = (size_t)n;
	if (hasq) {
		char *q = buf + n + 1;

		memcpy(q, target + qbeg, qend - qbeg);
		q[qend - qbeg] = 0;
		out->query = q;
		out->querylen = qend - qbeg;
	} else {
		out->query = NULL;
		out->querylen = 0;
	}
	return 0;
}

const char *proto_url_relpath(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* Decodes a query component (form encoding: '+' is space) into out with
 * a NUL. Returns the length or -EINVAL / -ENAMETOOLONG. */
static int decode_component(const char *s, size_t len, char *out, size_t outsz)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			int h, l;

			if (len - i < 3)
				return -EINVAL;
			h = hexval((unsigned char)s[i + 1]);
			l = hexval((unsigned char)s[i + 2]);
			if (h < 0 || l < 0 || (h | l) == 0)
				return -EINVAL;
			c = (unsigned char)(h * 16 + l);
			i += 2;
		}
		if (o + 1 >= outsz)
			return -ENAMETOOLONG;
		out[o++] = (char)c;
	}
	if (!outsz)
		return -ENAMETOOLONG;
	out[o] = 0;
	return o > INT32_MAX ? -ENAMETOOLONG : (int)o;
}

int proto_query_get(const char *query, size_t qlen, const char *name,
                    char *out, size_t outsz)
{
	size_t nlen = strlen(name), i = 0;

	if (!query)
		return -ENOENT;
	while (i <= qlen) {
		size_t s = i, e, eq;

		while (i < qlen && query[i] != '&')
			i++;
		e = i++;
		eq = s;
		while (eq < e && query[eq] != '=')
			eq++;
		if (eq - s == nlen && !memcmp(query + s, name, nlen)) {
			if (eq == e)
				return decode_component("", 0, out, outsz);
			return decode_component(query + eq + 1, e - eq - 1, out,
			                        outsz);
		}
	}
	return -ENOENT;
}

static int get_small(const char *q, size_t qlen, const char *name, char *v,
                     size_t vsz)
{
	int r = proto_query_get(q, qlen, name, v, vsz);

	return r == -ENAMETOOLONG ? -EINVAL : r;
}

/* The index of parameter @name's value in @words, -ENOENT when absent,
 * -EINVAL for another value. */
static int get_word(const char *query, size_t qlen, const char *name,
                    const char *const *words, int n)
{
	char v[24];
	int r = get_small(query, qlen, name, v, sizeof v);

	if (r < 0)
		return r;
	for (int i = 0; i < n; i++)
		if (!strcmp(v, words[i]))
			return i;
	return -EINVAL;
}

/* limit=N: 1..10^9, digits only. 0, -ENOENT when absent, or -EINVAL. */
static int get_limit(const char *query, size_t qlen, unsigned long long *out)
{
	char v[24];
	unsigned long long n = 0;
	int r = get_small(query, qlen, "limit", v, sizeof v);

	if (r < 0)
		return r;
	if (r == 0 || r > 10)
		return -EINVAL;
	for (int i = 0; i < r; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (unsigned)(v[i] - '0');
	}
	if (n == 0 || n > 1000000000ull)
		return -EINVAL;
	*out = n;
	return 0;
}

int proto_listq_parse(const char *query, size_t qlen, char *buf, size_t bufsz,
                      struct proto_listq *q)
{
	/* In the order of the enums, from HTML and NAME. */
	static const char *const formats[] = { "html", "json", "ndjson" };
	static const char *const sorts[] = { "name", "size", "mtime", "none" };
	static const char *const orders[] = { "asc", "desc" };
	/* false before true; an empty value is false */
	static const char *const bools[] = { "0", "false", "no", "", "1", "true", "yes" };
	int r;

	memset(q, 0, sizeof *q);
	if (!query)
		return 0;
	if ((r = get_word(query, qlen, "format", formats, 3)) >= 0)
		q->format = (enum proto_list_format)(PROTO_FMT_HTML + r);
	else if (r != -ENOENT)
		return r;
	if ((r = get_word(query, qlen, "sort", sorts, 4)) >= 0)
		q->sort = (enum proto_list_sort)(PROTO_SORT_NAME + r);
	else if (r != -ENOENT)
		return r;
	if ((r = get_word(query, qlen, "order", orders, 2)) >= 0)
		q->desc = r == 1;
	else if (r != -ENOENT)
		return r;
	if ((r = get_word(query, qlen, "dirsfirst", bools, 7)) >= 0)
		q->dirs_first = r >= 4;
	else if (r != -ENOENT)
		return r;
	if ((r = get_limit(query, qlen, &q->limit)) < 0 && r != -ENOENT)
		return r;
	r = proto_query_get(query, qlen, "after", buf, bufsz);
	if (r >= 0) {
		q->after = buf;
		q->afterlen = (size_t)r;
	} else if (r != -ENOENT) {
		return r;
	}
	return 0;
}

/* Bytes left as they are in an encoded name: unreserved and the
 * sub-delims that are harmless in a path segment and in a query value
 * of ours ("&+" are not: they split and decode query values). A table:
 * listings encode every name of a 100,000-entry directory. */
#define K(c) [c] = 1
static const unsigned char keep_tab[256] = {
	K('-'), K('.'), K('_'), K('~'), K('!'), K('$'), K('('), K(')'),
	K('*'), K(','), K(';'), K('='), K('@'),
	K('0'), K('1'), K('2'), K('3'), K('4'), K('5'), K('6'), K('7'),
	K('8'), K('9'),
	K('A'), K('B'), K('C'), K('D'), K('E'), K('F'), K('G'), K('H'),
	K('I'), K('J'), K('K'), K('L'), K('M'), K('N'), K('O'), K('P'),
	K('Q'), K('R'), K('S'), K('T'), K('U'), K('V'), K('W'), K('X'),
	K('Y'), K('Z'),
	K('a'), K('b'), K('c'), K('d'), K('e'), K('f'), K('g'), K('h'),
	K('i'), K('j'), K('k'), K('l'), K('m'), K('n'), K('o'), K('p'),
	K('q'), K('r'), K('s'), K('t'), K('u'), K('v'), K('w'), K('x'),
	K('y'), K('z'),
};
#undef K

static bool keep(unsigned char c)
{
	return keep_tab[c];
}

size_t proto_url_plain_span(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < len && keep(u[i]))
		i++;
	return i;
}

size_t proto_url_encode(const char *s, size_t len, char *out, size_t outsz,
                        unsigned flags)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0, w = 0;    /* full length; bytes written */

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		bool k = keep(c) || (c == '/' && (flags & PROTO_ENC_KEEP_SLASH));
		size_t need = k ? 1 : 3;

		/* Write only while everything so far fits, so that a
		 * truncated output is a prefix of whole escapes. */
		if (w == o && o + need < outsz) {
			if (k) {
				out[o] = (char)c;
			} else {
				out[o] = '%';
				out[o + 1] = hex[c >> 4];
				out[o + 2] = hex[c & 15];
			}
			w += need;
		}
		o += need;
	}
	if (outsz)
		out[w] = 0;
	return o;
}
