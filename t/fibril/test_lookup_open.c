/* lk_open: resolution beneath a root; every escape attempt fails. */
#include "first.h"

#include "lookup_check.h"

static lk_root_t *root;

static void tree(void)
{
	tl_setup();
	tl_mkdir("sub");
	tl_mkfile("file", "hello\n");
	tl_mkfile("sub/inner", "x");
	tl_symlink("/etc", "abs");                /* absolute */
	tl_symlink("/proc/self/root", "magic");   /* absolute to a magic link */
	tl_symlink("..", "up");                   /* to the parent of the root */
	tl_symlink("../..", "sub/up2");
	tl_symlink("l2", "l1");                   /* loop */
	tl_symlink("l1", "l2");
	tl_symlink("sub/inner", "in");            /* stays inside */
	tl_symlink("../file", "sub/rel");         /* inside, through .. */
	tl_symlink("nothere", "dangling");
	ck_assert_int_eq(lk_root_open(tl_dir, NULL, &root), 0);
}

static void untree(void)
{
	lk_root_close(root);
	root = NULL;
	tl_teardown();
}

static int try_open(const char *rel)
{
	struct lk_file f;
	int rc = lk_open(root, rel, O_RDONLY, NULL, &f);
	if (rc == 0) {
		ck_assert_int_ge(f.fd, 0);
		close(f.fd);
	}
	return rc;
}

static void check_escapes(void)
{
	static const struct { const char *path; int err; } cases[] = {
		{ "..", -EXDEV },
		{ "../etc/passwd", -EXDEV },
		{ "sub/../../etc/passwd", -EXDEV },
		{ "sub/../..", -EXDEV },
		{ "/etc/passwd", -EXDEV },
		{ "abs", -EXDEV },
		{ "abs/passwd", -EXDEV },
		{ "magic", -EXDEV },
		{ "magic/etc/passwd", -EXDEV },
		{ "up", -EXDEV },
		{ "up/x", -EXDEV },
		{ "sub/up2", -EXDEV },
		{ "l1", -ELOOP },
		{ "dangling", -ENOENT },
		{ "missing", -ENOENT },
		{ "file/x", -ENOTDIR },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = try_open(cases[i].path);
		ck_assert_msg(rc == cases[i].err, "open \"%s\": got %d (%s), want %d",
			      cases[i].path, rc, strerror(-rc), cases[i].err);
	}
	ck_assert_int_eq(try_open("file"), 0);
	ck_assert_int_eq(try_open("in"), 0);
	ck_assert_int_eq(try_open("sub/rel"), 0);
	ck_assert_int_eq(try_open(""), 0);
	ck_assert_int_eq(try_open("sub/./inner"), 0);
	ck_assert_int_eq(try_open("sub/../file"), 0);
}

START_TEST(escapes_without_engine)
{
	check_escapes();
}
END_TEST

static void escapes_fibril(void *arg)
{
	check_escapes();
}

START_TEST(escapes_in_fibril)
{
	tl_run_fibril(escapes_fibril, NULL);
}
END_TEST

START_TEST(symlinks_never)
{
	struct lk_root_opts o = { .symlinks = LK_SYMLINKS_NEVER };
	lk_root_t *r;
	ck_assert_int_eq(lk_root_open(tl_dir, &o, &r), 0);
	struct lk_file f;
	ck_assert_int_eq(lk_open(r, "in", O_RDONLY, NULL, &f), -ELOOP);
	ck_assert_int_eq(lk_open(r, "sub/rel", O_RDONLY, NULL, &f), -ELOOP);
	ck_assert_int_eq(lk_open(r, "file", O_RDONLY, NULL, &f), 0);
	close(f.fd);
	lk_root_close(r);
}
END_TEST

/* LK_SYMLINKS_FOLLOW_ANY: links lead anywhere, magic links still not;
 * the walk with LK_LOOKUP_STOP_SYMLINK still stops at the first one. */
