/* t/fibril/test_fibril.c: scheduler semantics of libfibril. */
#include "first.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "fibril/fibril.h"

static void setup(void)
{
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
}

static void teardown(void)
{
	fibril_sched_fini();
}

/* ---- ordering and fairness ---- */

static char order[64];
static int norder;

static void yielder(void *arg)
{
	char c = (char)(long)arg;
	for (int i = 0; i < 3; i++) {
		order[norder++] = c;
		fibril_yield();
	}
}

START_TEST(test_order_fifo_and_fair)
{
	fibril_t *f[3];
	norder = 0;
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(fibril_create(&f[i], yielder, (void *)(long)('a' + i), NULL), 0);
	ck_assert_uint_eq(fibril_sched_count(), 3);
	/* nothing runs before the scheduler does */
	ck_assert_int_eq(norder, 0);
	ck_assert_int_eq(fibril_sched_timeout_ms(), 0);
	/* a yielder runs once per fibril_sched_run() call, in FIFO order */
	ck_assert_int_eq(fibril_sched_run(), 3);
	order[norder] = 0;
	ck_assert_str_eq(order, "abc");
	ck_assert_int_eq(fibril_sched_timeout_ms(), 0);
	ck_assert_int_eq(fibril_sched_run(), 3);
	ck_assert_int_eq(fibril_sched_run(), 3);
	ck_assert_int_eq(fibril_sched_run(), 3); /* each returns from yield, exits */
	order[norder] = 0;
	ck_assert_str_eq(order, "abcabcabc");
	ck_assert_uint_eq(fibril_sched_count(), 0);
	ck_assert_int_eq(fibril_sched_timeout_ms(), -1);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(fibril_join(f[i]), 0);
}
END_TEST

static void appender(void *arg)
{
	order[norder++] = (char)(long)arg;
}

START_TEST(test_create_inside_runs_same_pass)
{
	norder = 0;
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(fibril_create(NULL, appender, (void *)(long)('0' + i), NULL), 0);
	ck_assert_int_eq(fibril_sched_run(), 5);
	order[norder] = 0;
	ck_assert_str_eq(order, "01234");
	ck_assert_uint_eq(fibril_sched_count(), 0);
}
END_TEST

/* ---- start: runs at once, returns on park ---- */

static int started_steps;

static void start_body(void *arg)
{
	started_steps = 1;
	fibril_park();
	started_steps = 2;
}

START_TEST(test_start_runs_immediately)
{
	fibril_t *f;
	started_steps = 0;
	ck_assert_int_eq(fibril_start(&f, start_body, NULL, "req"), 0);
	ck_assert_int_eq(started_steps, 1);
	ck_assert_str_eq(fibril_name(f), "req");
	ck_assert_ptr_null(fibril_self());
	ck_assert_int_eq(fibril_sched_timeout_ms(), -1);
	/* wake of a parked one from the scheduler's context */
	fibril_wake(f);
	ck_assert_int_eq(fibril_sched_timeout_ms(), 0);
	ck_assert_int_eq(fibril_sched_run(), 1);
	ck_assert_int_eq(started_steps, 2);
	ck_assert_int_eq(fibril_join(f), 0);
}
END_TEST

/* ---- park/wake ---- */

static fibril_t *sleeper;
static int sleeper_state;

static void wake_before_park(void *arg)
{
	fibril_wake(fibril_self());   /* pending wake-up */
	fibril_park();                /* returns at once */
	sleeper_state = 1;
}

START_TEST(test_wake_before_park_not_lost)
{
	fibril_t *f;
	sleeper_state = 0;
	ck_assert_int_eq(fibril_create(&f, wake_before_park, NULL, NULL), 0);
	ck_assert_int_eq(fibril_sched_run(), 1);
	ck_assert_int_eq(sleeper_state, 1);
	ck_assert_int_eq(fibril_join(f), 0);
}
END_TEST

static void parker(void *arg)
{
	sleeper_state = 1;
	fibril_park();
	sleeper_state = 2;
}

static void waker(void *arg)
{
	ck_assert_int_eq(sleeper_state, 1);
	fibril_wake(sleeper);
	ck_assert_int_eq(sleeper_state, 1);  /* wake never switches */
}

START_TEST(test_wake_from_fibril)
{
	fibril_t *w;
	sleeper_state = 0;
	ck_assert_int_eq(fibril_create(&sleeper, parker, NULL, NULL), 0);
	ck_assert_int_eq(fibril_create(&w, waker, NULL, NULL), 0);
	ck_assert_int_eq(fibril_sched_run(), 3);
	ck_assert_int_eq(sleeper_state, 2);
	ck_assert_int_eq(fibril_join(sleeper), 0);
	ck_assert_int_eq(fibril_join(w), 0);
}
END_TEST

