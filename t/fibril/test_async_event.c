/* The libevent adapter: an event_base hosting the engine and the fibril
 * scheduler (fd, kick, fibril timers), with a socket-style event of the
 * application's own beside it. */
#include "first.h"

#include <errno.h>
#include <event2/event.h>

#include "async_check.h"
#include "fibril/async_event.h"
#include "fibril/fibril.h"

static async_engine_t *eng;
static struct event_base *base;

static void setup(void)
{
	tdir_make();
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(NULL, &eng), 0);
	ck_assert_str_eq(async_engine_backend(eng), want_backend());
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(async_event_attach(eng, base), 0);
}

static void teardown(void)
{
	async_event_detach(eng);
	async_event_detach(eng);  /* twice is harmless */
	async_engine_destroy(eng);
	event_base_free(base);
	fibril_sched_fini();
	tdir_remove();
}

static int done, failures;

static void req(void *arg)
{
	struct statx sb;
	long res[8];
	struct statx many[8];
	(void)arg;
	if (fibril_statx(tdfd, "file", 0, STATX_BASIC_STATS, &sb) != 0 ||
	    sb.stx_size != 6)
		failures++;
	for (int i = 0; i < 8; i++)
		if (async_stat(tdfd, "sub", &many[i], &res[i]) < 0)
			failures++;
	wait_for_async(0);
	for (int i = 0; i < 8; i++)
		if (res[i] != 0 || !S_ISDIR(many[i].stx_mode))
			failures++;
	done++;
}

static void timed(void *arg)
{
	(void)arg;
	uint64_t t0 = fibril_now_ns();
	if (fibril_park_until(t0 + 10000000ull) != -ETIMEDOUT ||
	    fibril_now_ns() < t0 + 10000000ull)
		failures++;
	done++;
}

static void on_quit(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	event_base_loopbreak(base);
}

static void run_until(int want)
{
	struct event *guard = evtimer_new(base, on_quit, NULL);
	struct timeval tv = { 15, 0 };
	evtimer_add(guard, &tv);  /* a hang fails the test instead of Check's alarm */
	while (done < want && !event_base_got_break(base))
		event_base_loop(base, EVLOOP_ONCE);
	event_free(guard);
}

START_TEST(fibrils_in_event_base)
{
	ck_assert_int_eq(async_event_attach(eng, base), -EBUSY);
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(fibril_create(NULL, req, NULL, "req"), 0);
	ck_assert_int_eq(fibril_create(NULL, timed, NULL, "timed"), 0);
	async_event_kick(eng);  /* fibrils made runnable outside the adapter */
	run_until(51);
	ck_assert_int_eq(done, 51);
	ck_assert_int_eq(failures, 0);
	ck_assert_uint_eq(fibril_sched_count(), 0);
}
END_TEST

/* A fibril started from an application's event callback (the daemon's
 * request path): its submissions must get flushed by the adapter
 * without any help from the application. */
static int pipefd[2];
static long readres;

static void reader(void *arg)
{
	char b[4];
	(void)arg;
	readres = fibril_read(pipefd[0], b, sizeof(b));
	done++;
}

static void on_app_event(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	ck_assert_int_eq(fibril_start(NULL, reader, NULL, "reader"), 0);
	ck_assert_int_eq(write(pipefd[1], "k", 1), 1);
}

START_TEST(fibril_started_from_callback)
{
	ck_assert_int_eq(pipe(pipefd), 0);
	struct event *ev = evtimer_new(base, on_app_event, NULL);
	struct timeval tv = { 0, 1000 };
	evtimer_add(ev, &tv);
	run_until(1);
	event_free(ev);
	ck_assert_int_eq(done, 1);
	ck_assert_int_eq(readres, 1);
}
END_TEST

static int cbs;

static void cb(void *arg, long res)
{
	ck_assert_ptr_eq(arg, &cbs);
	ck_assert_int_eq(res, 0);
	if (++cbs == 100)
		done++;
}

START_TEST(callbacks_in_event_base)
{
	static struct statx sb[100];
	static long res[100];
	for (int i = 0; i < 100; i++) {
		unsigned long a[5] = { (unsigned long)(long)tdfd,
		                       (unsigned long)"file", 0, STATX_BASIC_STATS,
		                       (unsigned long)&sb[i] };
		long c = async_submit_cb(0, &res[i], ASYNC_STATX, a, cb, &cbs);
		ck_assert_int_ge(c, 0);
		if (c == 0)
			cb(&cbs, res[i]);
	}
	run_until(1);
	ck_assert_int_eq(cbs, 100);
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(sb[i].stx_size, 6);
}
END_TEST

/* A fibril that yields in a loop (a long render between other clients)
 * runs again only after the base has polled: an fd that became ready
 * meanwhile gets its callback before the loop ends. */
static int yields, yields_seen = -1;

static void yielder(void *arg)
{
	(void)arg;
	ck_assert_int_eq(write(pipefd[1], "y", 1), 1);
	for (yields = 0; yields < 1000; yields++)
		fibril_yield();
	done++;
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	char b;
	(void)what;
	(void)arg;
	ck_assert_int_eq(read(fd, &b, 1), 1);
	yields_seen = yields;
}

START_TEST(yielder_leaves_fds_their_turn)
{
	ck_assert_int_eq(pipe(pipefd), 0);
	struct event *ev = event_new(base, pipefd[0], EV_READ, on_readable, NULL);
	ck_assert_int_eq(event_add(ev, NULL), 0);
	ck_assert_int_eq(fibril_create(NULL, yielder, NULL, "yielder"), 0);
	async_event_kick(eng);
	run_until(1);
	event_free(ev);
	ck_assert_int_eq(done, 1);
	ck_assert_int_ge(yields_seen, 0);
	ck_assert_int_lt(yields_seen, 10);
}
END_TEST

/* Destroying an attached engine takes the adapter's events off the
 * base: none may fire on a freed engine. */
START_TEST(destroy_detaches)
{
	ck_assert_int_gt(event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED), 0);
	async_engine_destroy(eng);
	eng = NULL;
	ck_assert_int_eq(event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED |
	                                           EVENT_BASE_COUNT_ACTIVE), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("async_event");
	TCase *tc = tcase_create("libevent");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, fibrils_in_event_base);
	tcase_add_test(tc, fibril_started_from_callback);
	tcase_add_test(tc, callbacks_in_event_base);
	tcase_add_test(tc, yielder_leaves_fds_their_turn);
	tcase_add_test(tc, destroy_detaches);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite);