START_TEST(symlinks_follow_any)
{
	struct lk_root_opts o = { .symlinks = LK_SYMLINKS_FOLLOW_ANY };
	lk_root_t *r;
	ck_assert_int_eq(lk_root_open(tl_dir, &o, &r), 0);
	struct lk_file f;
	ck_assert_int_eq(lk_open(r, "abs/passwd", O_RDONLY, NULL, &f), 0);
	ck_assert(S_ISREG(f.stx.stx_mode));
	close(f.fd);
	ck_assert_int_eq(lk_open(r, "up", O_RDONLY | O_DIRECTORY, NULL, &f), 0);
	close(f.fd);
	ck_assert_int_eq(lk_open(r, "in", O_RDONLY, NULL, &f), 0);
	close(f.fd);
	ck_assert_int_eq(lk_open(r, "magic/etc/passwd", O_RDONLY, NULL, &f), -ELOOP);
	ck_assert_int_eq(lk_open(r, "l1", O_RDONLY, NULL, &f), -ELOOP);
	struct lk_lookup_opts lo = { .oflags = O_PATH, .flags = LK_LOOKUP_STOP_SYMLINK };
	struct lk_lookup l;
	ck_assert_int_eq(lk_lookup(r, "abs/passwd", &lo, &l), 0);
	ck_assert_int_eq(l.stopped, 1);
	ck_assert_str_eq(l.link_target, "/etc");
	ck_assert_str_eq(l.path, "abs");
	lk_lookup_release(&l);
	/* a reference outlives the opener's */
	lk_root_t *r2 = lk_root_ref(r);
	lk_root_close(r);
	ck_assert_int_eq(lk_open(r2, "file", O_RDONLY, NULL, &f), 0);
	close(f.fd);
	lk_root_close(r2);
	o.symlinks = (enum lk_symlinks)3;
	ck_assert_int_eq(lk_root_open(tl_dir, &o, &r), -EINVAL);
	/* NULL where a result or an object belongs: -EINVAL, not a fault */
	struct lk_lookup lu;
	struct statx sx;
	lk_scan_t *sc;
	ck_assert_int_eq(lk_root_open(NULL, NULL, &r), -EINVAL);
	ck_assert_int_eq(lk_root_open(tl_dir, NULL, NULL), -EINVAL);
	ck_assert_int_eq(lk_open(NULL, "file", O_RDONLY, NULL, &f), -EINVAL);
	ck_assert_int_eq(lk_open(root, "file", O_RDONLY, NULL, NULL), -EINVAL);
	ck_assert_int_eq(lk_lookup(NULL, "file", NULL, &lu), -EINVAL);
	ck_assert_int_eq(lk_lookup(root, "file", NULL, NULL), -EINVAL);
	ck_assert_int_eq(lk_stat(root, "file", NULL, NULL), -EINVAL);
	ck_assert_int_eq(lk_stat(NULL, "file", NULL, &sx), -EINVAL);
	ck_assert_int_eq(lk_scan_open(NULL, ".", NULL, &sc), -EINVAL);
	ck_assert_int_eq(lk_scan_open(root, ".", NULL, NULL), -EINVAL);
	ck_assert_int_eq(lk_cred_new(1, 1, 0, NULL, NULL), -EINVAL);
	lk_op_cancel(NULL);
}
END_TEST

/* A root whose own entries are magic links: RESOLVE_NO_MAGICLINKS. */
START_TEST(magic_links)
{
	lk_root_t *r;
	ck_assert_int_eq(lk_root_open("/proc/self", NULL, &r), 0);
	struct lk_file f;
	ck_assert_int_eq(lk_open(r, "root", O_RDONLY, NULL, &f), -ELOOP);
	ck_assert_int_eq(lk_open(r, "root/etc/passwd", O_RDONLY, NULL, &f), -ELOOP);
	ck_assert_int_eq(lk_open(r, "cwd", O_RDONLY, NULL, &f), -ELOOP);
	ck_assert_int_eq(lk_open(r, "exe", O_PATH, NULL, &f), -ELOOP);
	lk_root_close(r);
}
END_TEST

