/* The one main() of the Check test programs, in t/tmain.c (linked in as
 * t/libtmain.la). A test program only describes its suite:
 *
 *   TMAIN_TESTS("url", normalise, dots_encoded);   one TCase, 120 s each
 *   TMAIN_SUITE(.suite = suite);                    its own Suite
 *   TMAIN_SUITE(.suite = suite, .before = mount, .after = unmount);
 *
 * main() runs before() once (0 goes on, 77 skips the program, anything
 * else is its exit code), then the suite as Check does by default (each
 * test forked unless CK_FORK=no; CK_RUN_SUITE/CK_RUN_CASE/CK_VERBOSITY
 * work too), then after(), and exits 0 when every test passed, 1
 * otherwise.
 *
 * Fixtures that are slow because they are big (100,000 entries) ask
 * tmain_quick(): under FSD_QUICK=1 (make check-quick) they run smaller. */
#ifndef T_TMAIN_H
#define T_TMAIN_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>

struct tmain {
	Suite *(*suite)(void);
	/* Once before the suite; on a non-zero return it cleans up what it
	 * did itself (after() is not called). */
	int (*before)(void);
	/* Once after the suite, whatever its outcome. */
	void (*after)(void);
};

/* Defined by each test program, through TMAIN_SUITE or TMAIN_TESTS. */
extern const struct tmain tmain;

#define TMAIN_SUITE(...) const struct tmain tmain = { __VA_ARGS__ }

#define TMAIN_TESTS(name, ...)                                              \
	static Suite *tmain_tests_suite(void)                               \
	{                                                                   \
		const TTest *tests[] = { __VA_ARGS__ };                     \
		return tmain_one_tcase(name, tests,                         \
				       sizeof tests / sizeof *tests);       \
	}                                                                   \
	TMAIN_SUITE(.suite = tmain_tests_suite)

/* A suite @name of one TCase "all" holding @tests, each with a 120 s
 * timeout (sanitizer builds on a loaded machine are slow). */
Suite *tmain_one_tcase(const char *name, const TTest *const *tests, size_t n);

/* FSD_QUICK is set and not "0": a quick run (make check-quick). */
bool tmain_quick(void);

/* @full normally, @quick in a quick run. */
#define TMAIN_SIZE(full, quick) (tmain_quick() ? (quick) : (full))

#endif
