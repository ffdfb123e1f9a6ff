/* ASYNC_F_BACKGROUND: calls that run on the engine's background threads
 * at SCHED_IDLE, on the backend FIBRIL_BACKEND selects. */
#include "first.h"

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>

#include "async_check.h"
#include "thread_policy.h"

#define A(x) ((unsigned long)(x))

static async_engine_t *eng;

static void setup_engine(unsigned bg_threads)
{
	struct async_engine_opts o = { 0 };
	o.bg_threads = bg_threads;
	o.iowq_bounded = 8;
	ck_assert_int_eq(async_engine_create(&o, &eng), 0);
	ck_assert_str_eq(async_engine_backend(eng), want_backend());
}

static void setup(void)
{
	tdir_make();
	setup_engine(0);
}

static void teardown(void)
{
	if (eng)
		async_engine_destroy(eng);
	eng = NULL;
	tdir_remove();
}

/* The thread that ran a readlinkat of /proc/thread-self: its id. */
static long runner_tid(unsigned long flags)
{
	char buf[128];
	unsigned long a[4] = { A((long)AT_FDCWD), A("/proc/thread-self"), A(buf),
			       sizeof(buf) - 1 };
	long res = 0;
	long c = async_submit(flags | ASYNC_F_NOINLINE, &res, ASYNC_READLINKAT, a);
	ck_assert_int_gt(c, 0);
	ck_assert_int_gt(wait_for_async(c), 0);
	buf[res] = '\0';
	const char *t = strstr(buf, "/task/");  /* "PID/task/TID" */
	ck_assert_msg(t != NULL, "readlink gave '%s'", buf);
	return strtol(t + 6, NULL, 10);
}

/* The policy of thread @tid; -1 (gone) fails every check below. */
static int policy_of(long tid)
{
	char id[24];
	snprintf(id, sizeof(id), "%ld", tid);
	return t_thread_policy(id);
}

START_TEST(runs_at_sched_idle)
{
	long self = syscall(SYS_gettid);
	long bg = runner_tid(ASYNC_F_BACKGROUND);
	long fg = runner_tid(0);
	ck_assert_int_ne(bg, self);
	ck_assert_int_ne(fg, self);
	ck_assert_int_ne(bg, fg);
	ck_assert_int_eq(policy_of(bg), SCHED_IDLE);
	ck_assert_int_eq(policy_of(fg), SCHED_OTHER);
	ck_assert_int_eq(policy_of(self), SCHED_OTHER);
	/* A later call, on a thread the pool kept or a new one, too. */
	ck_assert_int_eq(policy_of(runner_tid(ASYNC_F_BACKGROUND)), SCHED_IDLE);
}
END_TEST

/* Many background statx calls, some with callbacks: every one lands,
 * with the right result, also past the bound of 4 threads. */
static int cb_calls;
static long cb_sum;

static void cb(void *arg, long res)
{
	(void)arg;
	cb_calls++;
	cb_sum += res;
}

START_TEST(many_calls_land)
{
	async_engine_destroy(eng);
	setup_engine(4);
	enum { N = 300 };
	static struct statx sb[N];
	static long res[N];
	unsigned long a[N][5];
	int pending = 0;
	cb_calls = 0;
	cb_sum = 0;
	for (int i = 0; i < N; i++) {
		a[i][0] = A((long)tdfd);
		a[i][1] = A(i % 3 == 0 ? "file" : i % 3 == 1 ? "sub" : "nonexistent");
		a[i][2] = AT_SYMLINK_NOFOLLOW;
		a[i][3] = STATX_BASIC_STATS;
		a[i][4] = A(&sb[i]);
		long c = i % 2 ? async_submit(ASYNC_F_BACKGROUND, &res[i], ASYNC_STATX, a[i])
			       : async_submit_cb(ASYNC_F_BACKGROUND, &res[i], ASYNC_STATX,
						 a[i], cb, NULL);
		ck_assert_int_ge(c, 0);
		if (c > 0 && i % 2 == 0)
			pending++;
	}
	ck_assert_int_eq(wait_for_async(0), 0);
	while (cb_calls < pending) {
		struct pollfd p = { async_engine_fd(eng), POLLIN, 0 };
		ck_assert_int_ge(async_engine_process(eng, 0), 0);
		if (cb_calls < pending)
			poll(&p, 1, 100);
	}
	ck_assert_int_eq(async_engine_inflight(eng), 0);
	for (int i = 0; i < N; i++) {
		if (i % 3 == 2) {
			ck_assert_int_eq(res[i], -ENOENT);
			continue;
		}
		ck_assert_int_eq(res[i], 0);
		if (i % 3 == 0)
			ck_assert_uint_eq(sb[i].stx_size, 6);
		else
			ck_assert(S_ISDIR(sb[i].stx_mode));
	}
}
END_TEST

static int pipes[2][2];

/* A new engine with @threads background threads, and pipes[0]. */
static void restart_with_pipe(unsigned threads)
{
	async_engine_destroy(eng);
	setup_engine(threads);
	ck_assert_int_eq(pipe(pipes[0]), 0);
}

/* A background read of one byte from pipes[0]: its cookie. */
static long bg_read1(char *buf, long *res)
{
	unsigned long a[3] = { A((long)pipes[0][0]), A(buf), 1 };
	long c = async_submit(ASYNC_F_BACKGROUND, res, ASYNC_READ, a);
	ck_assert_int_gt(c, 0);
	return c;
}

