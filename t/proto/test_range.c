#include "first.h"

#include "proto/range.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/tmain.h"

static struct proto_range r[16];
static unsigned n;

static enum proto_range_result P(const char *h, uint64_t size, unsigned max)
{
	n = 99;
	return proto_range_parse(h, strlen(h), size, r, max, &n);
}

/* expects OK with the ranges given as "a-b a-b ..." */
static void ok(const char *h, uint64_t size, unsigned max, const char *want)
{
	char got[512] = "";
	size_t o = 0;
	enum proto_range_result res = P(h, size, max);

	ck_assert_msg(res == PROTO_RANGE_OK, "'%s' size %llu: result %d", h,
	              (unsigned long long)size, res);
	for (unsigned i = 0; i < n; i++)
		o += (size_t)snprintf(got + o, sizeof got - o, "%s%llu-%llu",
		                      i ? " " : "", (unsigned long long)r[i].first,
		                      (unsigned long long)r[i].last);
	ck_assert_str_eq(got, want);
}

static void ign(const char *h, uint64_t size)
{
	enum proto_range_result res = P(h, size, 16);

	ck_assert_msg(res == PROTO_RANGE_IGNORE, "'%s': result %d", h, res);
	ck_assert_uint_eq(n, 0);
}

static void unsat(const char *h, uint64_t size)
{
	enum proto_range_result res = P(h, size, 16);

	ck_assert_msg(res == PROTO_RANGE_UNSATISFIABLE, "'%s': result %d", h, res);
	ck_assert_uint_eq(n, 0);
}

START_TEST(single)
{
	ok("bytes=0-99", 1000, 4, "0-99");
	ok("bytes=100-", 1000, 4, "100-999");
	ok("bytes=-100", 1000, 4, "900-999");
	ok("bytes=-5000", 1000, 4, "0-999");
	ok("bytes=990-5000", 1000, 4, "990-999");
	ok("bytes=999-999", 1000, 4, "999-999");
	ok("bytes=0-0", 1, 4, "0-0");
	ok("Bytes=0-0", 1, 4, "0-0");
	ok("BYTES=0-0", 1, 4, "0-0");
	ok("  bytes=0-1  ", 10, 4, "0-1");
	/* near the end of a file larger than 2 GiB */
	ok("bytes=3221225470-", 3221225472ULL, 4, "3221225470-3221225471");
	ok("bytes=-2", 3221225472ULL, 4, "3221225470-3221225471");
}
END_TEST

START_TEST(multi_and_coalesce)
{
	ok("bytes=0-9,20-29", 100, 4, "0-9 20-29");
	ok("bytes=20-29, 0-9", 100, 4, "0-9 20-29");
	ok("bytes=0-9,10-19", 100, 4, "0-19");             /* adjacent */
	ok("bytes=10-19,0-9", 100, 4, "0-19");             /* adjacent, reversed */
	ok("bytes=20-29,0-9,10-19", 100, 4, "0-29");
	ok("bytes=0-9,5-19", 100, 4, "0-19");              /* overlapping */
	ok("bytes=0-9,20-29,5-25", 100, 4, "0-29");        /* bridges two */
	ok("bytes=50-,-10", 100, 4, "50-99");
	ok("bytes=0-0,2-2,4-4,6-6", 100, 4, "0-0 2-2 4-4 6-6");
	ok("bytes=0-0,0-0,0-0,0-0,0-0,0-0", 100, 1, "0-0");
	/* whitespace and empty list elements (RFC 9110 5.6.1) */
	ok("bytes= 0-1 ,\t2-3 , , ", 100, 4, "0-3");
	ok("bytes=,0-1", 100, 4, "0-1");
	/* unsatisfiable members are dropped, the rest served */
	ok("bytes=500-600,0-1", 100, 4, "0-1");
	ok("bytes=-0,0-1", 100, 4, "0-1");
}
END_TEST

START_TEST(invalid_is_ignored)
{
	ign("", 100);
	ign("bytes", 100);
	ign("bytes=", 100);
	ign("bytes= ", 100);
	ign("bytes=,", 100);
	ign("bytes=5-1", 100);                 /* last < first: invalid */
	ign("bytes=0-1,5-1", 100);
	ign("bytes=-", 100);
	ign("bytes=a-b", 100);
	ign("bytes=1", 100);
	ign("bytes=1-2-3", 100);
	ign("bytes=--1", 100);
	ign("bytes=1--2", 100);
	ign("bytes=+1-2", 100);
	ign("bytes=0x10-20", 100);
	ign("bytes = 0-1", 100);
	ign("bytes=0 -1", 100);
	ign("bytes=0- 1", 100);
	ign("bytes=0-1;x", 100);
	ign("items=0-1", 100);
	ign("bytesx=0-1", 100);
	ign("bytes=0-1\r\n", 100);
	ign("bytes=0-1,junk", 100);
}
END_TEST

