/* The async layer inside fibrils: waiting parks only the waiter, many
 * fibrils with their own calls, cached calls that never park. */
#include "first.h"

#include <errno.h>

#include "async_check.h"
#include "fibril/fibril.h"

#define A(x) ((unsigned long)(x))

static async_engine_t *eng;

static void setup_n(unsigned pool_threads)
{
	struct async_engine_opts o = { 0 };
	o.pool_threads = pool_threads;
	o.iowq_bounded = 8;
	tdir_make();
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(&o, &eng), 0);
	ck_assert_str_eq(async_engine_backend(eng), want_backend());
}

static void setup(void)
{
	setup_n(0);
}

static void teardown(void)
{
	async_engine_destroy(eng);
	eng = NULL;
	fibril_sched_fini();
	tdir_remove();
}

/* ---- many fibrils, each waiting on its own calls ---- */

enum { NF = 200, NCALLS = 20 };
static int finished;

static void worker(void *arg)
{
	long id = (long)arg;
	struct statx sb[NCALLS];
	long res[NCALLS];

	for (int j = 0; j < NCALLS; j++) {
		/* mixes: one-cookie waits, the blocking wrapper, async_stat */
		const char *p = (id + j) % 2 ? "file" : "sub";
		unsigned long a[5] = { A((long)tdfd), A(p), 0, STATX_BASIC_STATS,
		                       A(&sb[j]) };
		if (j % 3 == 0) {
			long c = async_submit(0, &res[j], ASYNC_STATX, a);
			ck_assert_int_ge(c, 0);
			if (c > 0) {
				ck_assert_int_eq(wait_for_async(c), 0);
			}
			ck_assert_int_eq(res[j], 0);
		} else if (j % 3 == 1) {
			ck_assert_int_eq(fibril_statx(tdfd, p, 0, STATX_BASIC_STATS,
			                              &sb[j]), 0);
		} else {
			ck_assert_int_ge(async_stat(tdfd, p, &sb[j], &res[j]), 0);
		}
	}
	ck_assert_int_eq(wait_for_async(0), 0);
	ck_assert_uint_eq(async_outstanding(), 0);
	for (int j = 0; j < NCALLS; j++) {
		const char *p = (id + j) % 2 ? "file" : "sub";
		if (p[0] == 'f')
			ck_assert_uint_eq(sb[j].stx_size, 6);
		else
			ck_assert(S_ISDIR(sb[j].stx_mode));
	}
	finished++;
}

START_TEST(many_fibrils)
{
	for (long i = 0; i < NF; i++)
		ck_assert_int_eq(fibril_create(NULL, worker, (void *)i, "w"), 0);
	ck_assert_int_eq(async_engine_run(eng), 0);
	ck_assert_int_eq(finished, NF);
	ck_assert_uint_eq(fibril_sched_count(), 0);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
}
END_TEST

/* ---- waiting parks only the waiter ---- */

static int pfd[2], pfd2[2];
static long a_res;
static int b_done;

static void fa(void *arg)
{
	char b[4];
	(void)arg;
	/* pending until fb writes: only this fibril parks */
	a_res = fibril_read(pfd[0], b, sizeof(b));
	ck_assert_int_eq(b_done, 1);
}

static void fb(void *arg)
{
	struct statx sb;
	(void)arg;
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(fibril_statx(tdfd, "file", 0, STATX_BASIC_STATS,
		                              &sb), 0);
	b_done = 1;
	ck_assert_int_eq(write(pfd[1], "q", 1), 1);
}

START_TEST(wait_parks_only_waiter)
{
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(fibril_create(NULL, fa, NULL, "a"), 0);
	ck_assert_int_eq(fibril_create(NULL, fb, NULL, "b"), 0);
	ck_assert_int_eq(async_engine_run(eng), 0);
	ck_assert_int_eq(a_res, 1);
}
END_TEST

/* ---- cancel and wait across fibrils ---- */

static long shared_cookie, shared_res;
static long waited_res = 99;

