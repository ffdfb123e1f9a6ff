#include "first.h"

#include "proto/accept.h"

#include "t/tmain.h"

START_TEST(encoding)
{
	ck_assert_int_eq(proto_accept_encoding_q(NULL, "gzip"), -1);
	ck_assert_int_eq(proto_accept_encoding_q("", "gzip"), -1);
	ck_assert_int_eq(proto_accept_encoding_q("gzip", "gzip"), 1000);
	ck_assert_int_eq(proto_accept_encoding_q("GZIP", "gzip"), 1000);
	ck_assert_int_eq(proto_accept_encoding_q("x-gzip", "gzip"), 1000);
	ck_assert_int_eq(proto_accept_encoding_q("gzip, deflate, br, zstd", "br"), 1000);
	ck_assert_int_eq(proto_accept_encoding_q("gzip, deflate, br, zstd", "zstd"), 1000);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=0.5, br;q=0.25", "br"), 250);
	ck_assert_int_eq(proto_accept_encoding_q("gzip ; q=0.5", "gzip"), 500);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;Q=0.005", "gzip"), 5);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=1.000", "gzip"), 1000);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=0", "gzip"), 0);
	ck_assert_int_eq(proto_accept_encoding_q("br", "gzip"), -1);
	ck_assert_int_eq(proto_accept_encoding_q("*", "gzip"), 1000);
	ck_assert_int_eq(proto_accept_encoding_q("*;q=0.1", "gzip"), 100);
	/* an explicit element wins over "*", in either order */
	ck_assert_int_eq(proto_accept_encoding_q("*, gzip;q=0", "gzip"), 0);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=0, *", "gzip"), 0);
	ck_assert_int_eq(proto_accept_encoding_q("*;q=0, br", "br"), 1000);
	/* "gzipx" is not "gzip"; malformed weights are q=0 */
	ck_assert_int_eq(proto_accept_encoding_q("gzipx", "gzip"), -1);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=2", "gzip"), 0);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=1.5", "gzip"), 0);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=0.0001", "gzip"), 0);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=abc", "gzip"), 0);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=-1", "gzip"), 0);
	ck_assert_int_eq(proto_accept_encoding_q("gzip;q=.5", "gzip"), 0);
	/* other parameters are skipped */
	ck_assert_int_eq(proto_accept_encoding_q("gzip;level=9;q=0.3", "gzip"), 300);
	ck_assert(proto_accepts_encoding("gzip, br", "br"));
	ck_assert(!proto_accepts_encoding("gzip;q=0", "gzip"));
	ck_assert(!proto_accepts_encoding("identity", "gzip"));
	ck_assert(!proto_accepts_encoding(NULL, "gzip"));
	ck_assert(proto_accepts_encoding(",, ,gzip,,", "gzip"));
}
END_TEST

START_TEST(media)
{
	const char *browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

	ck_assert_int_eq(proto_accept_q(browser, "text", "html"), 1000);
	ck_assert_int_eq(proto_accept_q(browser, "application", "json"), 800);
	ck_assert_int_eq(proto_accept_q(browser, "application", "xml"), 900);
	ck_assert_int_eq(proto_accept_q("text/*;q=0.3, text/html;q=0.7", "text", "html"), 700);
	ck_assert_int_eq(proto_accept_q("text/*;q=0.3, text/html;q=0.7", "text", "plain"), 300);
	ck_assert_int_eq(proto_accept_q("text/html;charset=utf-8;q=0.2", "text", "html"), 200);
	ck_assert_int_eq(proto_accept_q("image/png", "text", "html"), -1);
	ck_assert_int_eq(proto_accept_q(NULL, "text", "html"), -1);
	ck_assert_int_eq(proto_accept_q("nonsense", "text", "html"), -1);
}
END_TEST

TMAIN_TESTS("accept", encoding, media);
