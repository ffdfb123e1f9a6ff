/* proto/etag.c and proto/cond.c */
#include "first.h"

#include "proto/cond.h"
#include "proto/etag.h"

#include <errno.h>
#include <string.h>

#include "t/tmain.h"

#define NOW ((time_t)1796256000)
#define LM ((time_t)784111777)                  /* Sun, 06 Nov 1994 08:49:37 GMT */
#define LM_S "Sun, 06 Nov 1994 08:49:37 GMT"
#define BEFORE_S "Sun, 06 Nov 1994 08:49:36 GMT"
#define AFTER_S "Sun, 06 Nov 1994 08:49:38 GMT"
#define ET "\"abc-1-2\""

static int M(const char *list, const char *etag, bool weak)
{
	return proto_etag_match(list, strlen(list), etag, weak);
}

START_TEST(make)
{
	char b[PROTO_ETAG_MAX];

	ck_assert_int_eq(proto_etag_make(PROTO_ETAG_INODE, 0x1234, 827, 1700000000, 123456789, NULL, b),
	                 (int)strlen(b));
	ck_assert_str_eq(b, "\"1234-33b-17979cfe3d85cd15\"");
	proto_etag_make(PROTO_ETAG_INODE, UINT64_MAX, UINT64_MAX, 0, 0, "-br", b);
	ck_assert_str_eq(b, "\"ffffffffffffffff-ffffffffffffffff-0-br\"");
	/* nanoseconds distinguish two writes in one second */
	char c[PROTO_ETAG_MAX];
	proto_etag_make(PROTO_ETAG_INODE, 1, 1, 5, 1, NULL, b);
	proto_etag_make(PROTO_ETAG_INODE, 1, 1, 5, 2, NULL, c);
	ck_assert_str_ne(b, c);
	ck_assert_int_eq(proto_etag_make(PROTO_ETAG_INODE, 1, 1, 1, 1, "a\"b", b), -EINVAL);
	ck_assert_int_eq(proto_etag_make(PROTO_ETAG_INODE, 1, 1, 1, 1, "0123456789abcdef", b), -EINVAL);
	/* the longest one fits */
	ck_assert_int_gt(proto_etag_make(PROTO_ETAG_INODE, UINT64_MAX, UINT64_MAX, -1, 999999999,
	                                 "0123456789abcde", b), 0);
	ck_assert_uint_lt(strlen(b), PROTO_ETAG_MAX);
}
END_TEST

/* nginx's "%xT-%xO": the same bytes for any copy with the same mtime
 * (seconds) and size, whatever its inode or nanoseconds */
START_TEST(make_mtime_size)
{
	char b[PROTO_ETAG_MAX], c[PROTO_ETAG_MAX];

	ck_assert_int_eq(proto_etag_make(PROTO_ETAG_MTIME_SIZE, 0x1234, 827,
	                                 1700000000, 123456789, NULL, b),
	                 (int)strlen(b));
	ck_assert_str_eq(b, "\"6553f100-33b\"");
	proto_etag_make(PROTO_ETAG_MTIME_SIZE, 0x9999, 827, 1700000000, 0, NULL, c);
	ck_assert_str_eq(b, c);
	/* size and seconds still tell versions apart */
	proto_etag_make(PROTO_ETAG_MTIME_SIZE, 0x1234, 828, 1700000000, 0, NULL, c);
	ck_assert_str_eq(c, "\"6553f100-33c\"");
	proto_etag_make(PROTO_ETAG_MTIME_SIZE, 0x1234, 827, 1700000001, 0, NULL, c);
	ck_assert_str_eq(c, "\"6553f101-33b\"");
	/* a sidecar's suffix, and the widest values */
	proto_etag_make(PROTO_ETAG_MTIME_SIZE, 1, 5, 16, 0, "-zstd", b);
	ck_assert_str_eq(b, "\"10-5-zstd\"");
	ck_assert_int_gt(proto_etag_make(PROTO_ETAG_MTIME_SIZE, 1, UINT64_MAX, -1,
	                                 999999999, "0123456789abcde", b), 0);
	ck_assert_str_eq(b, "\"ffffffffffffffff-ffffffffffffffff0123456789abcde\"");
	ck_assert_int_eq(proto_etag_make(PROTO_ETAG_MTIME_SIZE, 1, 1, 1, 1, "a b", b),
	                 -EINVAL);
	ck_assert_int_eq(proto_etag_make((enum proto_etag_kind)7, 1, 1, 1, 1, NULL, b),
	                 -EINVAL);
	/* such a tag matches as any other */
	proto_etag_make(PROTO_ETAG_MTIME_SIZE, 1, 827, 1700000000, 0, NULL, b);
	ck_assert_int_eq(M("W/\"6553f100-33b\"", b, true), 1);
	ck_assert_int_eq(M("\"6553f100-33b\"", b, false), 1);
}
END_TEST

