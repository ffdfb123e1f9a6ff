#include "first.h"

/*
 * What a listing request asks for: the query (?format= &sort= &order=
 * &dirs= &limit= &after=) and, when the query does not say, the Accept
 * header; gzip from Accept-Encoding. Header lists with q-values per
 * RFC 9110 12.4.2 / 12.5.
 */

#include "daemon/listing_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes application/x-www-form-urlencoded @s[0..n) into a new string.
 * NULL with *err = 400 for a bad escape or a NUL byte. */
static char *decode(const char *s, size_t n, int *err)
{
	char *o = malloc(n + 1), *d = o;
	if (!o) {
		*err = 500;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			int h, l;
			if (i + 2 >= n || (h = hexval(s[i + 1])) < 0 ||
			    (l = hexval(s[i + 2])) < 0)
				goto bad;
			c = h << 4 | l;
			i += 2;
		}
		if (!c)
			goto bad;
		*d++ = (char)c;
	}
	*d = 0;
	return o;
bad:
	free(o);
	*err = 400;
	return NULL;
}

/* Calls @fn for each element of a comma-separated header list with its
 * name (trimmed, parameters cut off) and its q-value in thousandths. */
static void each_q(const char *s, void (*fn)(void *, const char *, size_t, int),
                   void *arg)
{
	while (s && *s) {
		const char *end = strchr(s, ',');
		if (!end)
			end = s + strlen(s);
		const char *n = s, *ne;
		while (n < end && (*n == ' ' || *n == '\t'))
			n++;
		ne = n;
		while (ne < end && *ne != ';' && *ne != ' ' && *ne != '\t')
			ne++;
		int q = 1000;
		for (const char *p = ne; p < end; p++) {
			if (*p != ';')
				continue;
			p++;
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
				p += 2;
				q = 0;
				int digits = 0;
				if (p < end && *p == '1') {
					q = 1000;
				} else if (p < end && *p == '0') {
					p++;
					if (p < end && *p == '.')
						for (p++; p < end && digits < 3 && *p >= '0' && *p <= '9'; p++, digits++)
							q += (*p - '0') * (digits == 0 ? 100 : digits == 1 ? 10 : 1);
				}
				break;
			}
		}
		if (ne > n)
			fn(arg, n, (size_t)(ne - n), q);
		s = *end ? end + 1 : end;
	}
}

static bool tok_is(const char *n, size_t l, const char *lit)
{
	return strlen(lit) == l && !strncasecmp(n, lit, l);
}

struct accept_q {
	int q[3];        /* per lst_fmt: best specific match, or -1 */
	int any_text, any_app, any;
};

static void accept_el(void *arg, const char *n, size_t l, int q)
{
	struct accept_q *a = arg;
	int f = -1;

	if (tok_is(n, l, "text/html") || tok_is(n, l, "application/xhtml+xml"))
		f = LST_HTML;
	else if (tok_is(n, l, "application/json"))
		f = LST_JSON;
	else if (tok_is(n, l, "application/x-ndjson") || tok_is(n, l, "application/ndjson") ||
	         tok_is(n, l, "application/jsonl") || tok_is(n, l, "application/json-seq"))
		f = LST_NDJSON;
	else if (tok_is(n, l, "text/*"))
		a->any_text = q;
	else if (tok_is(n, l, "application/*"))
		a->any_app = q;
	else if (tok_is(n, l, "*/*"))
		a->any = q;
	if (f >= 0 && q > a->q[f])
		a->q[f] = q;
}

static enum lst_fmt negotiate(const char *accept, enum lst_fmt dflt)
{
	struct accept_q a = { { -1, -1, -1 }, -1, -1, -1 };
	int best = -1;
	enum lst_fmt pick = dflt;

	if (!accept || !*accept)
		return dflt;
	each_q(accept, accept_el, &a);
	/* The default first so that it wins ties ("*" + "*" from curl). */
	enum lst_fmt order[3] = { dflt, LST_HTML, LST_JSON };
	if (dflt != LST_NDJSON) {
		order[1] = dflt == LST_HTML ? LST_JSON : LST_HTML;
		order[2] = LST_NDJSON;
	} else {
		order[1] = LST_HTML;
		order[2] = LST_JSON;
	}
	for (int i = 0; i < 3; i++) {
		enum lst_fmt f = order[i];
		int q = a.q[f];
		if (q < 0)
			q = f == LST_HTML ? a.any_text : a.any_app;
		if (q < 0)
			q = a.any;
		if (q > best && q > 0) {
			best = q;
			pick = f;
		}
	}
	return pick;
}

struct enc_q {
	int gzip, any, identity;
};

static void enc_el(void *arg, const char *n, size_t l, int q)
{
	struct enc_q *e = arg;
	if (tok_is(n, l, "gzip") || tok_is(n, l, "x-gzip"))
		e->gzip = q > e->gzip ? q : e->gzip;
	else if (tok_is(n, l, "*"))
		e->any = q;
}

static bool gzip_ok(const char *ae)
{
	struct enc_q e = { -1, -1, -1 };
	if (!ae)
		return false;
	each_q(ae, enc_el, &e);
	return e.gzip > 0 || (e.gzip < 0 && e.any > 0);
}

