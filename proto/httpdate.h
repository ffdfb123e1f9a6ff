/*
 * proto/httpdate.h: HTTP dates (RFC 9110 5.6.7). Pure, any thread,
 * independent of the locale and TZ.
 */
#ifndef PROTO_HTTPDATE_H
#define PROTO_HTTPDATE_H

#include <stddef.h>
#include <time.h>

/* "Sun, 06 Nov 1994 08:49:37 GMT" is 29 bytes; plus the NUL. */
#define PROTO_HTTPDATE_LEN 30

/**
 * Formats @t (seconds since the epoch, UTC) as an IMF-fixdate into @out
 * with a NUL. Returns 29, or -EOVERFLOW when the year is outside
 * 0..9999 (out then holds "").
 */
int proto_httpdate_format(time_t t, char out[PROTO_HTTPDATE_LEN]);

/**
 * Parses an HTTP date in any of the three forms a recipient must accept:
 *   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
 *   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"
 *   asctime      "Sun Nov  6 08:49:37 1994"
 * Exact syntax (names case-sensitive as in the grammar, fixed digit
 * counts, single spaces); optional whitespace around the whole value is
 * allowed; anything else, including trailing junk, an impossible date
 * (Feb 30, hour 24) or a weekday name that is not one, is -EINVAL. The
 * weekday is not checked against the date (RFC 9110 does not require
 * it, and clients get it wrong). Second 60 (leap second) reads as 59.
 * @now decides the century of an RFC 850 two-digit year: a date more
 * than 50 years after @now is taken as the previous century (RFC 9110
 * 5.6.7). @s need not be NUL-terminated. Returns 0 and sets *out.
 */
int proto_httpdate_parse(const char *s, size_t len, time_t now, time_t *out);

#endif
