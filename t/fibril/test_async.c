/* async_submit / wait_for_async / async_cancel outside fibrils (the
 * thread is the submitter), on the backend FIBRIL_BACKEND selects. */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <syslog.h>

#include "async_check.h"

#define A(x) ((unsigned long)(x))

static async_engine_t *eng;
static char logged[256];
static int nlogged;

static void logcb(int level, const char *msg, void *arg)
{
	(void)arg;
	if (level == LOG_INFO && nlogged++ == 0)
		snprintf(logged, sizeof(logged), "%s", msg);
}

static void setup_engine(unsigned max_inflight, unsigned pool_threads)
{
	struct async_engine_opts o = { 0 };
	o.max_inflight = max_inflight;
	o.pool_threads = pool_threads;
	o.iowq_bounded = 8;
	o.log = logcb;
	ck_assert_int_eq(async_engine_create(&o, &eng), 0);
	ck_assert_str_eq(async_engine_backend(eng), want_backend());
}

static void setup(void)
{
	tdir_make();
	setup_engine(0, 0);
}

static void teardown(void)
{
	if (eng)
		async_engine_destroy(eng);
	eng = NULL;
	tdir_remove();
}

static long statx_args(unsigned long a[5], const char *path, struct statx *b)
{
	a[0] = A((long)tdfd);
	a[1] = A(path);
	a[2] = AT_SYMLINK_NOFOLLOW;
	a[3] = STATX_BASIC_STATS;
	a[4] = A(b);
	return 0;
}

START_TEST(engine_logs_backend_once)
{
	ck_assert_int_eq(nlogged, 1);
	ck_assert_ptr_nonnull(strstr(logged, want_backend()));
	ck_assert_ptr_eq(async_engine_current(), eng);
	ck_assert_int_ge(async_engine_fd(eng), 0);
	async_engine_t *e2;
	ck_assert_int_eq(async_engine_create(NULL, &e2), -EBUSY);
}
END_TEST

START_TEST(engine_forced_threads)
{
	struct async_engine_opts o = { 0 };
	async_engine_t *e;
	async_engine_destroy(eng);
	eng = NULL;
	ck_assert_ptr_null(async_engine_current());
	o.backend = "threads";
	o.log = logcb;
	ck_assert_int_eq(async_engine_create(&o, &e), 0);
	ck_assert_str_eq(async_engine_backend(e), "threads");
	async_engine_destroy(e);
	o.backend = "bogus";
	ck_assert_int_eq(async_engine_create(&o, &e), -EINVAL);
}
END_TEST

START_TEST(submit_negative)
{
	long res = 123;
	unsigned long a[5];
	struct statx sb;
	statx_args(a, "file", &sb);
	ck_assert_int_eq(async_submit(0, &res, ASYNC_CALL_MAX, a), -ENOSYS);
	ck_assert_int_eq(async_submit(0, &res, -1, a), -ENOSYS);
	ck_assert_int_eq(async_submit(0, &res, 9999, a), -ENOSYS);
	ck_assert_int_eq(async_submit(0x100, &res, ASYNC_STATX, a), -EINVAL);
	ck_assert_int_eq(async_submit(0, NULL, ASYNC_STATX, a), -EFAULT);
	const unsigned long nofn[2] = { 0, 0 };
	ck_assert_int_eq(async_submit(0, &res, ASYNC_CALL, nofn), -EFAULT);
	ck_assert_int_eq(async_submit(ASYNC_F_SYNC, &res, ASYNC_CALL, nofn), -EFAULT);
	ck_assert_int_eq(res, 123);  /* nothing was submitted or written */
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
	async_engine_destroy(eng);
	eng = NULL;
	ck_assert_int_eq(async_submit(0, &res, ASYNC_STATX, a), -ENXIO);
	ck_assert_int_eq(wait_for_async(0), -ENXIO);
	ck_assert_int_eq(res, 123);
}
END_TEST

START_TEST(submit_zero_cached_open)
{
	struct open_how how = { .flags = O_RDONLY };
	unsigned long a[4] = { A((long)tdfd), A("file"), A(&how), sizeof(how) };
	long res = -1;
	ck_assert_int_eq(async_submit(0, &res, ASYNC_OPENAT2, a), 0);
	ck_assert_int_ge(res, 0);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
	char buf[8] = { 0 };
	ck_assert_int_eq(read((int)res, buf, sizeof(buf)), 6);
	ck_assert_str_eq(buf, "hello\n");
	unsigned long c[1] = { A(res) };
	ck_assert_int_eq(async_submit(0, &res, ASYNC_CLOSE, c), 0);
	ck_assert_int_eq(res, 0);
	/* A miss cached as a negative dentry is answered inline too. */
	a[1] = A("nonexistent");
	ck_assert_int_eq(faccessat(tdfd, "nonexistent", F_OK, 0), -1);
	ck_assert_int_eq(async_submit(0, &res, ASYNC_OPENAT2, a), 0);
	ck_assert_int_eq(res, -ENOENT);
}
END_TEST

