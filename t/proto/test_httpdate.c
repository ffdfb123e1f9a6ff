#include "first.h"

#include "proto/httpdate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "t/tmain.h"

#define NOW ((time_t)1796256000)        /* 2026-12-03 */

static time_t P(const char *s)
{
	time_t t = -12345;
	int r = proto_httpdate_parse(s, strlen(s), NOW, &t);

	ck_assert_msg(r == 0, "'%s' rejected: %d", s, r);
	return t;
}

static void bad(const char *s)
{
	time_t t;
	int r = proto_httpdate_parse(s, strlen(s), NOW, &t);

	ck_assert_msg(r == -EINVAL, "'%s' accepted (%lld)", s, (long long)t);
}

START_TEST(format)
{
	char b[PROTO_HTTPDATE_LEN];

	ck_assert_int_eq(proto_httpdate_format(784111777, b), 29);
	ck_assert_str_eq(b, "Sun, 06 Nov 1994 08:49:37 GMT");
	proto_httpdate_format(0, b);
	ck_assert_str_eq(b, "Thu, 01 Jan 1970 00:00:00 GMT");
	proto_httpdate_format(951782400, b);       /* leap day 2000 */
	ck_assert_str_eq(b, "Tue, 29 Feb 2000 00:00:00 GMT");
	proto_httpdate_format(-1, b);
	ck_assert_str_eq(b, "Wed, 31 Dec 1969 23:59:59 GMT");
	proto_httpdate_format(253402300799LL, b);
	ck_assert_str_eq(b, "Fri, 31 Dec 9999 23:59:59 GMT");
	ck_assert_int_eq(proto_httpdate_format(253402300800LL, b), -EOVERFLOW);
	ck_assert_str_eq(b, "");
}
END_TEST

START_TEST(agrees_with_libc)
{
	/* every ~11 days over 1970..2100, against gmtime_r + strftime in C */
	for (time_t t = 0; t < 4102444800LL; t += 987654) {
		char a[PROTO_HTTPDATE_LEN], c[64];
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(c, sizeof c, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		proto_httpdate_format(t, a);
		ck_assert_str_eq(a, c);
		ck_assert_int_eq(P(a), t);
	}
}
END_TEST

START_TEST(three_forms)
{
	ck_assert_int_eq(P("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
	ck_assert_int_eq(P("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
	ck_assert_int_eq(P("Sun Nov  6 08:49:37 1994"), 784111777);
	ck_assert_int_eq(P("Sun Nov 16 08:49:37 1994"), 784111777 + 10 * 86400);
	ck_assert_int_eq(P("  Sun, 06 Nov 1994 08:49:37 GMT\t"), 784111777);
	/* weekday not checked against the date */
	ck_assert_int_eq(P("Mon, 06 Nov 1994 08:49:37 GMT"), 784111777);
	/* leap second reads as :59 */
	ck_assert_int_eq(P("Sat, 31 Dec 2016 23:59:60 GMT"), 1483228799);
	ck_assert_int_eq(P("Tue, 29 Feb 2000 00:00:00 GMT"), 951782400);
}
END_TEST

START_TEST(rfc850_century)
{
	/* now is 2026: two-digit years up to 2076 are this century */
	ck_assert_int_eq(P("Thursday, 01-Jan-70 00:00:00 GMT"), 3155760000LL);
	ck_assert_int_eq(P("Saturday, 01-Jan-77 00:00:00 GMT"), 220924800);
	ck_assert_int_eq(P("Sunday, 01-Jan-27 00:00:00 GMT"), 1798761600);
	ck_assert_int_eq(P("Wednesday, 01-Jan-00 00:00:00 GMT"), 946684800);
}
END_TEST

START_TEST(garbage)
{
	static const char *const junk[] = {
		"", " ", "x", "0", "784111777",
		"Sun, 06 Nov 1994 08:49:37 GMT junk",
		"Sun, 06 Nov 1994 08:49:37 GMTx",
		"Sun, 06 Nov 1994 08:49:37 UTC",
		"Sun, 06 Nov 1994 08:49:37",
		"Sun, 6 Nov 1994 08:49:37 GMT",
		"Sun,  06 Nov 1994 08:49:37 GMT",
		"Sun, 06 nov 1994 08:49:37 GMT",
		"sun, 06 Nov 1994 08:49:37 GMT",
		"Sun 06 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 94 08:49:37 GMT",
		"Sun, 06 Nov 1994 8:49:37 GMT",
		"Sun, 06 Nov 1994 08:49 GMT",
		"Sun, 06 Nov 1994 24:00:00 GMT",
		"Sun, 06 Nov 1994 08:60:00 GMT",
		"Sun, 06 Nov 1994 08:49:61 GMT",
		"Sun, 00 Nov 1994 08:49:37 GMT",
		"Sun, 31 Nov 1994 08:49:37 GMT",
		"Sun, 29 Feb 1900 08:49:37 GMT",
		"Sun, 30 Feb 2000 08:49:37 GMT",
		"Xyz, 06 Nov 1994 08:49:37 GMT",
		"Sun, 06 Foo 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 08:49:37 GMT\r\n",
		"Sun, 06 Nov +994 08:49:37 GMT",
		"Sun, 06 Nov 1994 08:49:-7 GMT",
		"Sunday, 06-Nov-1994 08:49:37 GMT",
		"Sun, 06-Nov-94 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37",
		"Funday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov 6 08:49:37 1994",
		"Sun Nov  6 08:49:37 94",
		"Sun Nov  6 08:49:37 1994 GMT",
		"Sun Nov 06  08:49:37 1994",
	};
	for (size_t i = 0; i < sizeof junk / sizeof *junk; i++)
		bad(junk[i]);
	/* an embedded NUL within len is junk too */
	time_t t;
	ck_assert_int_eq(proto_httpdate_parse("Sun, 06 Nov 1994 08:49:37 GMT\0x", 31,
	                                      NOW, &t), -EINVAL);
	/* len bounds the read */
	ck_assert_int_eq(proto_httpdate_parse("Sun, 06 Nov 1994 08:49:37 GMTxyz", 29,
	                                      NOW, &t), 0);
	ck_assert_int_eq(t, 784111777);
}
END_TEST

TMAIN_TESTS("httpdate", format, agrees_with_libc, three_forms, rfc850_century, garbage);
