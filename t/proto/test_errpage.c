#include "first.h"

#include "proto/errpage.h"

#include <stdio.h>
#include <string.h>

#include "t/tmain.h"

START_TEST(pages)
{
	/* RFC 9110 15 */
	static const struct { unsigned st; const char *reason; } st[] = {
		{ 301, "Moved Permanently" },
		{ 400, "Bad Request" }, { 403, "Forbidden" }, { 404, "Not Found" },
		{ 405, "Method Not Allowed" }, { 412, "Precondition Failed" },
		{ 413, "Content Too Large" }, { 414, "URI Too Long" },
		{ 416, "Range Not Satisfiable" }, { 417, "Expectation Failed" },
		{ 431, "Request Header Fields Too Large" },
		{ 500, "Internal Server Error" }, { 501, "Not Implemented" },
		{ 503, "Service Unavailable" }, { 505, "HTTP Version Not Supported" },
	};

	for (size_t i = 0; i < sizeof st / sizeof *st; i++) {
		size_t len = 0;
		const char *b = proto_errpage(st[i].st, &len);
		char want[128];

		ck_assert_uint_eq(len, strlen(b));
		snprintf(want, sizeof want, "<title>%u %s</title>", st[i].st,
		         st[i].reason);
		ck_assert_msg(strstr(b, want), "%u: %s lacks %s", st[i].st, b, want);
		ck_assert_msg(!strncmp(b, "<!DOCTYPE html>", 15), "%u", st[i].st);
		ck_assert_msg(strstr(b, "</html>\n") == b + len - 8, "%u", st[i].st);
		/* the same static storage each time */
		ck_assert_ptr_eq(proto_errpage(st[i].st, &len), b);
	}
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

TMAIN_TESTS("errpage", pages, generic);
