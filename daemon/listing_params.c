#include "first.h"

/*
 * What a listing request asks for: the query (proto_listq_parse():
 * ?format= &sort= &order= &dirsfirst= &limit= &after=, plus ?dirs=first)
 * and, when the query names no format, the Accept header, with the
 * configured default_format winning ties (curl's "*" + "/" + "*"); gzip
 * from Accept-Encoding. q-values per RFC 9110 12.4.2 / 12.5.3.
 */

#include "daemon/listing_int.h"
#include "proto/accept.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
		q = proto_accept_q(accept, "text", "html");
		q2 = proto_accept_q(accept, "application", "xhtml+xml");
		return q > q2 ? q : q2;
	}
}

static enum proto_list_format negotiate(const char *accept,
                                        enum proto_list_format dflt)
{
	enum proto_list_format order[3] = { dflt, PROTO_FMT_HTML, PROTO_FMT_JSON };
	enum proto_list_format pick = dflt;
	int best = 0;

	if (!accept || !*accept)
		return dflt;
	/* The default first, so that it wins ties (curl's "*" "/" "*"). */
	if (dflt == PROTO_FMT_HTML)
		order[1] = PROTO_FMT_NDJSON;
	else if (dflt == PROTO_FMT_JSON)
		order[2] = PROTO_FMT_NDJSON;
	for (int i = 0; i < 3; i++) {
		int q = fmt_q(accept, order[i]);
		if (q > best) {
			best = q;
			pick = order[i];
		}
	}
	return pick;
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
	/* ?dirs=first, as fileserverd(8) documents it, besides dirsfirst=1 */
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
	p->gzip = proto_accepts_encoding(h->accept_encoding, "gzip");
	return 0;
}
