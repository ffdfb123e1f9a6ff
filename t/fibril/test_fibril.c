/* t/fibril/test_fibril.c: scheduler semantics of libfibril. */
#include "first.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "fibril/fibril.h"
#include "t/tmain.h"

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

/* ---- timed park ---- */

static int timed_result;

static void timed_parker(void *arg)
{
	uint64_t d = fibril_now_ns() + (uint64_t)(long)arg * 1000000u;
	timed_result = fibril_park_until(d);
	/* whichever way it ended, the deadline is gone */
	ck_assert_int_eq(fibril_sched_timeout_ms(), -1);
}

static void drive(void)
{
	/* the host loop: sleep as long as the scheduler allows, run it */
	while (fibril_sched_count()) {
		int ms = fibril_sched_timeout_ms();
		ck_assert_int_ge(ms, 0);
		poll(NULL, 0, ms);
		fibril_sched_run();
	}
}

START_TEST(test_park_until_expires)
{
	fibril_t *f;
	timed_result = 1;
	ck_assert_int_eq(fibril_start(&f, timed_parker, (void *)20L, NULL), 0);
	ck_assert_int_eq(timed_result, 1);
	int ms = fibril_sched_timeout_ms();
	ck_assert_int_gt(ms, 0);
	ck_assert_int_le(ms, 20);
	drive();
	ck_assert_int_eq(timed_result, -ETIMEDOUT);
	ck_assert_int_eq(fibril_join(f), 0);
}
END_TEST

START_TEST(test_park_until_woken_first)
{
	fibril_t *f;
	timed_result = 1;
	ck_assert_int_eq(fibril_start(&f, timed_parker, (void *)100000L, NULL), 0);
	ck_assert_int_gt(fibril_sched_timeout_ms(), 1000);
	fibril_wake(f);
	ck_assert_int_eq(fibril_sched_run(), 1);
	ck_assert_int_eq(timed_result, 0);
	ck_assert_int_eq(fibril_join(f), 0);
}
END_TEST

static int timer_order[8], ntimer_order;

static void timed_marker(void *arg)
{
	long ms = (long)arg;
	ck_assert_int_eq(fibril_park_until(fibril_now_ns() + (uint64_t)ms * 1000000u),
	                 -ETIMEDOUT);
	timer_order[ntimer_order++] = (int)ms;
}

START_TEST(test_timers_fire_in_deadline_order)
{
	static const long ms[] = { 30, 10, 50, 20, 40, 1 };
	ntimer_order = 0;
	for (unsigned i = 0; i < 6; i++)
		ck_assert_int_eq(fibril_create(NULL, timed_marker, (void *)ms[i], NULL), 0);
	drive();
	ck_assert_int_eq(ntimer_order, 6);
	for (int i = 1; i < 6; i++)
		ck_assert_int_lt(timer_order[i - 1], timer_order[i]);
}
END_TEST

START_TEST(test_join_sleeps_on_timer)
{
	fibril_t *f;
	timed_result = 1;
	ck_assert_int_eq(fibril_create(&f, timed_parker, (void *)5L, NULL), 0);
	ck_assert_int_eq(fibril_join(f), 0);
	ck_assert_int_eq(timed_result, -ETIMEDOUT);
}
END_TEST

/* ---- wait queues ---- */

static struct fibril_waitq wq;
static char wq_log[16];
static int nwq_log;

static void wq_waiter(void *arg)
{
	ck_assert_int_eq(fibril_waitq_wait(&wq, 0), 0);
	wq_log[nwq_log++] = (char)(long)arg;
}

