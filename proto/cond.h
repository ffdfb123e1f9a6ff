/*
 * proto/cond.h: conditional requests (RFC 9110 13.2.2). Pure, any
 * thread.
 */
#ifndef PROTO_COND_H
#define PROTO_COND_H

#include <stdbool.h>
#include <time.h>

enum proto_cond {
	PROTO_COND_PROCEED = 0,          /* serve normally (200/206) */
	PROTO_COND_NOT_MODIFIED,         /* 304 (GET/HEAD only) */
	PROTO_COND_PRECONDITION_FAILED,  /* 412 */
};

/** The request's precondition headers: NUL-terminated values as
 *  received, NULL when absent. Only read during the call. */
struct proto_cond_req {
	bool get_or_head;                /* method is GET or HEAD */
	const char *if_match;
	const char *if_none_match;
	const char *if_modified_since;
	const char *if_unmodified_since;
};

/**
 * Evaluates the preconditions against the selected representation,
 * whose strong ETag is @etag (with quotes; NULL if it has none) and
 * whose Last-Modified is @last_modified (seconds; < 0 if none), in the
 * order of RFC 9110 13.2.2:
 *  1. If-Match present: false (strong compare; "*" needs a
 *     representation; an invalid list never matches) -> 412.
 *  2. else If-Unmodified-Since present and a valid date:
 *     last_modified > date -> 412 (invalid dates are ignored, 13.1.4).
 *  3. If-None-Match present: true for any tag (weak compare) or "*"
 *     -> 304 for GET/HEAD, 412 otherwise.
 *  4. else If-Modified-Since, GET/HEAD, valid date not later than @now:
 *     last_modified <= date -> 304 (invalid dates are ignored, 13.1.3;
 *     a later one, which only a wrong clock sends, too).
 * @now is the server's current time: also the century of RFC 850 dates.
 * If-Range is separate (proto_cond_if_range), as it only decides
 * whether Range applies.
 */
enum proto_cond proto_cond_eval(const struct proto_cond_req *rq,
                                const char *etag, time_t last_modified,
                                time_t now);

/**
 * If-Range (RFC 9110 13.1.5): true when the Range header should be
 * honoured. @if_range is the header value (NULL: absent -> true). An
 * entity tag must match @etag strongly (a weak tag never does); an HTTP
 * date must equal @last_modified exactly, and only counts when
 * @last_modified is at least one second before @now (otherwise the date
 * is a weak validator: the file may change again within that second).
 * Anything else (junk, a date that does not parse) -> false, i.e.
 * serve the whole representation with 200.
 */
bool proto_cond_if_range(const char *if_range, const char *etag,
                         time_t last_modified, time_t now);

#endif