START_TEST(submit_zero_sync_flag)
{
	unsigned long a[5];
	struct statx sb, ref;
	long res = -1;
	statx_args(a, "file", &sb);
	ck_assert_int_eq(async_submit(ASYNC_F_SYNC, &res, ASYNC_STATX, a), 0);
	ck_assert_int_eq(res, 0);
	ck_assert_int_eq(statx(tdfd, "file", AT_SYMLINK_NOFOLLOW,
	                       STATX_BASIC_STATS, &ref), 0);
	ck_assert_uint_eq(sb.stx_ino, ref.stx_ino);
	ck_assert_uint_eq(sb.stx_size, 6);
}
END_TEST

/* What the engine did with each call, by backend. */
START_TEST(engine_stats)
{
	unsigned b = strcmp(want_backend(), "uring") ? ASYNC_BACKEND_POOL
	                                            : ASYNC_BACKEND_URING;
	struct open_how how = { .flags = O_RDONLY };
	unsigned long o[4] = { A((long)tdfd), A("file"), A(&how), sizeof(how) };
	unsigned long a[5];
	struct async_stats st;
	struct statx sb;
	long res = -1, c;

	async_engine_stats(eng, &st);
	ck_assert_uint_eq(st.submitted[0] + st.submitted[1], 0);
	/* inline: a cached open */
	ck_assert_int_eq(faccessat(tdfd, "file", F_OK, 0), 0);
	ck_assert_int_eq(async_submit(0, &res, ASYNC_OPENAT2, o), 0);
	close((int)res);
	/* on the caller */
	statx_args(a, "file", &sb);
	ck_assert_int_eq(async_submit(ASYNC_F_SYNC, &res, ASYNC_STATX, a), 0);
	/* pending: held by the backend until reaped */
	c = async_submit(0, &res, ASYNC_STATX, a);
	ck_assert_int_ge(c, ASYNC_COOKIE_BASE);
	async_engine_stats(eng, &st);
	ck_assert_uint_eq(st.sync[b], 2);
	ck_assert_uint_eq(st.sync_inline[b], 1);
	ck_assert_uint_eq(st.async[b], 1);
	ck_assert_uint_eq(st.submitted[b], 3);
	ck_assert_uint_eq(st.submitted[!b], 0);
	ck_assert_uint_eq(st.inflight, 1);
	ck_assert_uint_eq(st.depth[b], 1);
	ck_assert_int_eq(wait_for_async(c), 0);
	async_engine_stats(eng, &st);
	ck_assert_uint_eq(st.inflight, 0);
	ck_assert_uint_eq(st.depth[b], 0);
	ck_assert_uint_eq(st.async[b], 1);
	async_engine_stats(NULL, &st);
	ck_assert_uint_eq(st.submitted[b], 0);
}
END_TEST

START_TEST(submit_cookie_and_wait)
{
	unsigned long a[5];
	struct statx sb;
	long res = 0;
	statx_args(a, "file", &sb);
	long c = async_submit(0, &res, ASYNC_STATX, a);
	ck_assert_int_ge(c, ASYNC_COOKIE_BASE);
	ck_assert_int_eq(res, c);
	ck_assert_uint_eq(async_outstanding(), 1);
	ck_assert_uint_eq(async_engine_inflight(eng), 1);
	ck_assert_int_eq(wait_for_async(c), 0);
	ck_assert_int_eq(res, 0);
	ck_assert_uint_eq(sb.stx_size, 6);
	ck_assert_uint_eq(async_outstanding(), 0);
	ck_assert_int_eq(wait_for_async(c), -ENOENT);  /* already reaped */
	ck_assert_int_eq(wait_for_async(ASYNC_COOKIE_BASE + 12345), -ENOENT);
	ck_assert_int_eq(wait_for_async(5), -ENOENT);
	ck_assert_int_eq(wait_for_async(0), 0);  /* nothing outstanding */
}
END_TEST

START_TEST(completion_visible_in_memory)
{
	unsigned long a[5];
	struct statx sb;
	long res = 0;
	statx_args(a, "link", &sb);
	long c = async_submit(0, &res, ASYNC_STATX, a);
	ck_assert_int_gt(c, 0);
	drive_until(eng, &res, c);
	ck_assert_int_eq(res, 0);
	ck_assert(S_ISLNK(sb.stx_mode));
	/* Completed but not reaped: the wait still returns its result. */
	ck_assert_int_eq(wait_for_async(c), 0);
	ck_assert_int_eq(wait_for_async(c), -ENOENT);
}
END_TEST

static int pipes[2][2];

static void make_pipes(void)
{
	ck_assert_int_eq(pipe(pipes[0]), 0);
	ck_assert_int_eq(pipe(pipes[1]), 0);
}