START_TEST(test_waitq_wake_one_all)
{
	nwq_log = 0;
	fibril_waitq_init(&wq);
	ck_assert_int_eq(fibril_waitq_wake_one(&wq), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(fibril_create(NULL, wq_waiter, (void *)(long)('a' + i), NULL), 0);
	fibril_sched_run();
	ck_assert_int_eq(nwq_log, 0);
	ck_assert_int_eq(fibril_waitq_wake_one(&wq), 1);
	fibril_sched_run();
	ck_assert_int_eq(nwq_log, 1);
	ck_assert_int_eq(wq_log[0], 'a');   /* oldest first */
	ck_assert_int_eq(fibril_waitq_wake_one(&wq), 1);
	fibril_sched_run();
	ck_assert_int_eq(nwq_log, 2);
	ck_assert_int_eq(wq_log[1], 'b');
	ck_assert_int_eq(fibril_waitq_wake_all(&wq), 2);
	ck_assert_ptr_null(wq.head);
	ck_assert_ptr_null(wq.tail);
	fibril_sched_run();
	wq_log[nwq_log] = 0;
	ck_assert_str_eq(wq_log, "abcd");
	ck_assert_int_eq(fibril_waitq_wake_all(&wq), 0);
	ck_assert_uint_eq(fibril_sched_count(), 0);
}
END_TEST

static void wq_timed_waiter(void *arg)
{
	timed_result = fibril_waitq_wait(&wq, fibril_now_ns() + 5000000u);
}

START_TEST(test_waitq_timeout_leaves_queue)
{
	fibril_t *a, *b;
	fibril_waitq_init(&wq);
	nwq_log = 0;
	timed_result = 1;
	ck_assert_int_eq(fibril_create(&a, wq_waiter, (void *)'x', NULL), 0);
	ck_assert_int_eq(fibril_create(&b, wq_timed_waiter, NULL, NULL), 0);
	ck_assert_int_eq(fibril_create(NULL, wq_waiter, (void *)'y', NULL), 0);
	fibril_sched_run();
	ck_assert_int_eq(fibril_join(b), 0);  /* sleeps until its deadline */
	ck_assert_int_eq(timed_result, -ETIMEDOUT);
	/* the middle waiter unlinked itself; the others are still queued */
	ck_assert_int_eq(fibril_waitq_wake_all(&wq), 2);
	fibril_sched_run();
	wq_log[nwq_log] = 0;
	ck_assert_str_eq(wq_log, "xy");
	ck_assert_int_eq(fibril_join(a), 0);
}
END_TEST

/* ---- counting for monitoring ---- */

static fibril_t *stat_self[3];

static void stat_parker(void *arg)
{
	long i = (long)arg;

	stat_self[i] = fibril_self();
	if (i == 2)
		fibril_park_until(fibril_now_ns() + 60000000000ull);
	else
		fibril_park();
}

START_TEST(test_sched_stats)
{
	struct fibril_sched_stats st;

	fibril_sched_stats(&st);
	ck_assert_uint_eq(st.created, 0);
	ck_assert_uint_eq(st.alive, 0);
	for (long i = 0; i < 3; i++)
		ck_assert_int_eq(fibril_create(NULL, stat_parker, (void *)i, NULL), 0);
	fibril_sched_stats(&st);
	ck_assert_uint_eq(st.created, 3);
	ck_assert_uint_eq(st.alive, 3);
	ck_assert_uint_eq(st.runnable, 3);
	ck_assert_uint_eq(st.parked, 0);
	ck_assert_int_eq(fibril_sched_run(), 3);
	fibril_sched_stats(&st);
	ck_assert_uint_eq(st.switches, 3);
	ck_assert_uint_eq(st.runnable, 0);
	ck_assert_uint_eq(st.parked, 3);
	ck_assert_uint_eq(st.timed, 1);
	/* woken: runnable until it runs, then gone */
	fibril_wake(stat_self[0]);
	fibril_sched_stats(&st);
	ck_assert_uint_eq(st.parked, 2);
	ck_assert_uint_eq(st.runnable, 1);
	fibril_sched_run();
	fibril_wake(stat_self[1]);
	fibril_wake(stat_self[2]);
	fibril_sched_run();
	fibril_sched_stats(&st);
	ck_assert_uint_eq(st.alive, 0);
	ck_assert_uint_eq(st.parked, 0);
	ck_assert_uint_eq(st.timed, 0);
	ck_assert_uint_eq(st.created, 3);
}
END_TEST

static Suite *fibril_suite(void)
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
	tcase_add_test(tc, test_park_until_expires);
	tcase_add_test(tc, test_park_until_woken_first);
	tcase_add_test(tc, test_timers_fire_in_deadline_order);
	tcase_add_test(tc, test_join_sleeps_on_timer);
	tcase_add_test(tc, test_waitq_wake_one_all);
	tcase_add_test(tc, test_waitq_timeout_leaves_queue);
	tcase_add_test(tc, test_sched_stats);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = fibril_suite);