static void submitter(void *arg)
{
	char b[4];
	unsigned long a[3] = { A((long)pfd2[0]), A(b), sizeof(b) };
	(void)arg;
	shared_cookie = async_submit(0, &shared_res, ASYNC_READ, a);
	ck_assert_int_gt(shared_cookie, 0);
	ck_assert_uint_eq(async_outstanding(), 1);
	/* another fibril waits on our cookie: wait(0) waits for it to
	 * complete but leaves the reaping to that waiter */
	ck_assert_int_eq(wait_for_async(0), 0);
	ck_assert_uint_eq(async_outstanding(), 0);
}

static void canceller(void *arg)
{
	(void)arg;
	ck_assert_int_gt(shared_cookie, 0);
	ck_assert_int_eq(async_cancel(shared_cookie), 0);
}

static void other_waiter(void *arg)
{
	(void)arg;
	waited_res = wait_for_async(shared_cookie);
}

static void blocker(void *arg)
{
	char b[4];
	(void)arg;
	/* occupies the only pool thread so the next read stays queued */
	ck_assert_int_eq(fibril_read(pfd[0], b, sizeof(b)), 1);
}

START_TEST(cancel_from_other_fibril)
{
	async_engine_destroy(eng);
	struct async_engine_opts o = { .pool_threads = 1 };
	ck_assert_int_eq(async_engine_create(&o, &eng), 0);
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(pipe(pfd2), 0);
	ck_assert_int_eq(fibril_start(NULL, blocker, NULL, "blk"), 0);
	ck_assert_int_eq(fibril_start(NULL, submitter, NULL, "sub"), 0);
	ck_assert_int_eq(fibril_create(NULL, other_waiter, NULL, "wait"), 0);
	ck_assert_int_eq(fibril_create(NULL, canceller, NULL, "cancel"), 0);
	fibril_sched_run();
	ck_assert_int_eq(write(pfd[1], "z", 1), 1);  /* release the blocker */
	ck_assert_int_eq(async_engine_run(eng), 0);
	ck_assert_int_eq(waited_res, -ECANCELED);
	ck_assert_int_eq(shared_res, -ECANCELED);
	ck_assert_int_eq(wait_for_async(shared_cookie), -ENOENT);
}
END_TEST

/* ---- cached calls never park ---- */

static int other_ran;

static void other(void *arg)
{
	(void)arg;
	other_ran = 1;
}

static void cached(void *arg)
{
	struct open_how how = { .flags = O_RDONLY };
	struct statx sb;
	char buf[8];
	(void)arg;
	for (int i = 0; i < 100; i++) {
		long fd = fibril_openat2(tdfd, "file", &how);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fibril_statx((int)fd, "", AT_EMPTY_PATH,
		                              STATX_BASIC_STATS, &sb), 0);
		ck_assert_int_eq(fibril_pread((int)fd, buf, sizeof(buf), 0), 6);
		ck_assert_int_eq(fibril_close((int)fd), 0);
	}
	/* "other" was runnable all along: had we parked, it would have run */
	ck_assert_int_eq(other_ran, 0);
}

START_TEST(cached_calls_never_park)
{
	struct open_how how = { .flags = O_RDONLY };
	/* warm the dcache and page cache */
	long fd = fibril_openat2(tdfd, "file", &how);
	char buf[8];
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read((int)fd, buf, sizeof(buf)), 6);
	close((int)fd);
	ck_assert_int_eq(fibril_create(NULL, other, NULL, "other"), 0);
	ck_assert_int_eq(fibril_start(NULL, cached, NULL, "cached"), 0);
	ck_assert_int_eq(async_engine_run(eng), 0);
	ck_assert_int_eq(other_ran, 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("async_fibrils");
	TCase *tc = tcase_create("fibrils");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, many_fibrils);
	tcase_add_test(tc, wait_parks_only_waiter);
	tcase_add_test(tc, cancel_from_other_fibril);
	tcase_add_test(tc, cached_calls_never_park);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite);