START_TEST(result_has_statx)
{
	struct lk_file f;
	ck_assert_int_eq(lk_open(root, "file", O_RDONLY, NULL, &f), 0);
	ck_assert_uint_eq(f.stx.stx_size, 6);
	ck_assert(S_ISREG(f.stx.stx_mode));
	char buf[8];
	ck_assert_int_eq(read(f.fd, buf, sizeof(buf)), 6);
	ck_assert_int_ne(fcntl(f.fd, F_GETFD) & FD_CLOEXEC, 0);
	close(f.fd);
	ck_assert_int_eq(lk_open(root, "sub", O_RDONLY | O_DIRECTORY, NULL, &f), 0);
	ck_assert(S_ISDIR(f.stx.stx_mode));
	close(f.fd);
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_uint_eq(st.live_ops, 0);
}
END_TEST

START_TEST(cancelled_group_refuses)
{
	lk_group_t *g;
	ck_assert_int_eq(lk_group_new(&g), 0);
	lk_group_cancel(g);
	struct lk_file f;
	ck_assert_int_eq(lk_open(root, "file", O_RDONLY, g, &f), -ECANCELED);
	lk_scan_t *s;
	struct lk_scan_opts so = { .group = g };
	ck_assert_int_eq(lk_scan_open(root, "", &so, &s), -ECANCELED);
	lk_group_free(g);
}
END_TEST

struct cbres { int calls, res; };

static void record(void *arg, int res, const struct lk_file *f)
{
	struct cbres *r = arg;
	r->calls++;
	r->res = res;
	if (res == 0)
		close(f->fd);
}

static void cb_open_fibril(void *arg)
{
	struct lk_file f;
	/* Cached: completes inline, no callback. */
	int rc = lk_open_start(root, "file", O_RDONLY, NULL, &f,
			       (lk_open_cb)abort, NULL, NULL);
	ck_assert_int_eq(rc, 0);
	close(f.fd);
	/* An escape may need the slow path (RESOLVE_CACHED gives up on some
	 * ".." walks): then the error comes through the callback. */
	struct cbres r = { 0, 0 };
	rc = lk_open_start(root, "up", O_RDONLY, NULL, &f, record, &r, NULL);
	if (rc == 1) {
		ck_assert_int_eq(r.calls, 0);   /* never from inside the call */
		while (!r.calls)
			fibril_yield();
		rc = r.res;
	}
	ck_assert_int_eq(rc, -EXDEV);
	ck_assert_int_eq(lk_open_start(root, "file", O_RDONLY, NULL, &f, NULL,
				       NULL, NULL), -EINVAL);
}

START_TEST(callback_style_inline)
{
	tl_run_fibril(cb_open_fibril, NULL);
}
END_TEST

/* Opens the FIFO for writing once an open for reading waits on a
 * backend (ENXIO until then), from a fibril of its own. */
static void fifo_writer(void *arg)
{
	char p[512];
	uint64_t until = fibril_now_ns() + 5000000000ull;

	snprintf(p, sizeof(p), "%s/pipe", tl_dir);
	for (;;) {
		int fd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			*(int *)arg = fd;
			return;
		}
		ck_assert_int_eq(errno, ENXIO);
		ck_assert_msg(fibril_now_ns() < until, "no reader came");
		fibril_park_until(fibril_now_ns() + 1000000);
	}
}

struct fifo_res { int calls, res, fd; mode_t mode; };

static void fifo_record(void *arg, int res, const struct lk_file *f)
{
	struct fifo_res *r = arg;

	r->calls++;
	r->res = res;
	if (res == 0) {
		r->fd = f->fd;
		r->mode = f->stx.stx_mode;
	}
}

static void fifo_lookup_record(void *arg, int res, struct lk_lookup *l)
{
	if (res == 0) {
		struct lk_lookup own = *l;
		fifo_record(arg, res, &own.file);
		own.file.fd = -1;       /* kept by the test */
		lk_lookup_release(&own);
	} else {
		fifo_record(arg, res, NULL);
	}
}

/* An open that may wait in the file system's ->open (a FIFO for its
 * writer) never waits on the caller's thread: lk_open_start(),
 * lk_lookup_start() and fibril_openat2() hand it to a backend. A regular
 * file still opens inline, without the O_NONBLOCK of that try. */
