/* Shared main() for the proto Check tests: one suite, exit 0/1. */
#ifndef T_PROTO_TMAIN_H
#define T_PROTO_TMAIN_H
#include <check.h>
#include <stdlib.h>

#define TMAIN(name, ...)                                                 \
	int main(void)                                                   \
	{                                                                \
		Suite *s = suite_create(name);                           \
		TCase *tc = tcase_create("all");                         \
		const TTest *tests[] = { __VA_ARGS__ };                        \
		SRunner *sr;                                             \
		int failed;                                              \
		for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) \
			tcase_add_test(tc, tests[i]);                    \
		/* sanitizer builds on a loaded machine are slow */       \
		tcase_set_timeout(tc, 120);                              \
		suite_add_tcase(s, tc);                                  \
		sr = srunner_create(s);                                  \
		srunner_run_all(sr, CK_NORMAL);                          \
		failed = srunner_ntests_failed(sr);                      \
		srunner_free(sr);                                        \
		return failed ? 1 : 0;                                   \
	}
#endif
