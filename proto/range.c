#include "first.h"

#include "proto/range.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool ows(char c)
{
	return c == ' ' || c == '\t';
}

/* 1*DIGIT, saturating at UINT64_MAX. false if no digit. */
static bool number(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;

	*v = 0;
	while (s < end && *s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		*v = *v > (UINT64_MAX - d) / 10 ? UINT64_MAX : *v * 10 + d;
		s++;
	}
	if (s == *p)
		return false;
	*p = s;
	return true;
}

/* Adds [a, b] to the sorted set of disjoint, non-touching ranges
 * out[0..*n), merging what it overlaps or touches. false when that
 * would need more than @max entries. */
static bool add(struct proto_range *out, unsigned *n, unsigned max,
                uint64_t a, uint64_t b)
{
	unsigned i = 0, j;

	/* ranges entirely before [a, b], not touching (b < UINT64_MAX as
	 * it is below the size) */
	while (i < *n && out[i].last + 1 < a)
		i++;
	j = i;
	while (j < *n && out[j].first <= b + 1) {
		if (out[j].first < a)
			a = out[j].first;
		if (out[j].last > b)
			b = out[j].last;
		j++;
	}
	if (j == i) {           /* nothing merged: insert at i */
		if (*n >= max)
			return false;
		memmove(out + i + 1, out + i, (*n - i) * sizeof *out);
		(*n)++;
	} else if (j > i + 1) { /* out[i..j) become one */
		memmove(out + i + 1, out + j, (*n - j) * sizeof *out);
		*n -= j - i - 1;
	}
	out[i].first = a;
	out[i].last = b;
	return true;
}

enum proto_range_result proto_range_parse(const char *hdr, size_t len,
                                          uint64_t size,
                                          struct proto_range *out,
                                          unsigned max_ranges, unsigned *n)
{
	const char *p = hdr, *end = hdr + len;
	unsigned specs = 0;

	*n = 0;
	if (!max_ranges)
		return PROTO_RANGE_IGNORE;
	while (p < end && ows(*p))
		p++;
	while (end > p && ows(end[-1]))
		end--;
	if (end - p < 6 || strncasecmp(p, "bytes=", 6))
		return PROTO_RANGE_IGNORE;
	p += 6;

	while (p < end) {
		uint64_t a, b;
		bool have_a, have_b;

		if (*p == ',' || ows(*p)) {
			p++;
			continue;
		}
		have_a = number(&p, end, &a);
		if (p >= end || *p != '-')
			goto ignore;
		p++;
		have_b = number(&p, end, &b);
		if (p < end && *p != ',' && !ows(*p))
			goto ignore;
		if (!have_a && !have_b)
			goto ignore;
		specs++;
		if (have_a) {
			if (have_b && b < a)
				goto ignore;    /* invalid, 14.1.1 */
			if (a >= size)
				continue;       /* unsatisfiable, dropped */
			if (!have_b || b >= size)
				b = size - 1;
		} else {
			if (b == 0 || size == 0)
				continue;
			a = b >= size ? 0 : size - b;
			b = size - 1;
		}
		if (!add(out, n, max_ranges, a, b))
			goto ignore;
	}
	if (!specs)
		goto ignore;
	return *n ? PROTO_RANGE_OK : PROTO_RANGE_UNSATISFIABLE;
ignore:
	*n = 0;
	return PROTO_RANGE_IGNORE;
}

size_t proto_range_content_range(char *out, size_t outsz,
                                 const struct proto_range *r, uint64_t size)
{
	int k = r ? snprintf(out, outsz, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
	                     r->first, r->last, size)
	          : snprintf(out, outsz, "bytes */%" PRIu64, size);

	return k < 0 ? 0 : (size_t)k;
}

int proto_multipart_boundary(uint64_t seed, char out[PROTO_BOUNDARY_MAX])
{
	static const char set[] =
		"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	uint64_t x = seed;

	for (int i = 0; i < 32; i++) {
		/* splitmix64: any seed, even 0, gives well-mixed output */
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		out[i] = set[z % 62];
	}
	out[32] = 0;
	return 32;
}

size_t proto_multipart_part_header(char *out, size_t outsz,
                                   const char *boundary,
                                   const char *content_type,
                                   const struct proto_range *r,
                                   uint64_t size)
{
	int k = snprintf(out, outsz,
	                 "\r\n--%s\r\n%s%s%sContent-Range: bytes %" PRIu64
	                 "-%" PRIu64 "/%" PRIu64 "\r\n\r\n",
	                 boundary, content_type ? "Content-Type: " : "",
	                 content_type ? content_type : "",
	                 content_type ? "\r\n" : "", r->first, r->last, size);

	return k < 0 ? 0 : (size_t)k;
}

size_t proto_multipart_trailer(char *out, size_t outsz, const char *boundary)
{
	int k = snprintf(out, outsz, "\r\n--%s--\r\n", boundary);

	return k < 0 ? 0 : (size_t)k;
}

uint64_t proto_multipart_length(const char *boundary, const char *content_type,
                                const struct proto_range *r, unsigned n,
                                uint64_t size)
{
	uint64_t total = proto_multipart_trailer(NULL, 0, boundary);

	for (unsigned i = 0; i < n; i++)
		total += proto_multipart_part_header(NULL, 0, boundary,
		                                     content_type, &r[i], size) +
		         (r[i].last - r[i].first + 1);
	return total;
}
