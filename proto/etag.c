#include "first.h"

#include "proto/etag.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* etagc = %x21 / %x23-7E / obs-text (RFC 9110 8.8.3) */
static bool etagc(unsigned char c)
{
	return c == 0x21 || (c >= 0x23 && c != 0x7f);
}

int proto_etag_make(enum proto_etag_kind kind, uint64_t ino, uint64_t size,
                    int64_t mtime_sec, uint32_t mtime_nsec, const char *suffix,
                    char out[PROTO_ETAG_MAX])
{
	uint64_t ns = (uint64_t)mtime_sec * 1000000000u + mtime_nsec;
	size_t sl = suffix ? strlen(suffix) : 0;

	if (sl > 15)
		return -EINVAL;
	for (size_t i = 0; i < sl; i++)
		if (!etagc((unsigned char)suffix[i]))
			return -EINVAL;
	switch (kind) {
	case PROTO_ETAG_INODE:
		return snprintf(out, PROTO_ETAG_MAX, "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "%s\"",
		                ino, size, ns, sl ? suffix : "");
	case PROTO_ETAG_MTIME_SIZE:
		return snprintf(out, PROTO_ETAG_MAX, "\"%" PRIx64 "-%" PRIx64 "%s\"",
		                (uint64_t)mtime_sec, size, sl ? suffix : "");
	}
	return -EINVAL;
}

/* Splits an entity-tag at *p: sets the opaque-tag (with its quotes) and
 * weakness; advances *p. false when it is not one. */
static bool take_tag(const char **p, const char *end, const char **op,
                     size_t *oplen, bool *weak)
{
	const char *s = *p;

	*weak = false;
	if (end - s >= 2 && s[0] == 'W' && s[1] == '/') {
		*weak = true;
		s += 2;
	}
	if (s >= end || *s != '"')
		return false;
	*op = s++;
	while (s < end && *s != '"') {
		if (!etagc((unsigned char)*s))
			return false;
		s++;
	}
	if (s >= end)
		return false;
	s++;
	*oplen = (size_t)(s - *op);
	*p = s;
	return true;
}

int proto_etag_match(const char *list, size_t len, const char *etag, bool weak)
{
	const char *p = list, *end = list + len, *eop = NULL;
	size_t eoplen = 0;
	bool eweak = false, match = false, any = false;

	if (etag) {
		const char *e = etag;

		if (!take_tag(&e, etag + strlen(etag), &eop, &eoplen, &eweak))
			etag = NULL;    /* ours is malformed: nothing matches */
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end - p == 1 && *p == '*')
		return etag ? 1 : 0;

	while (p < end) {
		const char *op;
		size_t oplen;
		bool w;

		/* 1#element with OWS and empty elements (RFC 9110 5.6.1) */
		if (*p == ',' || *p == ' ' || *p == '\t') {
			p++;
			continue;
		}
		if (!take_tag(&p, end, &op, &oplen, &w))
			return -EINVAL;
		any = true;
		if (p < end && *p != ',' && *p != ' ' && *p != '\t')
			return -EINVAL;
		if (etag && oplen == eoplen && !memcmp(op, eop, oplen) &&
		    (weak || (!w && !eweak)))
			match = true;
	}
	if (!any)
		return -EINVAL;
	return match;
}
