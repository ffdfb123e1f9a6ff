#include "first.h"

/*
 * What a listing request asks for: the query (proto_listq_parse():
 * ?format= &sort= &order= &dirsfirst= &limit= &after=, plus ?dirs=first)
 * and, when the query names no format, the Accept header, with the
 * configured default_format winning ties (curl's "*" + "/" + "*"); gzip
 * from Accept-Encoding. q-values per RFC 9110 12.4.2 / 12.5.3.
 */

#include "daemon/listing_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	int q[4];        /* per proto_list_format: best specific match, or -1 */
	int any_text, any_app, any;
};

static void accept_el(void *arg, const char *n, size_t l, int q)
{
	struct accept_q *a = arg;
	int f = -1;

	if (tok_is(n, l, "text/html") || tok_is(n, l, "application/xhtml+xml"))
		f = PROTO_FMT_HTML;
	else if (tok_is(n, l, "application/json"))
		f = PROTO_FMT_JSON;
	else if (tok_is(n, l, "application/x-ndjson") || tok_is(n, l, "application/ndjson") ||
	         tok_is(n, l, "application/jsonl") || tok_is(n, l, "application/json-seq"))
		f = PROTO_FMT_NDJSON;
	else if (tok_is(n, l, "text/*"))
		a->any_text = q;
	else if (tok_is(n, l, "application/*"))
		a->any_app = q;
	else if (tok_is(n, l, "*/*"))
		a->any = q;
	if (f >= 0 && q > a->q[f])
		a->q[f] = q;
}

static enum proto_list_format negotiate(const char *accept, enum proto_list_format dflt)
{
	struct accept_q a = { { -1, -1, -1, -1 }, -1, -1, -1 };
	int best = -1;
	enum proto_list_format pick = dflt;

	if (!accept || !*accept)
		return dflt;
	each_q(accept, accept_el, &a);
	/* The default first so that it wins ties ("*" + "*" from curl). */
	enum proto_list_format order[3] = { dflt, PROTO_FMT_HTML, PROTO_FMT_JSON };
	if (dflt != PROTO_FMT_NDJSON) {
		order[1] = dflt == PROTO_FMT_HTML ? PROTO_FMT_JSON : PROTO_FMT_HTML;
		order[2] = PROTO_FMT_NDJSON;
	} else {
		order[1] = PROTO_FMT_HTML;
		order[2] = PROTO_FMT_JSON;
	}
	for (int i = 0; i < 3; i++) {
		enum proto_list_format f = order[i];
		int q = a.q[f];
		if (q < 0)
			q = f == PROTO_FMT_HTML ? a.any_text : a.any_app;
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
	free(p->qbuf);
	p->qbuf = NULL;
	p->q.after = NULL;
}

int lst_params_parse(struct lst_params *p, const char *uri,
                     const struct fsd_hdrs *h, const struct conf_listing *cfg)
{
	const char *q = uri ? strchr(uri, '?') : NULL;
	size_t ql = 0;
	int r;

	if (q) {
		q++;
		ql = strcspn(q, "#");
	}
	p->qbuf = malloc(ql + 1);
	if (!p->qbuf)
		return 500;
	r = proto_listq_parse(q, ql, p->qbuf, ql + 1, &p->q);
	if (r < 0)
		return 400;
	/* ?dirs=first, the spelling of the issue, besides dirsfirst=1 */
	if (q) {
		char v[8];
		r = proto_query_get(q, ql, "dirs", v, sizeof v);
		if (r >= 0 && !strcmp(v, "first"))
			p->q.dirs_first = true;
		else if (r >= 0 && strcmp(v, "mixed"))
			return 400;
	}
	if (p->q.limit > LST_MAX_LIMIT)
		p->q.limit = LST_MAX_LIMIT;
	p->sort = p->q.sort;
	if (p->sort == PROTO_SORT_DEFAULT)
		p->sort = cfg->sort == CONF_SORT_SIZE ? PROTO_SORT_SIZE
		        : cfg->sort == CONF_SORT_MTIME ? PROTO_SORT_MTIME
		        : cfg->sort == CONF_SORT_NONE ? PROTO_SORT_NONE : PROTO_SORT_NAME;
	/* A cursor is a name: it only means something in name order
	 * (lookup.h: LK_SORT_NAME without LK_SCAN_DIRS_FIRST). */
	if (p->q.after && (p->sort != PROTO_SORT_NAME || p->q.dirs_first))
		return 400;
	p->fmt_given = p->q.format != PROTO_FMT_DEFAULT;
	if (p->fmt_given)
		p->fmt = p->q.format;
	else
		p->fmt = negotiate(h->accept, cfg->format == CONF_FMT_JSON ? PROTO_FMT_JSON
		                   : cfg->format == CONF_FMT_NDJSON ? PROTO_FMT_NDJSON
		                   : PROTO_FMT_HTML);
	p->gzip = gzip_ok(h->accept_encoding);
	return 0;
}