START_TEST(cancel_before_completion)
{
	/* One pool thread: the first read occupies it, the second stays
	 * queued; on the ring both are armed polls. Either way the second
	 * cancels before it runs. */
	async_engine_destroy(eng);
	setup_engine(0, 1);
	make_pipes();
	char b0[4], b1[4];
	unsigned long a0[3] = { A((long)pipes[0][0]), A(b0), sizeof(b0) };
	unsigned long a1[3] = { A((long)pipes[1][0]), A(b1), sizeof(b1) };
	long r0 = 0, r1 = 0;
	long c0 = async_submit(0, &r0, ASYNC_READ, a0);
	long c1 = async_submit(0, &r1, ASYNC_READ, a1);
	ck_assert_int_gt(c0, 0);
	ck_assert_int_gt(c1, 0);
	ck_assert_int_eq(async_engine_process(eng, 0) >= 0, 1);
	usleep(20000);  /* let the pool thread pick up the first */
	ck_assert_int_eq(async_cancel(c1), 0);
	/* Again: 0 while still pending (ring), -ENOENT once complete (a
	 * queued pool call completes inside the first cancel). */
	ck_assert_int_eq(async_cancel(c1), r1 == c1 ? 0 : -ENOENT);
	ck_assert_int_eq(wait_for_async(c1), -ECANCELED);
	ck_assert_int_eq(r1, -ECANCELED);
	ck_assert_int_eq(r0, c0);  /* the other one is untouched */
	ck_assert_int_eq(write(pipes[0][1], "xy", 2), 2);
	ck_assert_int_eq(wait_for_async(c0), 2);
	ck_assert_int_eq(r0, 2);
	ck_assert_int_eq(memcmp(b0, "xy", 2), 0);
}
END_TEST

START_TEST(cancel_after_completion)
{
	unsigned long a[5];
	struct statx sb;
	long res = 0;
	statx_args(a, "file", &sb);
	long c = async_submit(0, &res, ASYNC_STATX, a);
	ck_assert_int_gt(c, 0);
	drive_until(eng, &res, c);
	ck_assert_int_eq(res, 0);
	ck_assert_int_eq(async_cancel(c), -ENOENT);  /* complete, not reaped */
	ck_assert_int_eq(wait_for_async(c), 0);
	ck_assert_int_eq(async_cancel(c), -ENOENT);  /* reaped */
	ck_assert_int_eq(async_cancel(12), -ENOENT);
	ck_assert_int_eq(res, 0);
}
END_TEST

START_TEST(parallelism_limit)
{
	async_engine_destroy(eng);
	setup_engine(2, 4);
	make_pipes();
	char b0[4], b1[4];
	unsigned long a0[3] = { A((long)pipes[0][0]), A(b0), sizeof(b0) };
	unsigned long a1[3] = { A((long)pipes[1][0]), A(b1), sizeof(b1) };
	long r0 = 0, r1 = 0, r2 = 0;
	long c0 = async_submit(0, &r0, ASYNC_READ, a0);
	long c1 = async_submit(0, &r1, ASYNC_READ, a1);
	ck_assert_int_gt(c0, 0);
	ck_assert_int_gt(c1, 0);
	ck_assert_uint_eq(async_engine_inflight(eng), 2);
	/* #3 at a limit of 2: done synchronously (the parallelism limit) */
	unsigned long a[5];
	struct statx sb;
	statx_args(a, "file", &sb);
	ck_assert_int_eq(async_submit(ASYNC_F_NOINLINE, &r2, ASYNC_STATX, a), 0);
	ck_assert_int_eq(r2, 0);
	ck_assert_uint_eq(sb.stx_size, 6);
	ck_assert_uint_eq(async_engine_inflight(eng), 2);
	ck_assert_int_eq(write(pipes[0][1], "a", 1), 1);
	ck_assert_int_eq(write(pipes[1][1], "b", 1), 1);
	ck_assert_int_eq(wait_for_async(0), 0);
	ck_assert_int_eq(r0, 1);
	ck_assert_int_eq(r1, 1);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
	/* below the limit again: asynchronous */
	ck_assert_int_gt(async_submit(ASYNC_F_NOINLINE, &r2, ASYNC_STATX, a), 0);
	ck_assert_int_eq(wait_for_async(0), 0);
	ck_assert_int_eq(r2, 0);
}
END_TEST

