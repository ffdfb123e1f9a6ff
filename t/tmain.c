/* main() of every Check test program: see t/tmain.h. */
#include "first.h"

#include <stdlib.h>
#include <string.h>

#include "t/tmain.h"

Suite *tmain_one_tcase(const char *name, const TTest *const *tests, size_t n)
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create("all");
	for (size_t i = 0; i < n; i++)
		tcase_add_test(tc, tests[i]);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

bool tmain_quick(void)
{
	const char *q = getenv("FSD_QUICK");
	return q && *q && strcmp(q, "0") != 0;
}

int main(void)
{
	int rc = tmain.before ? tmain.before() : 0;
	if (rc != 0)
		return rc;
	SRunner *sr = srunner_create(tmain.suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (tmain.after)
		tmain.after();
	return failed ? 1 : 0;
}