/* ---- join ---- */

static void noop(void *arg)
{
	(void)arg;
}

START_TEST(test_join_exited)
{
	fibril_t *f;
	ck_assert_int_eq(fibril_create(&f, noop, NULL, NULL), 0);
	ck_assert_int_eq(fibril_sched_run(), 1);
	ck_assert_uint_eq(fibril_sched_count(), 0);
	ck_assert_int_eq(fibril_join(f), 0);
}
END_TEST

START_TEST(test_join_from_context_runs)
{
	fibril_t *f;
	ck_assert_int_eq(fibril_create(&f, noop, NULL, NULL), 0);
	ck_assert_int_eq(fibril_join(f), 0);
	ck_assert_uint_eq(fibril_sched_count(), 0);
}
END_TEST

START_TEST(test_join_deadlock)
{
	fibril_t *f;
	ck_assert_int_eq(fibril_start(&f, parker, NULL, NULL), 0);
	ck_assert_int_eq(fibril_join(f), -EDEADLK);
	fibril_wake(f);
	ck_assert_int_eq(fibril_join(f), 0);
}
END_TEST

static fibril_t *joinee;
static int joiner_saw;

static void exiter(void *arg)
{
	fibril_yield();
	fibril_exit();
	ck_abort_msg("fibril_exit returned");
}

static void joiner_body(void *arg)
{
	ck_assert_int_eq(fibril_join(fibril_self()), -EINVAL);
	ck_assert_int_eq(fibril_join(joinee), 0);
	joiner_saw = 1;
}

START_TEST(test_join_from_fibril)
{
	fibril_t *j;
	joiner_saw = 0;
	ck_assert_int_eq(fibril_create(&joinee, exiter, NULL, NULL), 0);
	ck_assert_int_eq(fibril_create(&j, joiner_body, NULL, NULL), 0);
	while (fibril_sched_count())
		fibril_sched_run();
	ck_assert_int_eq(joiner_saw, 1);
	ck_assert_int_eq(fibril_join(j), 0);
}
END_TEST

START_TEST(test_join_detached_einval)
{
	fibril_t *f;
	ck_assert_int_eq(fibril_create(&f, parker, NULL, NULL), 0);
	fibril_detach(f);
	ck_assert_int_eq(fibril_join(f), -EINVAL);
	fibril_sched_run();
	fibril_wake(f);
	fibril_sched_run();
	ck_assert_uint_eq(fibril_sched_count(), 0);
}
END_TEST

START_TEST(test_init_twice_ebusy)
{
	ck_assert_int_eq(fibril_sched_init(NULL), -EBUSY);
}
END_TEST

/* ---- slots ---- */

START_TEST(test_slots)
{
	fibril_t *f;
	ck_assert_int_eq(fibril_create(&f, noop, NULL, NULL), 0);
	ck_assert_ptr_null(*fibril_slot(f, FIBRIL_SLOT_ASYNC));
	*fibril_slot(f, FIBRIL_SLOT_USER) = f;
	ck_assert_ptr_eq(*fibril_slot(f, FIBRIL_SLOT_USER), f);
	ck_assert_ptr_null(fibril_slot(f, FIBRIL_NSLOTS));
	ck_assert_int_eq(fibril_join(f), 0);
}
END_TEST

/* ---- abandoned at fini ---- */

START_TEST(test_fini_abandons)
{
	fibril_t *f;
	ck_assert_int_eq(fibril_start(&f, parker, NULL, "abandoned"), 0);
	ck_assert_int_eq(fibril_create(NULL, noop, NULL, NULL), 0);
	ck_assert_uint_eq(fibril_sched_count(), 2);
	/* teardown frees both */
}
END_TEST

Suite *fibril_suite(void);
Suite *fibril_suite(void)
{
	Suite *s = suite_create("fibril");
	TCase *tc = tcase_create("sched");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_order_fifo_and_fair);
	tcase_add_test(tc, test_create_inside_runs_same_pass);
	tcase_add_test(tc, test_start_runs_immediately);
	tcase_add_test(tc, test_wake_before_park_not_lost);
	tcase_add_test(tc, test_wake_from_fibril);
	tcase_add_test(tc, test_join_exited);
	tcase_add_test(tc, test_join_from_context_runs);
	tcase_add_test(tc, test_join_deadlock);
	tcase_add_test(tc, test_join_from_fibril);
	tcase_add_test(tc, test_join_detached_einval);
	tcase_add_test(tc, test_init_twice_ebusy);
	tcase_add_test(tc, test_slots);
	tcase_add_test(tc, test_fini_abandons);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fibril_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