/* Each call through a backend (NOINLINE), then through its wrapper. */
START_TEST(every_call)
{
	long r;
	long c;
	struct open_how how = { .flags = O_RDWR | O_CREAT, .mode = 0600 };
	unsigned long ao[4] = { A((long)tdfd), A("wfile"), A(&how), sizeof(how) };

	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_NOP, NULL);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 0);

	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_OPENAT2, ao);
	ck_assert_int_gt(c, 0);
	int fd = (int)wait_for_async(c);
	ck_assert_int_ge(fd, 0);

	unsigned long aw[3] = { A((long)fd), A("abcdef"), 6 };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_WRITE, aw);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 6);

	unsigned long apw[4] = { A((long)fd), A("XY"), 2, 4 };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_PWRITE, apw);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 2);

	unsigned long afs[2] = { A((long)fd), 1 };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_FSYNC, afs);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 0);

	unsigned long afa[4] = { A((long)fd), 0, 6, POSIX_FADV_WILLNEED };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_FADVISE, afa);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 0);

	char buf[16] = { 0 };
	unsigned long apr[4] = { A((long)fd), A(buf), sizeof(buf), 0 };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_PREAD, apr);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 6);
	ck_assert_str_eq(buf, "abcdXY");

	ck_assert_int_eq(lseek(fd, 1, SEEK_SET), 1);
	memset(buf, 0, sizeof(buf));
	unsigned long ar[3] = { A((long)fd), A(buf), 3 };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_READ, ar);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 3);
	ck_assert_str_eq(buf, "bcd");

	struct statx sb;
	unsigned long as[5] = { A((long)fd), A(""), AT_EMPTY_PATH,
	                        STATX_BASIC_STATS, A(&sb) };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_STATX, as);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 0);
	ck_assert_uint_eq(sb.stx_size, 6);

	unsigned long ac[1] = { A((long)fd) };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_CLOSE, ac);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 0);
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);

	char lbuf[32] = { 0 };
	unsigned long arl[4] = { A((long)tdfd), A("link"), A(lbuf), sizeof(lbuf) };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_READLINKAT, arl);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 4);
	ck_assert_str_eq(lbuf, "file");

	char dents[4096];
	int dfd = openat(tdfd, ".", O_RDONLY | O_DIRECTORY);
	unsigned long ag[3] = { A((long)dfd), A(dents), sizeof(dents) };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_GETDENTS64, ag);
	ck_assert_int_gt(c, 0);
	long n = wait_for_async(c);
	ck_assert_int_gt(n, 0);
	int names = 0;
	for (long off = 0; off < n;) {
		struct { uint64_t ino; int64_t off; unsigned short reclen;
		         unsigned char type; char name[]; } *d = (void *)(dents + off);
		names += strcmp(d->name, "file") == 0 || strcmp(d->name, "link") == 0 ||
		         strcmp(d->name, "sub") == 0 || strcmp(d->name, "wfile") == 0;
		off += d->reclen;
	}
	ck_assert_int_eq(names, 4);
	close(dfd);
}
END_TEST

START_TEST(every_wrapper)
{
	struct open_how how = { .flags = O_RDWR | O_CREAT, .mode = 0600 };
	long fd = fibril_openat2(tdfd, "wfile", &how);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fibril_write((int)fd, "0123456789", 10), 10);
	ck_assert_int_eq(fibril_pwrite((int)fd, "ab", 2, 8), 2);
	ck_assert_int_eq(fibril_fsync((int)fd, 0), 0);
	ck_assert_int_eq(fibril_fadvise((int)fd, 0, 0, POSIX_FADV_NORMAL), 0);
	char buf[16] = { 0 };
	ck_assert_int_eq(fibril_pread((int)fd, buf, 4, 6), 4);
	ck_assert_str_eq(buf, "67ab");
	ck_assert_int_eq(lseek((int)fd, 0, SEEK_SET), 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(fibril_read((int)fd, buf, 3), 3);
	ck_assert_str_eq(buf, "012");
	struct statx sb;
	ck_assert_int_eq(fibril_statx((int)fd, "", AT_EMPTY_PATH,
	                              STATX_BASIC_STATS, &sb), 0);
	ck_assert_uint_eq(sb.stx_size, 10);
	ck_assert_int_eq(fibril_statx(tdfd, "sub", 0, STATX_BASIC_STATS, &sb), 0);
	ck_assert(S_ISDIR(sb.stx_mode));
	ck_assert_int_eq(fibril_close((int)fd), 0);
	char lbuf[16] = { 0 };
	ck_assert_int_eq(fibril_readlinkat(tdfd, "link", lbuf, sizeof(lbuf)), 4);
	char dents[1024];
	int dfd = openat(tdfd, "sub", O_RDONLY | O_DIRECTORY);
	ck_assert_int_gt(fibril_getdents64(dfd, dents, sizeof(dents)), 0);
	ck_assert_int_eq(fibril_getdents64(dfd, dents, sizeof(dents)), 0);
	close(dfd);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
}
END_TEST

