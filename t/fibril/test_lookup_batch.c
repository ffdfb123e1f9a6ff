/* Batched stats (fibril/lookup_batch.c): on a local file system a scan
 * stats runs of entries with one pool call. The entries must be exactly
 * what statx says, per-entry errors must land on their entry, vanished
 * entries are skipped, and closing a scan or destroying the engine with
 * batches in flight must neither leak nor touch freed memory (run under
 * ASan by make check-unit). lk_stats.statx_batches proves the batch path
 * ran (test_lookup_slowfs checks that FUSE never takes it). */
#include "first.h"

#include <grp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "lookup_check.h"

TL_ROOT_FIXTURE

static uint64_t batches(void)
{
	struct lk_stats st;
	lk_stats(&st);
	return st.statx_batches;
}

/* @n entries in @sub: files of size i and varied modes, a directory and
 * symlinks (to a file, dangling, escaping) now and then. */
static void make_mixed(const char *sub, unsigned n)
{
	char rel[64], body[512];
	tl_mkdir(sub);
	memset(body, 'x', sizeof(body));
	for (unsigned i = 0; i < n; i++) {
		if (i % 50 == 7) {
			snprintf(rel, sizeof(rel), "%s/d%04u", sub, i);
			tl_mkdir(rel);
			continue;
		}
		if (i % 37 == 5) {
			snprintf(rel, sizeof(rel), "%s/l%04u", sub, i);
			tl_symlink(i % 3 == 0 ? "f0000" : i % 3 == 1 ? "nowhere"
				   : "/etc", rel);
			continue;
		}
		char p[600];
		snprintf(p, sizeof(p), "%s/%s/f%04u", tl_dir, sub, i);
		int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		ck_assert_int_ge(fd, 0);
		size_t len = i % sizeof(body);
		ck_assert_int_eq(write(fd, body, len), (long)len);
		close(fd);
		ck_assert_int_eq(chmod(p, i % 4 == 0 ? 0600 : i % 4 == 1 ? 0755
				       : i % 4 == 2 ? 0444 : 0640), 0);
	}
}

/* Every entry of a scan of @sub against the test's own statx, readlink
 * and stat of the target; returns the number of entries. */
static size_t check_scan(const char *sub, const struct lk_scan_opts *o)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/%s", tl_dir, sub);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, sub, o, &s), 0);
	const struct lk_entry *e;
	size_t n, seen = 0;
	int rc;
	struct tl_names got = { 0 }, want = { 0 };
	/* Delivered at most min(local window, 512) at a time. */
	size_t most = o->local_window && o->local_window < 512
		? o->local_window : 512;
	while ((rc = lk_scan_next(s, &e, &n)) == 1) {
		ck_assert_uint_le(n, most);
		for (size_t i = 0; i < n; i++, seen++) {
			const struct lk_entry *x = &e[i];
			struct statx st;
			ck_assert_int_eq(statx(dfd, x->name, AT_SYMLINK_NOFOLLOW,
					       STATX_BASIC_STATS, &st), 0);
			ck_assert_msg(x->err == 0, "%s: err %d", x->name, x->err);
			ck_assert_uint_eq(x->stx.stx_mode, st.stx_mode);
			ck_assert_uint_eq(x->stx.stx_ino, st.stx_ino);
			ck_assert_uint_eq(x->stx.stx_size, st.stx_size);
			ck_assert_uint_eq(x->stx.stx_blocks, st.stx_blocks);
			ck_assert_uint_eq(x->stx.stx_nlink, st.stx_nlink);
			ck_assert_uint_eq(x->stx.stx_uid, st.stx_uid);
			ck_assert_uint_eq(x->stx.stx_gid, st.stx_gid);
			ck_assert_int_eq(x->stx.stx_mtime.tv_sec, st.stx_mtime.tv_sec);
			ck_assert_uint_eq(x->stx.stx_mtime.tv_nsec,
					  st.stx_mtime.tv_nsec);
			if (S_ISLNK(st.stx_mode)) {
				char t[256];
				ssize_t l = readlinkat(dfd, x->name, t, sizeof(t) - 1);
				ck_assert_int_gt(l, 0);
				t[l] = 0;
				ck_assert_ptr_nonnull(x->link);
				ck_assert_str_eq(x->link, t);
				if (!strcmp(t, "f0000")) {
					ck_assert_uint_eq(x->target_mode, S_IFREG);
					ck_assert_int_eq(x->target_err, 0);
				} else {
					ck_assert_uint_eq(x->target_mode, 0);
					ck_assert_int_eq(x->target_err,
							 !strcmp(t, "/etc") ? -EXDEV : -ENOENT);
				}
			} else {
				ck_assert_ptr_null(x->link);
			}
			tl_names_add(&got, x->name);
		}
	}
	ck_assert_int_eq(rc, 0);
	lk_scan_close(s);
	close(dfd);
	tl_ls("", dir, &want);
	tl_names_sort(&got);   /* the order is test_lookup_scan's business */
	tl_names_eq(&got, &want);
	tl_names_free(&got);
	tl_names_free(&want);
	return seen;
}