START_TEST(cancel_queued)
{
	/* One background thread: the first read occupies it, the second
	 * waits in the queue and is cancelled there. */
	restart_with_pipe(1);
	ck_assert_int_eq(pipe(pipes[1]), 0);
	char b0[4], b1[4];
	unsigned long a0[3] = { A((long)pipes[0][0]), A(b0), sizeof(b0) };
	unsigned long a1[3] = { A((long)pipes[1][0]), A(b1), sizeof(b1) };
	long r0 = 0, r1 = 0;
	long c0 = async_submit(ASYNC_F_BACKGROUND, &r0, ASYNC_READ, a0);
	long c1 = async_submit(ASYNC_F_BACKGROUND, &r1, ASYNC_READ, a1);
	ck_assert_int_gt(c0, 0);
	ck_assert_int_gt(c1, 0);
	ck_assert_int_ge(async_engine_process(eng, 0), 0);
	usleep(20000);
	ck_assert_int_eq(async_cancel(c1), 0);
	ck_assert_int_eq(wait_for_async(c1), -ECANCELED);
	ck_assert_int_eq(r0, c0);
	ck_assert_int_eq(write(pipes[0][1], "ab", 2), 2);
	ck_assert_int_eq(wait_for_async(c0), 2);
	ck_assert_int_eq(memcmp(b0, "ab", 2), 0);
	for (int i = 0; i < 2; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
}
END_TEST

START_TEST(destroy_with_pending)
{
	/* One background thread, two reads of one byte: destroy cancels
	 * what is still queued and waits out what runs. Two bytes, so that
	 * no read can block forever; under load the thread may not have
	 * taken even the first call yet, so both may be cancelled. */
	restart_with_pipe(1);
	char b[2][2];
	long r[2] = { 0, 0 };
	for (int i = 0; i < 2; i++)
		bg_read1(b[i], &r[i]);
	ck_assert_int_ge(async_engine_process(eng, 0), 0);
	usleep(20000);
	ck_assert_int_eq(write(pipes[0][1], "zz", 2), 2);
	async_engine_destroy(eng);
	eng = NULL;
	for (int i = 0; i < 2; i++)
		ck_assert_msg(r[i] == 1 || r[i] == -ECANCELED, "r[%d] = %ld", i, r[i]);
	close(pipes[0][0]);
	close(pipes[0][1]);
}
END_TEST

START_TEST(held_completion_delivered)
{
	/* Four background reads block; one statx finishes at once. The
	 * batching holds its completion back (an eighth of what is
	 * outstanding is not done yet), but the engine still delivers it
	 * within a few milliseconds: the wait below returns. */
	restart_with_pipe(8);
	char b[4][2];
	long r[4], c[4];
	for (int i = 0; i < 4; i++)
		c[i] = bg_read1(b[i], &r[i]);
	ck_assert_int_ge(async_engine_process(eng, 0), 0);
	usleep(20000);   /* all four blocked in read() */
	struct statx sb;
	unsigned long sa[5] = { A((long)tdfd), A("file"), AT_SYMLINK_NOFOLLOW,
				STATX_BASIC_STATS, A(&sb) };
	long sr = 0;
	long sc = async_submit(ASYNC_F_BACKGROUND, &sr, ASYNC_STATX, sa);
	ck_assert_int_gt(sc, 0);
	ck_assert_int_eq(wait_for_async(sc), 0);
	/* Four reads still outstanding, nothing ready: the host loop is
	 * told to look again in 5 ms, not to sleep for ever. */
	ck_assert_int_eq(async_engine_timeout_ms(eng), 5);
	ck_assert_uint_eq(sb.stx_size, 6);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(r[i], c[i]);   /* still blocked */
	ck_assert_int_eq(write(pipes[0][1], "abcd", 4), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(wait_for_async(c[i]), 1);
	ck_assert_int_eq(async_engine_timeout_ms(eng), -1);
	close(pipes[0][0]);
	close(pipes[0][1]);
}
END_TEST

START_TEST(flags_checked)
{
	long res = 0;
	unsigned long a[5];
	struct statx sb;
	a[0] = A((long)tdfd);
	a[1] = A("file");
	a[2] = AT_SYMLINK_NOFOLLOW;
	a[3] = STATX_BASIC_STATS;
	a[4] = A(&sb);
	ck_assert_int_eq(async_submit(0x80, &res, ASYNC_STATX, a), -EINVAL);
	/* SYNC wins: it runs now, on this thread. */
	ck_assert_int_eq(async_submit(ASYNC_F_BACKGROUND | ASYNC_F_SYNC, &res,
				      ASYNC_STATX, a), 0);
	ck_assert_int_eq(res, 0);
	ck_assert_uint_eq(sb.stx_size, 6);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("async_bg");
	TCase *tc = tcase_create("background");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, runs_at_sched_idle);
	tcase_add_test(tc, many_calls_land);
	tcase_add_test(tc, cancel_queued);
	tcase_add_test(tc, destroy_with_pending);
	tcase_add_test(tc, held_completion_delivered);
	tcase_add_test(tc, flags_checked);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite);