START_TEST(errors_passed_through)
{
	struct statx sb;
	long r;
	unsigned long a[5] = { 9999, A("x"), 0, STATX_BASIC_STATS, A(&sb) };
	/* -EBADF: inline and through a backend */
	ck_assert_int_eq(fibril_statx(9999, "x", 0, STATX_BASIC_STATS, &sb), -EBADF);
	long c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_STATX, a);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), -EBADF);
	ck_assert_int_eq(r, -EBADF);
	char buf[4];
	ck_assert_int_eq(fibril_read(9999, buf, 4), -EBADF);
	unsigned long ar[3] = { 9999, A(buf), 4 };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_READ, ar);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), -EBADF);
	ck_assert_int_eq(fibril_close(9999), -EBADF);
	/* -EFAULT: a bad buffer */
	a[0] = A((long)tdfd);
	a[1] = A("file");
	a[4] = 8;
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_STATX, a);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), -EFAULT);
	ck_assert_int_eq(fibril_statx(tdfd, "file", 0, STATX_BASIC_STATS,
	                              (struct statx *)8), -EFAULT);
	/* -ENOENT through the ring's openat2 and inline */
	struct open_how how = { .flags = O_RDONLY };
	unsigned long ao[4] = { A((long)tdfd), A("nope"), A(&how), sizeof(how) };
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_OPENAT2, ao);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), -ENOENT);
	ck_assert_int_eq(fibril_openat2(tdfd, "nope", &how), -ENOENT);
	/* RESOLVE_BENEATH is honoured on both paths */
	how.resolve = RESOLVE_BENEATH;
	ck_assert_int_eq(fibril_openat2(tdfd, "../..", &how), -EXDEV);
	ao[1] = A("../..");
	c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_OPENAT2, ao);
	ck_assert_int_eq(wait_for_async(c), -EXDEV);
}
END_TEST

START_TEST(call_table)
{
	const struct async_call_info *i = async_call_info(ASYNC_STATX);
	ck_assert_ptr_nonnull(i);
	ck_assert_str_eq(i->name, "statx");
	ck_assert_uint_eq(i->nargs, 5);
	ck_assert_uint_eq(i->live_ptrs, (1u << 1) | (1u << 4));
	ck_assert_str_eq(async_call_info(ASYNC_GETDENTS64)->name, "getdents64");
	ck_assert_uint_eq(async_call_info(ASYNC_CLOSE)->live_ptrs, 0);
	for (long c = 0; c < ASYNC_CALL_MAX; c++) {
		ck_assert_ptr_nonnull(async_call_info(c));
		ck_assert_ptr_nonnull(async_call_info(c)->name);
		ck_assert_uint_le(async_call_info(c)->nargs, 6);
	}
	ck_assert_ptr_null(async_call_info(ASYNC_CALL_MAX));
	ck_assert_ptr_null(async_call_info(-1));
}
END_TEST

START_TEST(wait_all_many)
{
	/* More than max_inflight: some go synchronously, all complete. */
	enum { N = 3000 };
	static struct statx sb[N];
	static long res[N];
	unsigned long a[5];
	int async = 0;
	for (int i = 0; i < N; i++) {
		res[i] = 77;
		statx_args(a, i % 2 ? "file" : "sub", &sb[i]);
		long c = async_submit(0, &res[i], ASYNC_STATX, a);
		ck_assert_int_ge(c, 0);
		async += c > 0;
	}
	ck_assert_int_gt(async, 0);
	ck_assert_int_eq(wait_for_async(0), 0);
	ck_assert_uint_eq(async_outstanding(), 0);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(res[i], 0);
		ck_assert_uint_eq(sb[i].stx_size, i % 2 ? 6 : sb[0].stx_size);
	}
}
END_TEST

/* Descriptors of this process open on @path. */
static int count_fds(const char *path)
{
	char link[300], target[256];
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		ssize_t l = readlink(link, target, sizeof(target) - 1);
		if (l <= 0)
			continue;
		target[l] = 0;
		n += strcmp(target, path) == 0;
	}
	closedir(d);
	return n;
}

/* A readdir-then-stat loop over a directory long enough to start the engine's
 * directory read-ahead: every stat right, and the read-ahead's own
 * descriptor closed once it is done (or at destroy), whatever it found. */