static void like_statx_runs(void *arg)
{
	const char *sub = arg;
	/* LK_SCAN_BACKGROUND: batches on the SCHED_IDLE threads, and a
	 * name-sorted scan stats while it still reads names. */
	for (int bg = 0; bg < 2; bg++)
	for (int sort = LK_SORT_NONE; sort <= LK_SORT_MTIME; sort++) {
		for (unsigned w = 1; w <= LK_WINDOW_MAX; w *= 16) {
			struct lk_scan_opts o = { .sort = sort,
				.local_window = w,
				.flags = bg ? LK_SCAN_BACKGROUND : 0 };
			uint64_t b0 = batches();
			ck_assert_uint_eq(check_scan(sub, &o), 300);
			/* Batches of at most half the local window. */
			unsigned k = w / 2 ? w / 2 : 1;
			ck_assert_uint_ge(batches() - b0, (300 + k - 1) / k);
		}
	}
}

START_TEST(like_statx)
{
	make_mixed("m", 300);
	/* Plain calls (no engine: each batch runs inline), then fibrils on
	 * the engine (batches on pool threads). */
	like_statx_runs("m");
	tl_run_fibril(like_statx_runs, "m");
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_uint_eq(st.live_flights, 0);
}
END_TEST

/* The same on tmpfs, when /dev/shm is one (before() makes and after()
 * removes shm_dir: a failed test leaves nothing behind). */
static char shm_dir[64];

START_TEST(like_statx_tmpfs)
{
	if (!shm_dir[0]) {
		fprintf(stderr, "no writable tmpfs at /dev/shm: part skipped\n");
		return;
	}
	lk_root_close(root);
	ck_assert_int_eq(lk_root_open(shm_dir, NULL, &root), 0);
	char saved[sizeof(tl_dir)];
	memcpy(saved, tl_dir, sizeof(saved));
	snprintf(tl_dir, sizeof(tl_dir), "%s", shm_dir);
	make_mixed("m", 300);
	tl_run_fibril(like_statx_runs, "m");
	memcpy(tl_dir, saved, sizeof(saved));
}
END_TEST

/* EACCES on every entry (a directory we may read but not search): each
 * entry carries it, none is dropped. Root searches any directory, so as
 * root the test first becomes nobody. */
static void eacces_runs(void *arg)
{
	for (int sort = LK_SORT_NONE; sort <= LK_SORT_NAME; sort++) {
		struct lk_scan_opts o = { .sort = sort, .local_window = 128 };
		uint64_t b0 = batches();
		lk_scan_t *s;
		ck_assert_int_eq(lk_scan_open(root, "locked", &o, &s), 0);
		const struct lk_entry *e;
		size_t n, seen = 0;
		int rc;
		while ((rc = lk_scan_next(s, &e, &n)) == 1)
			for (size_t i = 0; i < n; i++, seen++) {
				ck_assert_msg(e[i].err == -EACCES, "%s: err %d",
					      e[i].name, e[i].err);
				ck_assert_uint_eq(e[i].stx.stx_mask, 0);
				ck_assert_int_eq(strncmp(e[i].name, "f", 1), 0);
			}
		ck_assert_int_eq(rc, 0);
		ck_assert_uint_eq(seen, 150);
		ck_assert_uint_ge(batches() - b0, 3);
		lk_scan_close(s);
	}
}

START_TEST(eacces_per_entry)
{
	if (geteuid() == 0) {
		const char *fk = getenv("CK_FORK");
		if (fk && !strcmp(fk, "no")) {
			fprintf(stderr, "root without CK_FORK: EACCES part skipped\n");
			return;
		}
		/* nobody must reach tl_dir: the run directory above it is
		 * root's (0700). */
		char up[256];
		snprintf(up, sizeof(up), "%s", tl_dir);
		*strrchr(up, '/') = 0;
		ck_assert_int_eq(chmod(up, 0711), 0);
		ck_assert_int_eq(chown(tl_dir, 65534, 65534), 0);
		ck_assert_int_eq(setgroups(0, NULL), 0);
		ck_assert_int_eq(setresgid(65534, 65534, 65534), 0);
		ck_assert_int_eq(setresuid(65534, 65534, 65534), 0);
	}
	tl_mkdir("locked");
	for (unsigned i = 0; i < 150; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "locked/f%03u", i);
		tl_mkfile(rel, NULL);
	}
	char p[512];
	snprintf(p, sizeof(p), "%s/locked", tl_dir);
	ck_assert_int_eq(chmod(p, 0444), 0);
	eacces_runs(NULL);
	tl_run_fibril(eacces_runs, NULL);
	ck_assert_int_eq(chmod(p, 0755), 0);
	/* As nobody, teardown could not remove tl_dir from root's run
	 * directory: after() removes it with the rest. */
	if (getuid() == 65534)
		tl_dir[0] = 0;
}
END_TEST