static void fifo_fibril(void *arg)
{
	(void)arg;
	char p[512];
	snprintf(p, sizeof(p), "%s/pipe", tl_dir);
	ck_assert_int_eq(mkfifo(p, 0600), 0);

	struct lk_file f;
	ck_assert_int_eq(lk_open_start(root, "file", O_RDONLY, NULL, &f,
				       (lk_open_cb)abort, NULL, NULL), 0);
	ck_assert_int_eq(fcntl(f.fd, F_GETFL) & O_NONBLOCK, 0);
	close(f.fd);

	for (int way = 0; way < 3; way++) {
		int wfd = -1, rfd = -1;
		struct fifo_res r = { 0, 0, -1, 0 };
		ck_assert_int_eq(fibril_create(NULL, fifo_writer, &wfd, "writer"), 0);
		if (way == 0) {
			ck_assert_int_eq(lk_open_start(root, "pipe", O_RDONLY, NULL, &f,
						       fifo_record, &r, NULL), 1);
		} else if (way == 1) {
			struct lk_lookup_opts o = { .flags = LK_LOOKUP_STOP_SYMLINK,
						    .oflags = O_RDONLY };
			struct lk_lookup l;
			ck_assert_int_eq(lk_lookup_start(root, "pipe", &o, &l,
							 fifo_lookup_record, &r,
							 NULL), 1);
		} else {
			struct open_how how = { .flags = O_RDONLY | O_CLOEXEC };
			int dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			ck_assert_int_ge(dfd, 0);
			r.fd = (int)fibril_openat2(dfd, "pipe", &how);
			close(dfd);
			ck_assert_int_ge(r.fd, 0);
			r.calls = 1;
			struct stat st;
			ck_assert_int_eq(fstat(r.fd, &st), 0);
			r.mode = st.st_mode;
		}
		while (!r.calls || wfd < 0)
			fibril_yield();
		ck_assert_int_eq(r.res, 0);
		rfd = r.fd;
		ck_assert_msg(S_ISFIFO(r.mode), "way %d: mode %o", way, r.mode);
		/* opened as asked: reads wait */
		ck_assert_int_eq(fcntl(rfd, F_GETFL) & O_NONBLOCK, 0);
		ck_assert_int_eq(write(wfd, "x", 1), 1);
		char c;
		ck_assert_int_eq(read(rfd, &c, 1), 1);
		close(wfd);
		close(rfd);
	}
}

START_TEST(fifo_opens_on_a_backend)
{
	tl_run_fibril(fifo_fibril, NULL);
}
END_TEST

START_TEST(scan_dir_escapes)
{
	static const struct { const char *path; int err; } cases[] = {
		{ "..", -EXDEV }, { "up", -EXDEV }, { "abs", -EXDEV },
		{ "magic", -EXDEV }, { "l1", -ELOOP }, { "file", -ENOTDIR },
		{ "missing", -ENOENT },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lk_scan_t *s = NULL;
		int rc = lk_scan_open(root, cases[i].path, NULL, &s);
		if (rc == 0) {
			/* Not known inline: the first next reports it. */
			const struct lk_entry *e;
			size_t n;
			rc = lk_scan_next(s, &e, &n);
			lk_scan_close(s);
		}
		ck_assert_msg(rc == cases[i].err, "scan \"%s\": got %d, want %d",
			      cases[i].path, rc, cases[i].err);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lookup_open");
	TCase *tc = tcase_create("open");
	tcase_add_checked_fixture(tc, tree, untree);
	tcase_add_test(tc, escapes_without_engine);
	tcase_add_test(tc, escapes_in_fibril);
	tcase_add_test(tc, symlinks_never);
	tcase_add_test(tc, symlinks_follow_any);
	tcase_add_test(tc, magic_links);
	tcase_add_test(tc, result_has_statx);
	tcase_add_test(tc, cancelled_group_refuses);
	tcase_add_test(tc, callback_style_inline);
	tcase_add_test(tc, scan_dir_escapes);
	tcase_add_test(tc, fifo_opens_on_a_backend);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite, .before = tl_run_dir_begin, .after = tl_run_dir_end);