START_TEST(dir_ahead_readdir_loop)
{
	enum { N = 700 };
	static struct statx sb[N + 2];
	static long res[N + 2];
	static char names[N + 2][256];
	char name[16];
	int many;

	ck_assert_int_eq(mkdirat(tdfd, "many", 0755), 0);
	many = openat(tdfd, "many", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(many, 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "m%04d", i);
		int fd = openat(many, name, O_CREAT | O_WRONLY, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, i), 0);
		close(fd);
	}
	char path[128];
	snprintf(path, sizeof(path), "%s/many", tdir);
	int base = count_fds(path);
	for (int round = 0; round < 2; round++) {
		DIR *dir = fdopendir(openat(many, ".", O_RDONLY | O_DIRECTORY));
		ck_assert_ptr_nonnull(dir);
		struct dirent *de;
		int n = 0;
		while ((de = readdir(dir)) != NULL) {
			ck_assert_int_lt(n, N + 2);
			snprintf(names[n], sizeof(names[n]), "%s", de->d_name);
			long c = async_stat(dirfd(dir), names[n], &sb[n], &res[n]);
			ck_assert_int_ge(c, 0);
			n++;
		}
		ck_assert_int_eq(wait_for_async(0), 0);
		closedir(dir);
		ck_assert_int_eq(n, N + 2);
		for (int i = 0; i < n; i++) {
			ck_assert_msg(res[i] == 0, "%s: %ld", names[i], res[i]);
			if (names[i][0] == 'm')
				ck_assert_uint_eq(sb[i].stx_size,
				                  (unsigned long)atoi(names[i] + 1));
		}
		ck_assert_uint_eq(async_engine_inflight(eng), 0);
		/* The first round waits the read-ahead out; the second leaves
		 * it to destroy (it may still hold its descriptor here). */
		if (round == 1)
			break;
		for (int k = 0; k < 500 && count_fds(path) != base; k++) {
			struct pollfd p = { .fd = async_engine_fd(eng), .events = POLLIN };
			ck_assert_int_ge(async_engine_process(eng, 0), 0);
			poll(&p, 1, 10);
		}
		ck_assert_int_eq(count_fds(path), base);
	}
	async_engine_destroy(eng);
	eng = NULL;
	ck_assert_int_eq(count_fds(path), base);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "m%04d", i);
		unlinkat(many, name, 0);
	}
	close(many);
	ck_assert_int_eq(unlinkat(tdfd, "many", AT_REMOVEDIR), 0);
}
END_TEST

static int cb_calls;
static long cb_res;
static int in_submit;

static void cb(void *arg, long res)
{
	ck_assert_int_eq(in_submit, 0);
	ck_assert_ptr_eq(arg, &cb_calls);
	cb_calls++;
	cb_res = res;
}

START_TEST(callbacks)
{
	unsigned long a[5];
	struct statx sb;
	long r = 0;
	statx_args(a, "file", &sb);
	/* error return: never called */
	in_submit = 1;
	ck_assert_int_eq(async_submit_cb(0, &r, 4242, a, cb, &cb_calls), -ENOSYS);
	ck_assert_int_eq(async_submit_cb(0, &r, ASYNC_STATX, a, NULL, NULL), -EINVAL);
	/* synchronous return: never called */
	ck_assert_int_eq(async_submit_cb(ASYNC_F_SYNC, &r, ASYNC_STATX, a, cb,
	                                 &cb_calls), 0);
	ck_assert_int_eq(r, 0);
	/* pending: called once, from process, after *result was written */
	long c = async_submit_cb(0, &r, ASYNC_STATX, a, cb, &cb_calls);
	ck_assert_int_gt(c, 0);
	/* many more submits, some reaping completions inside submit */
	static long more[2000];
	int nsync = 0;
	for (int i = 0; i < 2000; i++) {
		long k = async_submit_cb(0, &more[i], ASYNC_STATX, a, cb, &cb_calls);
		ck_assert_int_ge(k, 0);
		nsync += k == 0;
	}
	in_submit = 0;
	ck_assert_int_eq(cb_calls, 0);
	for (int i = 0; i < 100000 && cb_calls + nsync < 2001; i++) {
		struct pollfd p = { async_engine_fd(eng), POLLIN, 0 };
		ck_assert_int_ge(async_engine_process(eng, 0), 0);
		int t = async_engine_timeout_ms(eng);
		if (cb_calls + nsync < 2001)
			poll(&p, 1, t < 0 ? 100 : t);
	}
	ck_assert_int_eq(cb_calls + nsync, 2001);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(cb_res, 0);
	/* callback ops are not the thread's to wait for */
	ck_assert_uint_eq(async_outstanding(), 0);
}
END_TEST

START_TEST(destroy_cancels_pending)
{
	make_pipes();
	char b[4];
	unsigned long a[3] = { A((long)pipes[0][0]), A(b), sizeof(b) };
	long r = 0;
	long c = async_submit(0, &r, ASYNC_READ, a);
	ck_assert_int_gt(c, 0);
	if (strcmp(want_backend(), "threads") == 0) {
		/* A pool thread is blocked in read(): destroy waits it out. */
		ck_assert_int_eq(write(pipes[0][1], "z", 1), 1);
	}
	async_engine_destroy(eng);
	eng = NULL;
	ck_assert_int_ne(r, c);
	ck_assert(r == -ECANCELED || r == 1 || r == -EINTR);
}
END_TEST

/* ---- ASYNC_CALL: the caller's function on a pool thread ---- */
static pid_t call_tid;

static int call_policy;

static long twice(void *arg)
{
	call_tid = gettid();
	call_policy = sched_getscheduler(0);
	return *(long *)arg * 2;
}

static int call_cbs;
static long call_cb_res;

static void call_cb(void *arg, long res)
{
	call_cbs++;
	call_cb_res = res;
}