/* Entries deleted while the scan runs: batches already filled with
 * their names report ENOENT for them, which the scan skips. */
struct del_case { enum lk_sort sort; unsigned flags; };

static void deleted_runs(void *arg)
{
	const struct del_case *dc = arg;
	struct lk_scan_opts o = { .sort = dc->sort, .local_window = 256,
				  .flags = dc->flags };
	uint64_t b0 = batches();
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "del", &o, &s), 0);
	const struct lk_entry *e;
	size_t n;
	struct tl_names got = { 0 };
	ck_assert_int_eq(lk_scan_next(s, &e, &n), 1);
	for (size_t i = 0; i < n; i++)
		tl_names_add(&got, e[i].name);
	size_t first = got.n;
	/* Every name not yet delivered whose number is odd goes. */
	char p[512];
	for (unsigned i = 1; i < 3000; i += 2) {
		char nm[32];
		snprintf(nm, sizeof(nm), "f%04u", i);
		bool delivered = false;
		for (size_t k = 0; k < first; k++)
			delivered |= !strcmp(got.v[k], nm);
		if (delivered)
			continue;
		snprintf(p, sizeof(p), "%s/del/%s", tl_dir, nm);
		ck_assert_int_eq(unlink(p), 0);
	}
	int rc;
	while ((rc = lk_scan_next(s, &e, &n)) == 1)
		for (size_t i = 0; i < n; i++) {
			ck_assert_msg(e[i].err == 0, "%s: err %d", e[i].name,
				      e[i].err);
			/* The size says which file this is: f%04u has u bytes
			 * modulo 7 (a record filled from another's stat would
			 * not match). */
			unsigned num = (unsigned)atoi(e[i].name + 1);
			ck_assert_uint_eq(e[i].stx.stx_size, num % 7);
			tl_names_add(&got, e[i].name);
		}
	ck_assert_int_eq(rc, 0);
	lk_scan_close(s);
	ck_assert_uint_ge(batches() - b0, 1);
	/* All even names exactly once; odd ones only if stat'ed before the
	 * unlink: at most the window in flight after the first delivery. */
	tl_names_sort(&got);
	size_t even = 0, odd = 0;
	for (size_t i = 0; i < got.n; i++) {
		if (i)
			ck_assert_str_ne(got.v[i - 1], got.v[i]);
		if (atoi(got.v[i] + 1) % 2)
			odd++;
		else
			even++;
	}
	ck_assert_uint_eq(even, 1500);
	/* (A background name-sorted scan stats while it reads the names:
	 * any of them may have been stat'ed before the first delivery.) */
	if (!dc->flags)
		ck_assert_uint_le(odd, first + 256);
	tl_names_free(&got);
}

static void make_del(void)
{
	tl_mkdir("del");
	for (unsigned i = 0; i < 3000; i++) {
		char rel[32], body[8] = "xxxxxxx";
		snprintf(rel, sizeof(rel), "del/f%04u", i);
		body[i % 7] = 0;
		tl_mkfile(rel, body);
	}
}

START_TEST(deleted_sorted)
{
	make_del();
	struct del_case dc = { LK_SORT_NAME, 0 };
	tl_run_fibril(deleted_runs, &dc);
}
END_TEST

START_TEST(deleted_sorted_background)
{
	make_del();
	struct del_case dc = { LK_SORT_NAME, LK_SCAN_BACKGROUND };
	tl_run_fibril(deleted_runs, &dc);
}
END_TEST

START_TEST(deleted_streaming)
{
	make_del();
	struct del_case dc = { LK_SORT_NONE, 0 };
	tl_run_fibril(deleted_runs, &dc);
}
END_TEST

/* Batches in flight at lk_scan_close(), then at engine destruction
 * (outside fibrils: the thread drives the engine). */
