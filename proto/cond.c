#include "first.h"

#include "proto/cond.h"

#include <string.h>

#include "proto/etag.h"
#include "proto/httpdate.h"

enum proto_cond proto_cond_eval(const struct proto_cond_req *rq,
                                const char *etag, time_t last_modified,
                                time_t now)
{
	time_t d;

	/* 13.2.2 step 1 and 2 */
	if (rq->if_match) {
		if (proto_etag_match(rq->if_match, strlen(rq->if_match), etag,
		                     false) != 1)
			return PROTO_COND_PRECONDITION_FAILED;
	} else if (rq->if_unmodified_since &&
	           !proto_httpdate_parse(rq->if_unmodified_since,
	                                 strlen(rq->if_unmodified_since), now,
	                                 &d)) {
		/* 13.1.4: without a modification date the condition is
		 * false. */
		if (last_modified < 0 || last_modified > d)
			return PROTO_COND_PRECONDITION_FAILED;
	}

	/* step 3 */
	if (rq->if_none_match) {
		if (proto_etag_match(rq->if_none_match,
		                     strlen(rq->if_none_match), etag, true) == 1)
			return rq->get_or_head ? PROTO_COND_NOT_MODIFIED
			                       : PROTO_COND_PRECONDITION_FAILED;
	} else if (rq->get_or_head && rq->if_modified_since && last_modified >= 0 &&
	           !proto_httpdate_parse(rq->if_modified_since,
	                                 strlen(rq->if_modified_since), now,
	                                 &d)) {
		/* step 4. A date later than now can only come from a wrong
		 * clock, and would turn every later change into a 304: it
		 * is ignored (as RFC 2616 14.25 had it). */
		if (last_modified <= d && d <= now)
			return PROTO_COND_NOT_MODIFIED;
	}
	return PROTO_COND_PROCEED;
}

bool proto_cond_if_range(const char *if_range, const char *etag,
                         time_t last_modified, time_t now)
{
	size_t len;
	const char *p = if_range;
	time_t d;

	if (!if_range)
		return true;
	while (*p == ' ' || *p == '\t')
		p++;
	len = strlen(p);
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	if (*p == '"' || (p[0] == 'W' && p[1] == '/')) {
		/* Exactly one entity-tag, compared strongly (a weak one never
		 * matches); a list or "*" is not valid here. A strong tag
		 * holds no '"' between its quotes, so: */
		if (*p == 'W' || !etag || len < 2 || p[len - 1] != '"' ||
		    memchr(p + 1, '"', len - 2))
			return false;
		return proto_etag_match(p, len, etag, false) == 1;
	}
	if (last_modified < 0 || proto_httpdate_parse(p, len, now, &d))
		return false;
	return d == last_modified && now - last_modified >= 1;
}