START_TEST(function_call)
{
	long v = 21, r = 0;
	unsigned long a[2] = { A(twice), A(&v) };
	const struct async_call_info *i = async_call_info(ASYNC_CALL);
	ck_assert_str_eq(i->name, "call");
	ck_assert_uint_eq(i->nargs, 2);
	ck_assert_uint_eq(i->live_ptrs, 1u << 1);
	/* Pending on either backend (never the ring, never inline), run
	 * on another thread; the result is the function's. */
	long c = async_submit(0, &r, ASYNC_CALL, a);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 42);
	ck_assert_int_eq(r, 42);
	ck_assert_int_ne(call_tid, gettid());
	ck_assert_int_ne(call_policy, SCHED_IDLE);
	/* ASYNC_F_BACKGROUND: on the SCHED_IDLE threads (where the kernel
	 * allows them). */
	c = async_submit(ASYNC_F_BACKGROUND, &r, ASYNC_CALL, a);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 42);
	ck_assert_int_ne(call_tid, gettid());
	ck_assert_int_eq(call_policy, SCHED_IDLE);
	/* ASYNC_F_SYNC: here, now. */
	call_tid = 0;
	ck_assert_int_eq(async_submit(ASYNC_F_SYNC, &r, ASYNC_CALL, a), 0);
	ck_assert_int_eq(r, 42);
	ck_assert_int_eq(call_tid, gettid());
	/* The blocking wrapper. */
	v = 5;
	ck_assert_int_eq(fibril_call(twice, &v), 10);
	ck_assert_int_ne(call_tid, gettid());
	/* Callback style. */
	v = -4;
	c = async_submit_cb(0, &r, ASYNC_CALL, a, call_cb, NULL);
	ck_assert_int_gt(c, 0);
	for (int k = 0; k < 1000 && !call_cbs; k++) {
		struct pollfd p = { async_engine_fd(eng), POLLIN, 0 };
		ck_assert_int_ge(async_engine_process(eng, 0), 0);
		if (!call_cbs)
			poll(&p, 1, 10);
	}
	ck_assert_int_eq(call_cbs, 1);
	ck_assert_int_eq(call_cb_res, -8);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
	/* Without an engine the wrapper calls it here. */
	async_engine_destroy(eng);
	eng = NULL;
	v = 7;
	ck_assert_int_eq(fibril_call(twice, &v), 14);
	ck_assert_int_eq(call_tid, gettid());
	ck_assert_int_eq(async_submit(0, &r, ASYNC_CALL, a), -ENXIO);
}
END_TEST

/* Blocks its pool thread until a byte arrives on the pipe. */
static long wait_pipe(void *arg)
{
	char b;
	return read(*(int *)arg, &b, 1);
}

static int ran;
static long mark_ran(void *arg)
{
	ran = 1;
	return 0;
}

/* A call that has not started is dropped by async_cancel(): fn never
 * runs. One pool thread, held by the first call. */
START_TEST(function_call_cancel)
{
	async_engine_destroy(eng);
	eng = NULL;
	setup_engine(0, 1);
	make_pipes();
	long r0 = 0, r1 = 0;
	unsigned long a0[2] = { A(wait_pipe), A(&pipes[0][0]) };
	unsigned long a1[2] = { A(mark_ran), 0 };
	long c0 = async_submit(0, &r0, ASYNC_CALL, a0);
	long c1 = async_submit(0, &r1, ASYNC_CALL, a1);
	ck_assert_int_gt(c0, 0);
	ck_assert_int_gt(c1, 0);
	ck_assert_int_eq(async_cancel(c1), 0);
	ck_assert_int_eq(wait_for_async(c1), -ECANCELED);
	ck_assert_int_eq(ran, 0);
	ck_assert_int_eq(write(pipes[0][1], "z", 1), 1);
	ck_assert_int_eq(wait_for_async(c0), 1);
	/* A running call is not interrupted: it completes with its value. */
	c0 = async_submit(0, &r0, ASYNC_CALL, a0);
	ck_assert_int_gt(c0, 0);
	for (int k = 0; k < 100; k++)
		async_engine_process(eng, 0);
	usleep(20000);     /* (only makes the running case likelier) */
	ck_assert_int_eq(async_cancel(c0), 0);
	ck_assert_int_eq(write(pipes[0][1], "z", 1), 1);
	long res = wait_for_async(c0);
	ck_assert(res == 1 || res == -ECANCELED);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
}
END_TEST