START_TEST(close_and_destroy_in_flight)
{
	make_mixed("big", 5000);
	for (int round = 0; round < 3; round++) {
		async_engine_t *e;
		ck_assert_int_eq(async_engine_create(NULL, &e), 0);
		for (int sort = LK_SORT_NONE; sort <= LK_SORT_MTIME; sort++) {
			struct lk_scan_opts o = { .sort = sort, .local_window = 256,
				.flags = round == 1 ? LK_SCAN_BACKGROUND : 0 };
			lk_scan_t *s;
			ck_assert_int_eq(lk_scan_open(root, "big", &o, &s), 0);
			const struct lk_entry *ent;
			size_t n;
			ck_assert_int_eq(lk_scan_next(s, &ent, &n), 1);
			if (round == 2 && sort == LK_SORT_NAME) {
				/* Open across the destruction: the batches come
				 * back cancelled or done, then the scan closes. */
				async_engine_destroy(e);
				e = NULL;
				lk_scan_close(s);
				break;
			}
			lk_scan_close(s);
		}
		if (e && round == 1) {
			/* Let the cancelled batches come back first. */
			while (async_engine_inflight(e) > 0) {
				struct pollfd p = { async_engine_fd(e), POLLIN, 0 };
				async_engine_process(e, 0);
				poll(&p, 1, 10);
			}
			async_engine_process(e, 0);
		}
		/* round 0: destroyed with the batches still out */
		if (e)
			async_engine_destroy(e);
		struct lk_stats st;
		lk_stats(&st);
		ck_assert_uint_eq(st.live_scans, 0);
		ck_assert_uint_eq(st.live_flights, 0);
	}
}
END_TEST

/* A batch that cannot open a descriptor of its own for the directory
 * (none left under RLIMIT_NOFILE) stats through the scan's: every entry
 * as statx says it is, none failed. */
static void no_fd_runs(void *arg)
{
	int dfd = *(int *)arg;
	/* One descriptor left: the scan's own, for the directory. */
	int lowest = fcntl(dfd, F_DUPFD, 0);
	ck_assert_int_ge(lowest, 0);
	close(lowest);
	struct rlimit rl;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = (rlim_t)lowest + 1;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	struct lk_stats st0, st1;
	lk_stats(&st0);
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .local_window = 1024 };
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "p", &o, &s), 0);
	errno = 0;
	ck_assert_int_eq(openat(dfd, ".", O_PATH | O_DIRECTORY), -1);
	ck_assert_int_eq(errno, EMFILE);
	const struct lk_entry *e;
	size_t n, seen = 0;
	int rc;
	while ((rc = lk_scan_next(s, &e, &n)) == 1) {
		for (size_t i = 0; i < n; i++, seen++) {
			struct statx st;
			ck_assert_int_eq(statx(dfd, e[i].name, AT_SYMLINK_NOFOLLOW,
					       STATX_BASIC_STATS, &st), 0);
			ck_assert_msg(e[i].err == 0, "%s: err %d", e[i].name, e[i].err);
			ck_assert_uint_eq(e[i].stx.stx_ino, st.stx_ino);
			ck_assert_uint_eq(e[i].stx.stx_size, st.stx_size);
			ck_assert_uint_eq(e[i].stx.stx_mode, st.stx_mode);
			ck_assert_int_eq(e[i].stx.stx_mtime.tv_sec, st.stx_mtime.tv_sec);
		}
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(seen, 200);
	lk_scan_close(s);
	/* Batches long enough to have tried a descriptor of their own. */
	lk_stats(&st1);
	uint64_t calls = st1.statx_calls - st0.statx_calls;
	uint64_t nb = st1.statx_batches - st0.statx_batches;
	ck_assert_uint_ge(nb, 1);
	ck_assert_uint_ge(calls / nb, 64);
}

START_TEST(no_descriptor_left)
{
	char dir[512], p[600];
	tl_mkdir("p");
	for (unsigned i = 0; i < 200; i++) {
		snprintf(p, sizeof(p), "%s/p/f%04u", tl_dir, i);
		int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, p, i % 64), (long)(i % 64));
		close(fd);
	}
	snprintf(dir, sizeof(dir), "%s/p", tl_dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	/* On the engine: batches go to pool threads, several entries each. */
	tl_run_fibril(no_fd_runs, &dfd);
	close(dfd);
}
END_TEST

static int before(void)
{
	tl_run_dir_begin();
	struct statfs sf;
	if (statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC) {
		snprintf(shm_dir, sizeof(shm_dir), "/dev/shm/lkbatch.XXXXXX");
		if (!mkdtemp(shm_dir))
			shm_dir[0] = 0;
	}
	return 0;
}

static void after(void)
{
	tl_run_dir_end();
	if (shm_dir[0])
		tl_rm_rf(shm_dir);
}

static Suite *suite(void)
{
	Suite *s = suite_create("lookup_batch");
	TCase *tc = tcase_create("batch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, like_statx);
	tcase_add_test(tc, like_statx_tmpfs);
	tcase_add_test(tc, eacces_per_entry);
	tcase_add_test(tc, deleted_sorted);
	tcase_add_test(tc, deleted_sorted_background);
	tcase_add_test(tc, deleted_streaming);
	tcase_add_test(tc, close_and_destroy_in_flight);
	tcase_add_test(tc, no_descriptor_left);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite, .before = before, .after = after);