START_TEST(match_lists)
{
	ck_assert_int_eq(M(ET, ET, false), 1);
	ck_assert_int_eq(M(" " ET " ", ET, false), 1);
	ck_assert_int_eq(M("\"x\", " ET, ET, false), 1);
	ck_assert_int_eq(M("\"x\",\t," ET ",", ET, false), 1);
	ck_assert_int_eq(M("\"x\" , \"y\"", ET, false), 0);
	ck_assert_int_eq(M("*", ET, false), 1);
	ck_assert_int_eq(M(" * ", ET, true), 1);
	ck_assert_int_eq(M("*", NULL, true), 0);
	/* weak tags: weak comparison only */
	ck_assert_int_eq(M("W/" ET, ET, false), 0);
	ck_assert_int_eq(M("W/" ET, ET, true), 1);
	ck_assert_int_eq(M("\"x\", W/" ET, ET, true), 1);
	ck_assert_int_eq(M(ET, "W/" ET, false), 0);
	ck_assert_int_eq(M(ET, "W/" ET, true), 1);
	/* opaque parts compare exactly */
	ck_assert_int_eq(M("\"ABC-1-2\"", ET, true), 0);
	ck_assert_int_eq(M("\"abc-1-2 \"", ET, true), -EINVAL);
	/* syntax errors */
	ck_assert_int_eq(M("", ET, true), -EINVAL);
	ck_assert_int_eq(M(",", ET, true), -EINVAL);
	ck_assert_int_eq(M("abc-1-2", ET, true), -EINVAL);
	ck_assert_int_eq(M("\"abc-1-2", ET, true), -EINVAL);
	ck_assert_int_eq(M(ET "x", ET, true), -EINVAL);
	ck_assert_int_eq(M("w/" ET, ET, true), -EINVAL);
	ck_assert_int_eq(M("W/ " ET, ET, true), -EINVAL);
	ck_assert_int_eq(M("*, " ET, ET, true), -EINVAL);
	ck_assert_int_eq(M(ET ", *", ET, true), -EINVAL);
	ck_assert_int_eq(M("\"a\x01\"", ET, true), -EINVAL);
	/* an error after a match is still an error */
	ck_assert_int_eq(M(ET ", junk", ET, true), -EINVAL);
	/* len bounds the read */
	ck_assert_int_eq(proto_etag_match(ET "garbage", strlen(ET), ET, false), 1);
}
END_TEST

static enum proto_cond E(bool gh, const char *im, const char *inm,
                         const char *ims, const char *ius)
{
	struct proto_cond_req rq = { gh, im, inm, ims, ius };

	return proto_cond_eval(&rq, ET, LM, NOW);
}

#define PROCEED PROTO_COND_PROCEED
#define N304 PROTO_COND_NOT_MODIFIED
#define N412 PROTO_COND_PRECONDITION_FAILED

START_TEST(eval_single)
{
	ck_assert_int_eq(E(true, NULL, NULL, NULL, NULL), PROCEED);
	/* If-Match */
	ck_assert_int_eq(E(true, ET, NULL, NULL, NULL), PROCEED);
	ck_assert_int_eq(E(true, "*", NULL, NULL, NULL), PROCEED);
	ck_assert_int_eq(E(true, "\"x\"", NULL, NULL, NULL), N412);
	ck_assert_int_eq(E(true, "W/" ET, NULL, NULL, NULL), N412);
	ck_assert_int_eq(E(true, "junk", NULL, NULL, NULL), N412);
	/* If-Unmodified-Since */
	ck_assert_int_eq(E(true, NULL, NULL, NULL, LM_S), PROCEED);
	ck_assert_int_eq(E(true, NULL, NULL, NULL, AFTER_S), PROCEED);
	ck_assert_int_eq(E(true, NULL, NULL, NULL, BEFORE_S), N412);
	ck_assert_int_eq(E(true, NULL, NULL, NULL, "yesterday"), PROCEED);
	/* If-None-Match */
	ck_assert_int_eq(E(true, NULL, ET, NULL, NULL), N304);
	ck_assert_int_eq(E(true, NULL, "W/" ET, NULL, NULL), N304);
	ck_assert_int_eq(E(true, NULL, "\"x\", W/" ET, NULL, NULL), N304);
	ck_assert_int_eq(E(true, NULL, "*", NULL, NULL), N304);
	ck_assert_int_eq(E(true, NULL, "\"x\"", NULL, NULL), PROCEED);
	ck_assert_int_eq(E(true, NULL, "garbage", NULL, NULL), PROCEED);
	ck_assert_int_eq(E(false, NULL, ET, NULL, NULL), N412);
	/* If-Modified-Since */
	ck_assert_int_eq(E(true, NULL, NULL, LM_S, NULL), N304);
	ck_assert_int_eq(E(true, NULL, NULL, AFTER_S, NULL), N304);
	ck_assert_int_eq(E(true, NULL, NULL, BEFORE_S, NULL), PROCEED);
	ck_assert_int_eq(E(true, NULL, NULL, "Sunday, 06-Nov-94 08:49:37 GMT", NULL), N304);
	ck_assert_int_eq(E(true, NULL, NULL, "Sun Nov  6 08:49:37 1994", NULL), N304);
	ck_assert_int_eq(E(true, NULL, NULL, LM_S " junk", NULL), PROCEED);
	ck_assert_int_eq(E(false, NULL, NULL, LM_S, NULL), PROCEED);
	/* a date later than now: a client's wrong clock, ignored */
	ck_assert_int_eq(E(true, NULL, NULL, "Mon, 01 Jan 2035 00:00:00 GMT", NULL), PROCEED);
}
END_TEST

