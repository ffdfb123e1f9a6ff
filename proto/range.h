/*
 * proto/range.h: byte ranges (RFC 9110 14) and multipart/byteranges
 * framing (RFC 9110 14.6). Pure, any thread, no allocation.
 */
#ifndef PROTO_RANGE_H
#define PROTO_RANGE_H

#include <stddef.h>
#include <stdint.h>

/** One resolved range: bytes first..last inclusive, last < size. */
struct proto_range {
	uint64_t first;
	uint64_t last;
};

enum proto_range_result {
	/* No usable Range: serve the whole representation with 200.
	 * Covers: invalid syntax (incl. "5-1"), a unit other than bytes,
	 * and more ranges than the cap after coalescing (RFC 9110 14.2: a
	 * server MAY ignore a Range header; ignoring it, as Apache does
	 * beyond MaxRanges, sends no more than one copy of the file, while
	 * honouring thousands of tiny ranges would be an amplifier). */
	PROTO_RANGE_IGNORE = 0,
	/* *n ranges in out[]: 206; one range -> single part with
	 * Content-Range, more -> multipart/byteranges. */
	PROTO_RANGE_OK,
	/* Valid syntax but no range overlaps the representation (e.g.
	 * "bytes=-0", first-pos >= size, any range on an empty file): 416
	 * with "Content-Range: bytes * /size" (no space). */
	PROTO_RANGE_UNSATISFIABLE,
};

/**
 * Parses a Range header value (@len bytes, need not be NUL-terminated)
 * such as "bytes=0-99, 200-, -500" and resolves it against @size:
 * suffix ranges count from the end, last-pos is clamped to size - 1,
 * unsatisfiable specs are dropped (14.1.2), and the rest are sorted and
 * coalesced when they overlap or touch (14.2 allows coalescing
 * regardless of order). Numbers that overflow 64 bits saturate, which
 * gives the right meaning (a huge first-pos is unsatisfiable, a huge
 * last-pos or suffix means "to the end"). The unit is matched
 * case-insensitively; whitespace is allowed around list elements (and
 * empty elements are skipped, 5.6.1) but not around '=' or '-'.
 *
 * @out has room for @max_ranges entries (the cap, >= 1); *n receives
 * the count on PROTO_RANGE_OK (0 otherwise). Work is O(len * max_ranges).
 */
enum proto_range_result proto_range_parse(const char *hdr, size_t len,
                                          uint64_t size,
                                          struct proto_range *out,
                                          unsigned max_ranges, unsigned *n);

/**
 * Formats a Content-Range value (snprintf semantics): "bytes F-L/SIZE"
 * for a 206, or "bytes * /SIZE" (no space) when @r is NULL, for a 416
 * (RFC 9110 14.4).
 */
size_t proto_range_content_range(char *out, size_t outsz,
                                 const struct proto_range *r, uint64_t size);

/* Room for a boundary from proto_multipart_boundary(), with NUL. */
#define PROTO_BOUNDARY_MAX 40

/**
 * Writes a multipart boundary derived from @seed (the caller supplies
 * the entropy: e.g. a counter mixed with the start time; a boundary only
 * needs to be unlikely to occur in the file, RFC 2046 5.1.1). 32
 * characters from [0-9a-zA-Z], NUL-terminated. Returns its length.
 */
int proto_multipart_boundary(uint64_t seed, char out[PROTO_BOUNDARY_MAX]);

/**
 * Formats the header of one part into @out (snprintf semantics: returns
 * the full length; complete iff < @outsz):
 *   "\r\n--BOUNDARY\r\nContent-Type: CT\r\nContent-Range: bytes F-L/SIZE\r\n\r\n"
 * Every part header starts with CRLF (before the first one it forms an
 * empty preamble, which RFC 2046 allows). @content_type may be NULL
 * (the line is then left out).
 */
size_t proto_multipart_part_header(char *out, size_t outsz,
                                   const char *boundary,
                                   const char *content_type,
                                   const struct proto_range *r,
                                   uint64_t size);

/** Formats the closing delimiter "\r\n--BOUNDARY--\r\n" (snprintf
 *  semantics). */
size_t proto_multipart_trailer(char *out, size_t outsz, const char *boundary);

/**
 * The exact body length of the multipart/byteranges response made of
 * the part headers above, the parts' bytes and the trailer, for
 * Content-Length. The Content-Type of the response itself is
 * "multipart/byteranges; boundary=BOUNDARY".
 */
uint64_t proto_multipart_length(const char *boundary, const char *content_type,
                                const struct proto_range *r, unsigned n,
                                uint64_t size);

#endif