void lst_params_free(struct lst_params *p)
{
	free(p->after);
	p->after = NULL;
}

int lst_params_parse(struct lst_params *p, const char *uri,
                     const struct fsd_hdrs *h, const struct conf_listing *cfg)
{
	const char *q = uri ? strchr(uri, '?') : NULL;
	int err = 0;

	p->fmt = cfg->format == CONF_FMT_JSON ? LST_JSON
	       : cfg->format == CONF_FMT_NDJSON ? LST_NDJSON : LST_HTML;
	p->sort = cfg->sort == CONF_SORT_SIZE ? LST_SIZE
	        : cfg->sort == CONF_SORT_MTIME ? LST_MTIME
	        : cfg->sort == CONF_SORT_NONE ? LST_NONE : LST_NAME;
	while (q && *q && *q != '#') {
		q++;
		size_t l = strcspn(q, "&#");
		const char *eq = memchr(q, '=', l);
		size_t kl = eq ? (size_t)(eq - q) : l;
		char *v = decode(eq ? eq + 1 : q + l, eq ? l - kl - 1 : 0, &err);
		if (!v)
			return err;
#define KEY(lit) (kl == sizeof(lit) - 1 && !memcmp(q, lit, kl))
		if (KEY("format")) {
			p->fmt_given = true;
			if (!strcmp(v, "html")) p->fmt = LST_HTML;
			else if (!strcmp(v, "json")) p->fmt = LST_JSON;
			else if (!strcmp(v, "ndjson")) p->fmt = LST_NDJSON;
			else err = 400;
		} else if (KEY("sort")) {
			p->sort_given = true;
			if (!strcmp(v, "name")) p->sort = LST_NAME;
			else if (!strcmp(v, "size")) p->sort = LST_SIZE;
			else if (!strcmp(v, "mtime")) p->sort = LST_MTIME;
			else if (!strcmp(v, "none")) p->sort = LST_NONE;
			else err = 400;
		} else if (KEY("order")) {
			p->order_given = true;
			if (!strcmp(v, "asc")) p->desc = false;
			else if (!strcmp(v, "desc")) p->desc = true;
			else err = 400;
		} else if (KEY("dirs") || KEY("dirsfirst")) {
			p->dirs_given = true;
			if (!strcmp(v, "first") || !strcmp(v, "1") || !strcmp(v, "true") ||
			    !strcmp(v, "yes")) p->dirs_first = true;
			else if (!strcmp(v, "mixed") || !strcmp(v, "0") || !strcmp(v, "false") ||
			         !strcmp(v, "no")) p->dirs_first = false;
			else err = 400;
		} else if (KEY("limit")) {
			char *e;
			unsigned long long n = strtoull(v, &e, 10);
			if (!*v || *e || *v < '1' || *v > '9' || n > 1000000000ull)
				err = 400;
			else
				p->limit = n > LST_MAX_LIMIT ? LST_MAX_LIMIT : (size_t)n;
		} else if (KEY("after")) {
			free(p->after);
			p->after = v;
			v = NULL;
		}
#undef KEY
		free(v);
		if (err)
			return err;
		q += l;
	}
	/* Without an explicit order, size and time start with the largest
	 * and newest (ls -S, ls -t); names A-Z. */
	if (!p->order_given)
		p->desc = p->sort == LST_SIZE || p->sort == LST_MTIME;
	/* A cursor is a name: it only means something in name order. */
	if (p->after && (p->sort != LST_NAME || p->dirs_first))
		return 400;
	if (!p->fmt_given)
		p->fmt = negotiate(h->accept, p->fmt);
	p->gzip = gzip_ok(h->accept_encoding);
	return 0;
}

int lst_params_url(struct lst_buf *b, const struct lst_params *p,
                   enum lst_sort sort, bool desc, bool with_page,
                   const char *after, bool html)
{
	static const char *const fmts[] = { "html", "json", "ndjson" };
	static const char *const sorts[] = { "name", "size", "mtime", "none" };
	const char *amp = html ? "&amp;" : "&";
	size_t al = strlen(amp);
	int r = 0;

	if (p->fmt_given)
		r = LST_PUTS(b, "format=") || lst_put(b, fmts[p->fmt], strlen(fmts[p->fmt])) ||
		    lst_put(b, amp, al);
	r = r || LST_PUTS(b, "sort=") || lst_put(b, sorts[sort], strlen(sorts[sort])) ||
	    lst_put(b, amp, al) || LST_PUTS(b, "order=") ||
	    (desc ? LST_PUTS(b, "desc") : LST_PUTS(b, "asc"));
	if (!r && p->dirs_first)
		r = lst_put(b, amp, al) || LST_PUTS(b, "dirs=first");
	if (!r && with_page && p->limit) {
		char n[24];
		int k = snprintf(n, sizeof n, "%zu", p->limit);
		r = lst_put(b, amp, al) || LST_PUTS(b, "limit=") || lst_put(b, n, (size_t)k);
	}
	if (!r && with_page && after)
		r = lst_put(b, amp, al) || LST_PUTS(b, "after=") ||
		    lst_put_pct(b, after, strlen(after), false);
	return r ? -ENOMEM : 0;
}