START_TEST(eval_precedence)
{
	/* If-Match beats If-Unmodified-Since (which is then not evaluated) */
	ck_assert_int_eq(E(true, ET, NULL, NULL, BEFORE_S), PROCEED);
	ck_assert_int_eq(E(true, "\"x\"", NULL, NULL, AFTER_S), N412);
	/* 412 beats 304 */
	ck_assert_int_eq(E(true, "\"x\"", ET, NULL, NULL), N412);
	ck_assert_int_eq(E(true, NULL, ET, NULL, BEFORE_S), N412);
	/* If-None-Match present: If-Modified-Since ignored either way */
	ck_assert_int_eq(E(true, NULL, "\"x\"", LM_S, NULL), PROCEED);
	ck_assert_int_eq(E(true, NULL, ET, BEFORE_S, NULL), N304);
	/* all four, all passing, then a changed representation */
	ck_assert_int_eq(E(true, ET, "\"old\"", BEFORE_S, AFTER_S), PROCEED);
	/* no validators on the resource */
	struct proto_cond_req rq = { true, "*", NULL, NULL, NULL };
	ck_assert_int_eq(proto_cond_eval(&rq, NULL, -1, NOW), N412);
	rq = (struct proto_cond_req){ true, NULL, NULL, LM_S, NULL };
	ck_assert_int_eq(proto_cond_eval(&rq, NULL, -1, NOW), PROCEED);
	rq = (struct proto_cond_req){ true, NULL, NULL, NULL, LM_S };
	ck_assert_int_eq(proto_cond_eval(&rq, NULL, -1, NOW), N412);
}
END_TEST

START_TEST(if_range)
{
	ck_assert(proto_cond_if_range(NULL, ET, LM, NOW));
	ck_assert(proto_cond_if_range(ET, ET, LM, NOW));
	ck_assert(proto_cond_if_range(" " ET " ", ET, LM, NOW));
	ck_assert(!proto_cond_if_range("\"x\"", ET, LM, NOW));
	ck_assert(!proto_cond_if_range("W/" ET, ET, LM, NOW));
	ck_assert(!proto_cond_if_range(ET ", " ET, ET, LM, NOW));
	ck_assert(!proto_cond_if_range("*", ET, LM, NOW));
	ck_assert(!proto_cond_if_range(ET, NULL, LM, NOW));
	ck_assert(proto_cond_if_range(LM_S, ET, LM, NOW));
	ck_assert(!proto_cond_if_range(AFTER_S, ET, LM, NOW));
	ck_assert(!proto_cond_if_range(BEFORE_S, ET, LM, NOW));
	ck_assert(!proto_cond_if_range("junk", ET, LM, NOW));
	ck_assert(!proto_cond_if_range("", ET, LM, NOW));
	/* a date equal to an mtime in the current second is weak */
	ck_assert(!proto_cond_if_range(LM_S, ET, LM, LM));
	ck_assert(proto_cond_if_range(LM_S, ET, LM, LM + 1));
	ck_assert(!proto_cond_if_range(LM_S, ET, -1, NOW));
}
END_TEST

TMAIN_TESTS("cond", make, make_mtime_size, match_lists, eval_single, eval_precedence, if_range);