START_TEST(process_budget)
{
	long r[5];
	long c[5];
	int reaped = 0;
	for (int i = 0; i < 5; i++) {
		c[i] = async_submit(ASYNC_F_NOINLINE, &r[i], ASYNC_NOP, NULL);
		ck_assert_int_gt(c[i], 0);
	}
	for (int k = 0; k < 10000 && reaped < 5; k++) {
		int n = async_engine_process(eng, 1);
		ck_assert_int_ge(n, 0);
		ck_assert_int_le(n, 1);
		reaped += n;
		if (reaped < 5 && async_engine_timeout_ms(eng) != 0) {
			struct pollfd p = { async_engine_fd(eng), POLLIN, 0 };
			poll(&p, 1, 100);
		}
	}
	ck_assert_int_eq(reaped, 5);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(r[i], 0);
		ck_assert_int_eq(wait_for_async(c[i]), 0);
	}
}
END_TEST

static int kicks;

static void kick(void *arg)
{
	ck_assert_ptr_eq(arg, &kicks);
	kicks++;
}

START_TEST(kick_once_per_process)
{
	struct statx sb[3];
	long r[3];
	unsigned long a[5];
	async_engine_set_kick(eng, kick, &kicks);
	statx_args(a, "file", &sb[0]);
	ck_assert_int_gt(async_submit(ASYNC_F_NOINLINE, &r[0], ASYNC_STATX, a), 0);
	ck_assert_int_eq(kicks, 1);  /* queued: the host must process soon */
	ck_assert_int_eq(async_engine_timeout_ms(eng), 0);
	statx_args(a, "file", &sb[1]);
	ck_assert_int_gt(async_submit(ASYNC_F_NOINLINE, &r[1], ASYNC_STATX, a), 0);
	ck_assert_int_eq(kicks, 1);  /* at most once between two process calls */
	ck_assert_int_ge(async_engine_process(eng, 0), 0);
	statx_args(a, "file", &sb[2]);
	ck_assert_int_gt(async_submit(ASYNC_F_NOINLINE, &r[2], ASYNC_STATX, a), 0);
	ck_assert_int_eq(kicks, 2);
	async_engine_set_kick(eng, NULL, NULL);
	ck_assert_int_eq(wait_for_async(0), 0);
	ck_assert_int_eq(kicks, 2);
	ck_assert_int_eq(r[0] | r[1] | r[2], 0);
}
END_TEST

/* What Docker's default seccomp profile (EPERM) or an old kernel
 * (ENOSYS) does to io_uring_setup. Check runs each test in its own
 * child, so the filter dies with it. */
static void deny_io_uring(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

static void fallback_check(int err)
{
	struct async_engine_opts o = { 0 };
	async_engine_t *e;
	async_engine_destroy(eng);
	eng = NULL;
	deny_io_uring(err);
	nlogged = 0;
	o.log = logcb;
	o.backend = "uring";  /* insisting on it fails with the cause */
	ck_assert_int_eq(async_engine_create(&o, &e), -err);
	o.backend = NULL;     /* auto: falls back, says so once */
	unsetenv("FIBRIL_BACKEND");  /* "uring" there would insist too */
	ck_assert_int_eq(async_engine_create(&o, &e), 0);
	ck_assert_str_eq(async_engine_backend(e), "threads");
	ck_assert_ptr_nonnull(strstr(logged, "threads"));
	struct statx sb;
	long r;
	unsigned long a[5];
	statx_args(a, "file", &sb);
	long c = async_submit(ASYNC_F_NOINLINE, &r, ASYNC_STATX, a);
	ck_assert_int_gt(c, 0);
	ck_assert_int_eq(wait_for_async(c), 0);
	ck_assert_uint_eq(sb.stx_size, 6);
	async_engine_destroy(e);
}

START_TEST(fallback_eperm)
{
	fallback_check(EPERM);
}
END_TEST

START_TEST(fallback_enosys)
{
	fallback_check(ENOSYS);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("async");
	TCase *tc = tcase_create("thread");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, engine_logs_backend_once);
	tcase_add_test(tc, engine_forced_threads);
	tcase_add_test(tc, submit_negative);
	tcase_add_test(tc, submit_zero_cached_open);
	tcase_add_test(tc, submit_zero_sync_flag);
	tcase_add_test(tc, engine_stats);
	tcase_add_test(tc, submit_cookie_and_wait);
	tcase_add_test(tc, completion_visible_in_memory);
	tcase_add_test(tc, cancel_before_completion);
	tcase_add_test(tc, cancel_after_completion);
	tcase_add_test(tc, parallelism_limit);
	tcase_add_test(tc, every_call);
	tcase_add_test(tc, every_wrapper);
	tcase_add_test(tc, errors_passed_through);
	tcase_add_test(tc, call_table);
	tcase_add_test(tc, wait_all_many);
	tcase_add_test(tc, dir_ahead_readdir_loop);
	tcase_add_test(tc, callbacks);
	tcase_add_test(tc, destroy_cancels_pending);
	tcase_add_test(tc, kick_once_per_process);
	tcase_add_test(tc, process_budget);
	tcase_add_test(tc, function_call);
	tcase_add_test(tc, function_call_cancel);
	tcase_add_test(tc, fallback_eperm);
	tcase_add_test(tc, fallback_enosys);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite);