START_TEST(unsatisfiable)
{
	unsat("bytes=-0", 100);
	unsat("bytes=100-", 100);
	unsat("bytes=100-200", 100);
	unsat("bytes=0-0", 0);                 /* empty file */
	unsat("bytes=-1", 0);
	unsat("bytes=-0,100-,200-300", 100);
	unsat("bytes=99999999999999999999999999-", 100);
}
END_TEST

START_TEST(overflow_saturates)
{
	ok("bytes=0-99999999999999999999999999", 100, 4, "0-99");
	ok("bytes=-99999999999999999999999999", 100, 4, "0-99");
	ok("bytes=18446744073709551614-", UINT64_MAX, 4,
	   "18446744073709551614-18446744073709551614");
	ok("bytes=0-0,18446744073709551613-99999999999999999999999", UINT64_MAX, 4,
	   "0-0 18446744073709551613-18446744073709551614");
	unsat("bytes=18446744073709551615-18446744073709551615", UINT64_MAX);
}
END_TEST

START_TEST(cap)
{
	/* over the cap after coalescing: ignored, serve 200 */
	ck_assert_int_eq(P("bytes=0-0,2-2,4-4", 100, 2), PROTO_RANGE_IGNORE);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(P("bytes=0-0,2-2", 100, 2), PROTO_RANGE_OK);
	ck_assert_int_eq(P("bytes=0-0", 100, 0), PROTO_RANGE_IGNORE);
	/* a huge list: bounded work and memory, ignored */
	size_t len = 200000;
	char *h = malloc(len + 16), *p = h;
	p += sprintf(p, "bytes=");
	for (unsigned i = 0; (size_t)(p - h) < len - 16; i += 2)
		p += sprintf(p, "%u-%u,", i, i);
	*p = 0;
	ck_assert_int_eq(P(h, 1000000, 16), PROTO_RANGE_IGNORE);
	/* the same ranges all overlapping: one range */
	p = h + sprintf(h, "bytes=");
	while ((size_t)(p - h) < len - 16)
		p += sprintf(p, "0-5,");
	*p = 0;
	ok(h, 100, 16, "0-5");
	free(h);
}
END_TEST

START_TEST(multipart)
{
	char b1[PROTO_BOUNDARY_MAX], b2[PROTO_BOUNDARY_MAX], b3[PROTO_BOUNDARY_MAX];
	char buf[512];
	struct proto_range rr[2] = { { 0, 4 }, { 10, 19 } };
	const char *ct = "text/plain; charset=utf-8";
	size_t k;
	uint64_t total, manual = 0;

	ck_assert_int_eq(proto_multipart_boundary(0, b1), 32);
	proto_multipart_boundary(0, b2);
	proto_multipart_boundary(1, b3);
	ck_assert_str_eq(b1, b2);
	ck_assert_str_ne(b1, b3);
	ck_assert_uint_eq(strlen(b1), 32);
	ck_assert_uint_eq(strspn(b1, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), 32);

	k = proto_multipart_part_header(buf, sizeof buf, "BND", ct, &rr[0], 100);
	ck_assert_str_eq(buf, "\r\n--BND\r\nContent-Type: text/plain; charset=utf-8\r\n"
	                      "Content-Range: bytes 0-4/100\r\n\r\n");
	ck_assert_uint_eq(k, strlen(buf));
	manual += k + 5;
	k = proto_multipart_part_header(buf, sizeof buf, "BND", ct, &rr[1], 100);
	manual += k + 10;
	k = proto_multipart_trailer(buf, sizeof buf, "BND");
	ck_assert_str_eq(buf, "\r\n--BND--\r\n");
	manual += k;
	total = proto_multipart_length("BND", ct, rr, 2, 100);
	ck_assert_uint_eq(total, manual);
	k = proto_multipart_part_header(buf, sizeof buf, "BND", NULL, &rr[1], 100);
	ck_assert_str_eq(buf, "\r\n--BND\r\nContent-Range: bytes 10-19/100\r\n\r\n");
	k = proto_range_content_range(buf, sizeof buf, &rr[1], 100);
	ck_assert_str_eq(buf, "bytes 10-19/100");
	ck_assert_uint_eq(k, 15);
	k = proto_range_content_range(buf, sizeof buf, NULL, 3221225472ULL);
	ck_assert_str_eq(buf, "bytes */3221225472");
	/* snprintf semantics when short */
	k = proto_multipart_part_header(buf, 4, "BND", ct, &rr[1], 100);
	ck_assert_uint_gt(k, 4);
	ck_assert_uint_eq(strlen(buf), 3);
}
END_TEST

TMAIN_TESTS("range", single, multi_and_coalesce, invalid_is_ignored, unsatisfiable,
            overflow_saturates, cap, multipart);
