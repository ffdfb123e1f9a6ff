#include "first.h"

#include "proto/errpage.h"

#include <stdio.h>
#include <string.h>

#include "t/tmain.h"

START_TEST(pages)
{
	static const unsigned st[] = { 400, 403, 404, 405, 412, 413, 414, 416,
		417, 431, 500, 501, 503, 505 };

	for (size_t i = 0; i < sizeof st / sizeof *st; i++) {
		size_t len = 0;
		const char *b = proto_errpage(st[i], &len);
		char want[128];

		ck_assert_uint_eq(len, strlen(b));
		snprintf(want, sizeof want, "<title>%u %s</title>", st[i],
		         proto_status_reason(st[i]));
		ck_assert_msg(strstr(b, want), "%u: %s lacks %s", st[i], b, want);
		ck_assert_msg(!strncmp(b, "<!DOCTYPE html>", 15), "%u", st[i]);
		ck_assert_msg(strstr(b, "</html>\n") == b + len - 8, "%u", st[i]);
		/* the same static storage each time */
		ck_assert_ptr_eq(proto_errpage(st[i], &len), b);
	}
}
END_TEST

START_TEST(reasons)
{
	ck_assert_str_eq(proto_status_reason(404), "Not Found");
	ck_assert_str_eq(proto_status_reason(416), "Range Not Satisfiable");
	ck_assert_str_eq(proto_status_reason(431), "Request Header Fields Too Large");
	ck_assert_str_eq(proto_status_reason(304), "Not Modified");
	ck_assert_str_eq(proto_status_reason(206), "Partial Content");
	ck_assert_str_eq(proto_status_reason(299), "Unknown");
}
END_TEST

START_TEST(generic)
{
	size_t len;
	const char *b = proto_errpage(418, &len);

	ck_assert_ptr_nonnull(strstr(b, "4xx Client Error"));
	b = proto_errpage(599, &len);
	ck_assert_ptr_nonnull(strstr(b, "5xx Server Error"));
	ck_assert_uint_eq(len, strlen(b));
}
END_TEST

TMAIN_TESTS("errpage", pages, reasons, generic);
