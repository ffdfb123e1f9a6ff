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
	/* ?dirs=first, as fileserverd(8) documents it, besides dirsfirst=1;
	 * any other value, or one that cannot be read, is a bad one */
	if (q) {
		char v[8];
		r = proto_query_get(q, ql, "dirs", v, sizeof v);
		if (r >= 0 && !strcmp(v, "first"))
			p->q.dirs_first = true;
		else if (r != -ENOENT)
			return 400;
	}
	if (p->q.limit > LST_MAX_LIMIT)
		p->q.limit = LST_MAX_LIMIT;
	p->sort = p->q.sort == PROTO_SORT_DEFAULT ? cfg->sort : p->q.sort;
	/* A cursor is a name: it only means something in name order
	 * (lookup.h: LK_SORT_NAME without LK_SCAN_DIRS_FIRST), and a page
	 * without a way to the next one would look like the whole. */
	if ((p->q.after || p->q.limit) &&
	    (p->sort != PROTO_SORT_NAME || p->q.dirs_first))
		return 400;
	p->fmt_given = p->q.format != PROTO_FMT_DEFAULT;
	if (p->fmt_given)
		p->fmt = p->q.format;
	else
		p->fmt = proto_listing_negotiate(h->accept, cfg->format);
	p->gzip = proto_accepts_encoding(h->accept_encoding, "gzip");
	return 0;
}
