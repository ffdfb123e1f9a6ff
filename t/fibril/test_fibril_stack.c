/* t/fibril/test_fibril_stack.c: fibril stacks: many fibrils, deep
 * recursion, and the guard page catching an overflow. */
#include "first.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fibril/fibril.h"
#include "t/tmain.h"

static void teardown(void)
{
	fibril_sched_fini();
}

/* ---- 100,000 fibrils ---- */

enum { MANY = 100000 };
static unsigned long ran;

static void many_body(void *arg)
{
	fibril_park();
	ran += (unsigned long)arg;
}

START_TEST(test_100k_created_and_finished)
{
	static fibril_t *f[MANY];
	unsigned long want = 0;

	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ran = 0;
	/* all alive at once: each parks on its own stack */
	for (unsigned long i = 0; i < MANY; i++) {
		ck_assert_int_eq(fibril_create(&f[i], many_body, (void *)i, NULL), 0);
		want += i;
	}
	ck_assert_int_eq(fibril_sched_run(), MANY);
	ck_assert_uint_eq(fibril_sched_count(), MANY);
	ck_assert_uint_eq(ran, 0);
	for (unsigned long i = 0; i < MANY; i++)
		fibril_wake(f[i]);
	ck_assert_int_eq(fibril_sched_run(), MANY);
	ck_assert_uint_eq(ran, want);
	ck_assert_uint_eq(fibril_sched_count(), 0);
	for (unsigned long i = 0; i < MANY; i++)
		ck_assert_int_eq(fibril_join(f[i]), 0);
	/* and again, detached, one after the other through the pool */
	for (unsigned long i = 0; i < MANY; i++) {
		ck_assert_int_eq(fibril_create(NULL, many_body, (void *)1, NULL), 0);
		ck_assert_int_eq(fibril_sched_run(), 1);
	}
	ck_assert_uint_eq(fibril_sched_count(), MANY);
}
END_TEST

/* ---- recursion near the limit ---- */

static char *stack_top;
static size_t deepest;

/* Each level keeps 512 bytes live; stops when the next level could come
 * within @margin of the end of the stack. */
static __attribute__((noinline)) unsigned recurse(size_t limit, unsigned depth)
{
	volatile char buf[512];
	char *here = __builtin_frame_address(0);
	size_t used = (size_t)(stack_top - here);

	memset((char *)buf, (int)depth, sizeof(buf));
	if (used > deepest)
		deepest = used;
	unsigned r = depth;
	if (used < limit)
		r = recurse(limit, depth + 1);
	return r + buf[depth % sizeof(buf)] - (char)depth;
}

static void deep_body(void *arg)
{
	size_t limit = (size_t)arg;
	stack_top = __builtin_frame_address(0);
	unsigned d = recurse(limit, 0);
	ck_assert_uint_gt(d, 10);
	fibril_yield();  /* and the deep stack survives a switch */
}

START_TEST(test_recursion_near_limit)
{
	struct fibril_sched_opts o = { .stack_size = 256u << 10 };
	fibril_t *f;
	/* frames of up to 8 KiB (ASan's redzones included) fit in the margin */
	size_t limit = o.stack_size - (16u << 10);

	ck_assert_int_eq(fibril_sched_init(&o), 0);
	deepest = 0;
	ck_assert_int_eq(fibril_create(&f, deep_body, (void *)limit, "deep"), 0);
	ck_assert_int_eq(fibril_join(f), 0);
	ck_assert_uint_ge(deepest, limit);
	/* the pooled stack is reused, deep pages and all */
	deepest = 0;
	ck_assert_int_eq(fibril_create(&f, deep_body, (void *)limit, "deep2"), 0);
	ck_assert_int_eq(fibril_join(f), 0);
	ck_assert_uint_ge(deepest, limit);
}
END_TEST

/* ---- the guard page ---- */

static volatile unsigned runaway_stop = ~0u;  /* never reached */

static __attribute__((noinline)) unsigned runaway(unsigned depth)
{
	volatile char buf[256];
	buf[0] = (char)depth;
	if (depth == runaway_stop)
		return 0;
	return runaway(depth + 1) + buf[0];
}

static void overflow_body(void *arg)
{
	runaway(0);
}

START_TEST(test_guard_catches_overflow)
{
	int pfd[2];
	pid_t pid;
	int status;
	char out[4096];
	size_t n = 0;
	ssize_t r;

	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		struct fibril_sched_opts o = { .stack_size = 64u << 10 };
		if (fibril_sched_init(&o) != 0)
			_exit(3);
		fibril_start(NULL, overflow_body, NULL, "runaway-request");
		_exit(4);
	}
	close(pfd[1]);
	while (n < sizeof(out) - 1 &&
	       (r = read(pfd[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(pfd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status), "child status 0x%x, stderr: %s",
	              status, out);
	ck_assert_int_eq(WTERMSIG(status), SIGSEGV);
	ck_assert_msg(strstr(out, "stack overflow in fibril \"runaway-request\""),
	              "stderr: %s", out);
}
END_TEST

static Suite *stack_suite(void)
{
	Suite *s = suite_create("fibril_stack");
	TCase *tc = tcase_create("stack");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 600);  /* 100k page faults: slow under ASan/valgrind */
	tcase_add_test(tc, test_100k_created_and_finished);
	tcase_add_test(tc, test_recursion_near_limit);
	tcase_add_test(tc, test_guard_catches_overflow);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = stack_suite);
