/*
 * proto/url.h: the request target, from the wire to a safe path, and
 * names back to links. Pure functions: no I/O, no allocation, no global
 * state; any thread.
 *
 * Error convention: functions return >= 0 or -errno. For the target
 * parser every negative result means "answer 400", except -ENAMETOOLONG
 * ("answer 414").
 */
#ifndef PROTO_URL_H
#define PROTO_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/listing_opts.h"

/** A decoded request target. All pointers point into the caller's
 *  buffer given to proto_url_parse(); they live as long as it does. */
struct proto_target {
	/* Decoded, dot-segment-free path: starts with '/', never contains
	 * "//", a "." or ".." segment, NUL or an encoded '/'; keeps a
	 * trailing '/' when the request had one (RFC 3986 5.2.4 keeps it
	 * too for a final "." or ".."). NUL-terminated. */
	char *path;
	size_t pathlen;
	/* True when path ends with '/' (including the root "/"): the
	 * daemon redirects a directory requested without it (301). */
	bool trailing_slash;
	/* The raw query (after '?', before any '#'), still percent-encoded,
	 * NUL-terminated; NULL when the target had no '?'. Feed it to
	 * proto_query_get() / proto_listq_parse(). */
	char *query;
	size_t querylen;
};

/**
 * Parses a request target as received (origin-form "/a%20b?x=1", or
 * absolute-form "http://host/a" whose scheme and authority are skipped;
 * RFC 9112 3.2). Percent-decodes the path, then removes dot segments
 * (RFC 3986 5.2.4) and collapses repeated '/'. Decoding happens first,
 * so "%2e%2e" is a ".." segment like any other.
 *
 * Rejected (-EINVAL): anything not starting with '/' (after the absolute
 * form's authority), "%00", "%2F"/"%2f" (an encoded '/' would make a
 * segment boundary the client did not send), '%' not followed by two
 * hex digits, raw control bytes (< 0x20, 0x7f) and raw space anywhere
 * in the target (query and fragment too). Raw
 * bytes >= 0x80 are accepted as they are (lenient, as nginx).
 * Rejected (-EPERM): a ".." that would climb above the root ("/../x",
 * "/a/../../b"); nginx answers these with 400 too, and the lookup engine
 * would refuse them anyway (RESOLVE_BENEATH).
 * -ENAMETOOLONG: @bufsz is too small for the decoded path and the query
 * with their NULs (len + 2 always suffices; the caller's buffer size is
 * its limit on the target: answer 414).
 *
 * @target need not be NUL-terminated; @len is its length. @buf receives
 * path and query (both NUL-terminated). On error *out is unspecified.
 */
int proto_url_parse(const char *target, size_t len, char *buf, size_t bufsz,
                    struct proto_target *out);

/** The path relative to the root, for lookups beneath it: @path
 *  without its leading '/' ("/a/b/" gives "a/b/", the trailing '/'
 *  stays), or "." for "/". Points into @path. */
const char *proto_url_relpath(const char *path);

/**
 * Finds query parameter @name (exact, case-sensitive) in a raw query
 * string (as proto_target.query) and writes its value, percent-decoded
 * with '+' meaning space (application/x-www-form-urlencoded), into @out
 * with a terminating NUL. The first occurrence wins. A parameter
 * without '=' has the empty value.
 * Returns the decoded length, -ENOENT when absent, -EINVAL for a bad
 * escape or "%00" in the value, -ENAMETOOLONG when @outsz is too small.
 */
int proto_query_get(const char *query, size_t qlen, const char *name,
                    char *out, size_t outsz);

/** The listing parameters of a query. */
struct proto_listq {
	enum proto_list_format format;
	enum proto_list_sort sort;
	bool desc;              /* order=desc */
	bool dirs_first;        /* dirsfirst=1 (or "true"/"yes") */
	unsigned long long limit;  /* limit=N, 0 when absent */
	const char *after;      /* decoded after=NAME, in @buf, or NULL */
	size_t afterlen;        /* may contain any byte but NUL */
};

/**
 * Parses ?format=html|json|ndjson&sort=name|size|mtime|none
 * &order=asc|desc&limit=N&after=NAME&dirsfirst=0|1. Unknown parameters
 * are ignored; a known parameter with a bad value is -EINVAL (400).
 * limit must be 1..10^9 decimal. @query may be NULL (all defaults).
 * The cursor is decoded into @buf (needs qlen + 1 bytes; else
 * -ENAMETOOLONG). Returns 0.
 */
int proto_listq_parse(const char *query, size_t qlen, char *buf, size_t bufsz,
                      struct proto_listq *q);

/** Flags for proto_url_encode(). */
#define PROTO_ENC_KEEP_SLASH 1u  /* leave '/' as is (encoding a path) */

/**
 * Percent-encodes @len bytes of @s for use in a URL path segment or
 * query value (an href in a listing, a Location, a Link header).
 * Left as is: ALPHA DIGIT "-._~" and "!$()*,;=@" (and '/' with
 * PROTO_ENC_KEEP_SLASH). Everything else is %XX (uppercase hex),
 * including '?', '#', '%', '&', '+', ':', space, quotes, '<', '>', '\\',
 * control bytes and every byte >= 0x80. ':' is encoded so that a
 * relative href "a:b" cannot read as a scheme.
 * Writes at most @outsz bytes including a NUL (when @outsz > 0) and
 * returns the full encoded length (like snprintf): the output is
 * complete iff the result < @outsz. At most 3 * len.
 */
size_t proto_url_encode(const char *s, size_t len, char *out, size_t outsz,
                        unsigned flags);

/** The length of the longest prefix of @s (@len bytes) that
 *  proto_url_encode() leaves as is without flags. */
size_t proto_url_plain_span(const char *s, size_t len);

#endif
