/* Directory scans: order and content against ls, vanishing entries,
 * single flight, cancellation, callback style, pagination. */
#include "first.h"

#include <poll.h>
#include <sys/time.h>

#include "lookup_check.h"

TL_ROOT_FIXTURE

static void make_many(const char *sub, unsigned n)
{
	char p[512];
	if (sub)
		tl_mkdir(sub);
	for (unsigned i = 0; i < n; i++) {
		/* Varied lengths and a few dotfiles. */
		snprintf(p, sizeof(p), "%s/%s/%s%u%s", tl_dir, sub ? sub : ".",
			 i % 97 == 0 ? "." : "", i * 2654435761u % 1000003u,
			 i % 3 ? "x" : "-long-name");
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
}

/* Whole scan into @out; returns the final lk_scan_next() value. */
static int scan_all(const char *dir, const struct lk_scan_opts *o,
		    struct tl_names *out)
{
	lk_scan_t *s;
	int rc = lk_scan_open(root, dir, o, &s);
	if (rc < 0)
		return rc;
	const struct lk_entry *e;
	size_t n;
	while ((rc = lk_scan_next(s, &e, &n)) == 1) {
		ck_assert_uint_ge(n, 1);
		ck_assert_uint_le(n, 512);   /* at most 512 at a time */
		for (size_t i = 0; i < n; i++) {
			ck_assert_int_eq(e[i].err, 0);
			ck_assert_uint_eq(strlen(e[i].name), e[i].namelen);
			ck_assert_uint_ne(e[i].stx.stx_mask & STATX_MODE, 0);
			tl_names_add(out, e[i].name);
		}
	}
	lk_scan_close(s);
	return rc;
}

static void expect_like_ls(const char *dir, const struct lk_scan_opts *o,
			   const char *lsflags, bool sort_ours)
{
	struct tl_names got = { 0 }, want = { 0 };
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tl_dir, dir);
	ck_assert_int_eq(scan_all(dir, o, &got), 0);
	tl_ls(lsflags, path, &want);
	if (sort_ours)
		tl_names_sort(&got);
	tl_names_eq(&got, &want);
	tl_names_free(&got);
	tl_names_free(&want);
}

#define ALL (LK_SCAN_DOTFILES | LK_SCAN_DOTDOT)

START_TEST(empty_dir)
{
	tl_mkdir("e");
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .flags = ALL };
	expect_like_ls("e", &o, "-a", false);
	o.sort = LK_SORT_NONE;
	expect_like_ls("e", &o, "-a", true);
	o.flags = 0;
	expect_like_ls("e", &o, "", true);
}
END_TEST

START_TEST(one_entry)
{
	tl_mkdir("one");
	tl_mkfile("one/only", "1");
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .flags = ALL };
	expect_like_ls("one", &o, "-a", false);
	o.flags = 0;
	expect_like_ls("one", &o, "", false);
}
END_TEST

static void big_checks(void)
{
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .flags = ALL };
	expect_like_ls("big", &o, "-a", false);
	o.flags = 0;   /* dotfiles hidden by default */
	expect_like_ls("big", &o, "", false);
	o.sort = LK_SORT_NONE;
	o.flags = ALL;
	o.window = 256;
	expect_like_ls("big", &o, "-a", true);
	o.sort = LK_SORT_NAME;
	o.flags = LK_SCAN_DESC;
	expect_like_ls("big", &o, "-r", false);
	/* LK_SCAN_BACKGROUND on a local fs (it only moves the calls of
	 * FUSE and network fs: test_lookup_slowfs): the same names. */
	o.flags = ALL | LK_SCAN_BACKGROUND;
	expect_like_ls("big", &o, "-a", false);
	o.sort = LK_SORT_NONE;
	expect_like_ls("big", &o, "-a", true);
}

static void big_fibril(void *arg)
{
	big_checks();
}

/* One tree of 100,000 entries for both ways of running (creating it is
 * most of the cost): plain calls without an engine, then fibrils on the
 * engine. A quick run makes 10,000: still many windows and getdents
 * buffers. */
START_TEST(hundred_thousand)
{
	make_many("big", TMAIN_SIZE(100000, 10000));
	big_checks();
	tl_run_fibril(big_fibril, NULL);
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_uint_eq(st.live_flights, 0);
	ck_assert_uint_eq(st.live_scans, 0);
}
END_TEST

static void set_mtime(const char *rel, time_t t)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", tl_dir, rel);
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };
	ck_assert_int_eq(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void sorts_fibril(void *arg)
{
	const char *d = arg;
	struct lk_scan_opts o = { .sort = LK_SORT_SIZE };
	expect_like_ls(d, &o, "-S", false);
	o.flags = LK_SCAN_DESC;
	expect_like_ls(d, &o, "-Sr", false);
	o.sort = LK_SORT_MTIME;
	o.flags = 0;
	expect_like_ls(d, &o, "-t", false);
	o.flags = LK_SCAN_DESC;
	expect_like_ls(d, &o, "-tr", false);
	o.sort = LK_SORT_NAME;
	o.flags = LK_SCAN_DIRS_FIRST;
	expect_like_ls(d, &o, "--group-directories-first", false);
	o.flags = LK_SCAN_DIRS_FIRST | LK_SCAN_DESC;
	expect_like_ls(d, &o, "--group-directories-first -r", false);
	/* DESC reverses the key only: directories stay first (ls -r does
	 * the same with --group-directories-first). */
	o.sort = LK_SORT_SIZE;
	o.flags = LK_SCAN_DIRS_FIRST;
	expect_like_ls(d, &o, "--group-directories-first -S", false);
	o.flags = LK_SCAN_DIRS_FIRST | LK_SCAN_DESC;
	expect_like_ls(d, &o, "--group-directories-first -Sr", false);
	o.sort = LK_SORT_MTIME;
	o.flags = LK_SCAN_DIRS_FIRST;
	expect_like_ls(d, &o, "--group-directories-first -t", false);
	o.flags = LK_SCAN_DIRS_FIRST | LK_SCAN_DESC;
	expect_like_ls(d, &o, "--group-directories-first -tr", false);
}

START_TEST(sort_modes)
{
	tl_mkdir("s");
	static const char *names[] = { "a", "B", "c", "d10", "d9", "zz", "_" };
	for (unsigned i = 0; i < 7; i++) {
		char rel[64], content[64];
		snprintf(rel, sizeof(rel), "s/%s", names[i]);
		snprintf(content, sizeof(content), "%.*s", (int)((i * 5) % 7) * 3,
			 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		tl_mkfile(rel, content);
		set_mtime(rel, 1000000 + (time_t)((i * 3) % 7) * 100);
	}
	tl_mkdir("s/dir2");
	tl_mkdir("s/Dir1");
	set_mtime("s/dir2", 1000050);
	set_mtime("s/Dir1", 1000150);
	tl_run_fibril(sorts_fibril, "s");
}
END_TEST

/* The same orders over enough entries for the sort to partition (not
 * only its short-segment path), with ties in size, in mtime seconds
 * (told apart by nanoseconds) and in the sort keys' first 8 bytes. */
START_TEST(sort_modes_many)
{
	static const char fill[64] = "0123456789012345678901234567890123456789";
	char rel[128], p[512];
	tl_mkdir("m");
	for (unsigned i = 0; i < 3000; i++) {
		unsigned h = i * 2654435761u;
		snprintf(rel, sizeof(rel), "m/entry-%u%s", h % 100003u,
			 i % 5 ? "" : "-and-a-longer-tail");
		if (i % 11 == 0)
			tl_mkdir(rel);
		else
			tl_mkfile(rel, fill + (h >> 8) % 40);
		snprintf(p, sizeof(p), "%s/%s", tl_dir, rel);
		struct timespec ts[2] = {
			{ 1000000 + (time_t)(h >> 4) % 300, (long)(i % 4) * 250000000 },
		};
		ts[1] = ts[0];
		ck_assert_int_eq(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
	}
	tl_run_fibril(sorts_fibril, "m");
	struct lk_scan_opts o = { .sort = LK_SORT_NAME };
	expect_like_ls("m", &o, "", false);
	o.flags = LK_SCAN_DESC;
	expect_like_ls("m", &o, "-r", false);
}
END_TEST

/* Name order when names share a long prefix and differ at, before and
 * beyond the 8 bytes the sort compares first (lookup_sort.c keys). */
START_TEST(sort_shared_prefix)
{
	static const char *const names[] = {
		"common-prefix-", "common-prefix-a", "common-prefix-abcdefg",
		"common-prefix-abcdefgh", "common-prefix-abcdefghi",
		"common-prefix-abcdefgh0", "common-prefix-abcdefgz",
		"common-prefix-abcdefghij-1", "common-prefix-abcdefghij-2",
		"common-prefix-\xc3\xa9", "common-prefix-\x7f", "common-prefix-B",
		"common-prefix-abcdefgh\xff", "common-prefix-abcdefgh\x01",
	};
	tl_mkdir("p");
	char rel[64];
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		snprintf(rel, sizeof(rel), "p/%s", names[i]);
		tl_mkfile(rel, NULL);
	}
	struct lk_scan_opts o = { .sort = LK_SORT_NAME };
	expect_like_ls("p", &o, "", false);
	o.flags = LK_SCAN_DESC;
	expect_like_ls("p", &o, "-r", false);
	/* and with no common prefix at all */
	tl_mkfile("p/0", NULL);
	o.flags = 0;
	expect_like_ls("p", &o, "", false);
}
END_TEST

/* Names that share a long prefix among a few that do not: the sort's
 * keys start after the prefix most names share, and segments get keys
 * of their own prefixes again (lookup_sort.c sample_prefix, rekey), at
 * several depths here, in both orders and with directories first. */
START_TEST(sort_odd_name)
{
	char rel[128];
	tl_mkdir("o");
	for (unsigned i = 0; i < 2000; i++) {
		unsigned h = i * 2654435761u;
		snprintf(rel, sizeof(rel), "o/photo-from-the-trip-%s-%05u.jpg",
			 i % 3 ? "day-one" : "day-two", h % 100003u);
		if (i % 13 == 0)
			tl_mkdir(rel);
		else
			tl_mkfile(rel, NULL);
	}
	tl_mkfile("o/README", NULL);
	/* names without the prefix most share, before and after them, and
	 * prefixes of that prefix */
	static const char *const odd[] = { "zz-notes", "photo", "photo-from-the-trip",
		"photo-from-the-trip-", "photo-from-the-trip-day-", "photo-from-the-trip-day-o",
		"photo-from-the-trip-dax", "photo-from-the-trip-daz", "photo-from-the-tripe",
		"photo-from-the-trip-day-zzz", "photo-from-the-trip-day-one-",
		"\xff\xfe", "photo-from-the-trip-\xc3\xa9" };
	for (size_t i = 0; i < sizeof(odd) / sizeof(*odd); i++) {
		snprintf(rel, sizeof(rel), "o/%s", odd[i]);
		tl_mkfile(rel, NULL);
	}
	for (unsigned i = 0; i < 20; i++) {
		snprintf(rel, sizeof(rel), "o/new-%u", i);
		tl_mkfile(rel, NULL);
	}
	struct lk_scan_opts o = { .sort = LK_SORT_NAME };
	expect_like_ls("o", &o, "", false);
	o.flags = LK_SCAN_DESC;
	expect_like_ls("o", &o, "-r", false);
	o.flags = LK_SCAN_DIRS_FIRST;
	expect_like_ls("o", &o, "--group-directories-first", false);
}
END_TEST

START_TEST(entry_metadata)
{
	tl_mkdir("m");
	tl_mkfile("m/f", "12345");
	tl_mkdir("m/d");
	tl_symlink("f", "m/lnk");
	tl_symlink("/etc", "m/abs");
	tl_symlink("../..", "m/up");
	tl_symlink("nowhere", "m/dangle");
	tl_symlink("loop", "m/loop");
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .flags = ALL };
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "m", &o, &s), 0);
	const struct lk_entry *e;
	size_t n, seen = 0;
	char p[512];
	while (lk_scan_next(s, &e, &n) == 1)
		for (size_t i = 0; i < n; i++, seen++) {
			struct stat st;
			snprintf(p, sizeof(p), "%s/m/%s", tl_dir, e[i].name);
			ck_assert_int_eq(lstat(p, &st), 0);
			ck_assert_uint_eq(e[i].stx.stx_mode, st.st_mode);
			ck_assert_uint_eq(e[i].stx.stx_ino, st.st_ino);
			ck_assert_uint_eq(e[i].stx.stx_size, (uint64_t)st.st_size);
			ck_assert_uint_eq(e[i].stx.stx_nlink, st.st_nlink);
			ck_assert_int_eq(e[i].stx.stx_mtime.tv_sec, st.st_mtime);
			const char *nm = e[i].name;
			if (!strcmp(nm, "lnk")) {
				ck_assert_str_eq(e[i].link, "f");
				ck_assert_uint_eq(e[i].target_mode, S_IFREG);
				ck_assert_int_eq(e[i].target_err, 0);
			} else if (!strcmp(nm, "abs")) {
				ck_assert_str_eq(e[i].link, "/etc");
				ck_assert_uint_eq(e[i].target_mode, 0);
				ck_assert_int_eq(e[i].target_err, -EXDEV);
			} else if (!strcmp(nm, "up")) {
				ck_assert_int_eq(e[i].target_err, -EXDEV);
			} else if (!strcmp(nm, "dangle")) {
				ck_assert_int_eq(e[i].target_err, -ENOENT);
			} else if (!strcmp(nm, "loop")) {
				ck_assert_int_eq(e[i].target_err, -ELOOP);
			} else {
				ck_assert_ptr_null(e[i].link);
			}
		}
	ck_assert_uint_eq(seen, 9);
	lk_scan_close(s);

	/* ".." of the root describes the root, not its parent. */
	o.flags = LK_SCAN_DOTDOT;
	ck_assert_int_eq(lk_scan_open(root, "", &o, &s), 0);
	ck_assert_int_eq(lk_scan_next(s, &e, &n), 1);
	ck_assert_uint_ge(n, 2);
	ck_assert_str_eq(e[0].name, ".");
	ck_assert_str_eq(e[1].name, "..");
	ck_assert_uint_eq(e[1].stx.stx_ino, e[0].stx.stx_ino);
	lk_scan_close(s);
}
END_TEST

/* Entries deleted after getdents but before their statx are skipped. */
static void deleted_fibril(void *arg)
{
	enum lk_sort sort = *(enum lk_sort *)arg;
	/* The test directory is local: local_window is the one in use. */
	struct lk_scan_opts o = { .sort = sort, .window = 8, .local_window = 8 };
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "del", &o, &s), 0);
	const struct lk_entry *e;
	size_t n;
	struct tl_names got = { 0 };
	ck_assert_int_eq(lk_scan_next(s, &e, &n), 1);
	for (size_t i = 0; i < n; i++)
		tl_names_add(&got, e[i].name);
	size_t before = got.n;
	/* Delete every second file not yet delivered. */
	char p[512];
	unsigned deleted = 0;
	for (unsigned i = 0; i < 2000; i += 2) {
		char nm[32];
		snprintf(nm, sizeof(nm), "f%04u", i);
		bool delivered = false;
		for (size_t k = 0; k < got.n; k++)
			delivered |= !strcmp(got.v[k], nm);
		if (delivered)
			continue;
		snprintf(p, sizeof(p), "%s/del/%s", tl_dir, nm);
		ck_assert_int_eq(unlink(p), 0);
		deleted++;
	}
	int rc;
	while ((rc = lk_scan_next(s, &e, &n)) == 1)
		for (size_t i = 0; i < n; i++) {
			ck_assert_int_eq(e[i].err, 0);
			tl_names_add(&got, e[i].name);
		}
	ck_assert_int_eq(rc, 0);
	lk_scan_close(s);
	ck_assert_uint_ge(before, 1);
	ck_assert_uint_gt(deleted, 900);
	/* Every file left is there once; a deleted one may be there only if
	 * its statx ran before the unlink: at most what the scan may stat
	 * ahead of its reader after the first batch, four windows
	 * (LOOKAHEAD in lookup_flight.c). */
	struct tl_names want = { 0 };
	snprintf(p, sizeof(p), "%s/del", tl_dir);
	tl_ls("", p, &want);
	tl_names_sort(&got);
	size_t extra = 0, k = 0;
	for (size_t i = 0; i < got.n; i++) {
		if (i)
			ck_assert_str_ne(got.v[i - 1], got.v[i]);
		if (k < want.n && !strcmp(got.v[i], want.v[k]))
			k++;
		else
			extra++;
	}
	ck_assert_uint_eq(k, want.n);
	ck_assert_uint_le(extra, 4 * 8);
	ck_assert_uint_eq(got.n, want.n + extra);
	tl_names_free(&got);
	tl_names_free(&want);
}

static void make_del(void)
{
	tl_mkdir("del");
	for (unsigned i = 0; i < 2000; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "del/f%04u", i);
		tl_mkfile(rel, NULL);
	}
}

START_TEST(deleted_mid_scan_sorted)
{
	make_del();
	enum lk_sort sort = LK_SORT_NAME;
	tl_run_fibril(deleted_fibril, &sort);
}
END_TEST

START_TEST(deleted_mid_scan_streaming)
{
	make_del();
	enum lk_sort sort = LK_SORT_NONE;
	tl_run_fibril(deleted_fibril, &sort);
}
END_TEST

/* More names than a sorted scan reads inline (LK__INLINE_GETDENTS
 * calls of about 2,000): its first stat waits for the rest, so a second
 * scan opened at once still finds it joinable. */
#define NSHARED 12000

static void make_shared_dir(void)
{
	tl_mkdir("big");
	for (unsigned i = 0; i < NSHARED; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "big/n%u", i);
		tl_mkfile(rel, NULL);
	}
}

/* A scan opened after another has begun its stats gets its own: a file
 * grown in between shows its new size. */
static void late_not_shared(void)
{
	struct lk_stats a, b;
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .window = 16 };
	const struct lk_entry *e;
	size_t n;
	lk_scan_t *s1, *s2;
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s1), 0);
	ck_assert_int_eq(lk_scan_next(s1, &e, &n), 1);
	ck_assert_str_eq(e[0].name, "n0");
	ck_assert_int_eq(e[0].stx.stx_size, 0);
	tl_mkfile("big/n0", "grown");
	ck_assert_int_eq(lk_scan_joinable(root, &(struct statx){ 0 }, &o), -ENOENT);
	lk_stats(&a);
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s2), 0);
	lk_stats(&b);
	ck_assert_uint_eq(b.shared_joins - a.shared_joins, 0);
	ck_assert_uint_eq(b.getdents_passes - a.getdents_passes, 1);
	ck_assert_int_eq(lk_scan_next(s2, &e, &n), 1);
	ck_assert_str_eq(e[0].name, "n0");
	ck_assert_int_eq(e[0].stx.stx_size, 5);
	lk_scan_close(s1);
	lk_scan_close(s2);
}

/* Two identical scans at once: one getdents pass. */
static void shared_fibril(void *arg)
{
	struct lk_stats a, b;
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .window = 16 };
	lk_scan_t *s1, *s2;
	lk_stats(&a);
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s1), 0);
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s2), 0);
	lk_stats(&b);
	ck_assert_uint_eq(b.getdents_passes - a.getdents_passes, 1);
	ck_assert_uint_eq(b.shared_joins - a.shared_joins, 1);
	/* Interleaved, at different paces; both see everything. */
	struct tl_names g1 = { 0 }, g2 = { 0 };
	const struct lk_entry *e;
	size_t n;
	int r1 = 1, r2 = 1;
	while (r1 == 1 || r2 == 1) {
		if (r1 == 1 && (r1 = lk_scan_next(s1, &e, &n)) == 1)
			for (size_t i = 0; i < n; i++)
				tl_names_add(&g1, e[i].name);
		for (int k = 0; k < 2 && r2 == 1; k++)
			if ((r2 = lk_scan_next(s2, &e, &n)) == 1)
				for (size_t i = 0; i < n; i++)
					tl_names_add(&g2, e[i].name);
	}
	ck_assert_int_eq(r1, 0);
	ck_assert_int_eq(r2, 0);
	tl_names_eq(&g1, &g2);
	ck_assert_uint_eq(g1.n, NSHARED);
	lk_scan_close(s1);
	lk_scan_close(s2);
	lk_stats(&b);
	ck_assert_uint_eq(b.getdents_passes - a.getdents_passes, 1);
	ck_assert_uint_eq(b.statx_calls - a.statx_calls, NSHARED);
	late_not_shared();
	lk_stats(&a);

	/* NO_SHARE, or other options: separate passes. */
	o.flags = LK_SCAN_NO_SHARE;
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s1), 0);
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s2), 0);
	lk_scan_close(s1);
	lk_scan_close(s2);
	o.flags = 0;
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s1), 0);
	o.flags = LK_SCAN_DESC;
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s2), 0);
	lk_scan_close(s1);
	lk_scan_close(s2);
	lk_stats(&b);
	ck_assert_uint_eq(b.getdents_passes - a.getdents_passes, 4);
	tl_names_free(&g1);
	tl_names_free(&g2);
}

START_TEST(single_flight)
{
	make_shared_dir();
	tl_run_fibril(shared_fibril, NULL);
}
END_TEST

/* Concurrent scans from two fibrils of a request-serving thread. */
struct two { int rc; size_t n; };
static void one_scan(void *arg)
{
	struct two *t = arg;
	struct tl_names g = { 0 };
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .window = 32 };
	t->rc = scan_all("big", &o, &g);
	t->n = g.n;
	tl_names_free(&g);
}

START_TEST(single_flight_two_fibrils)
{
	make_shared_dir();
	struct two t1 = { -1, 0 }, t2 = { -1, 0 };
	async_engine_t *e;
	struct lk_stats a, b;
	lk_stats(&a);
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	ck_assert_int_eq(fibril_create(NULL, one_scan, &t1, "s1"), 0);
	ck_assert_int_eq(fibril_create(NULL, one_scan, &t2, "s2"), 0);
	ck_assert_int_eq(async_engine_run(e), 0);
	async_engine_destroy(e);
	fibril_sched_fini();
	lk_stats(&b);
	ck_assert_int_eq(t1.rc, 0);
	ck_assert_int_eq(t2.rc, 0);
	ck_assert_uint_eq(t1.n, NSHARED);
	ck_assert_uint_eq(t2.n, NSHARED);
	ck_assert_uint_eq(b.getdents_passes - a.getdents_passes, 1);
}
END_TEST

/* Group cancellation wakes a parked scan; everything is freed. */
struct cancel_ctx { lk_group_t *g; int rc; size_t got; };

static void scanner(void *arg)
{
	struct cancel_ctx *c = arg;
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .window = 4,
				  .group = c->g };
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "big", &o, &s), 0);
	const struct lk_entry *e;
	size_t n;
	while ((c->rc = lk_scan_next(s, &e, &n)) == 1)
		c->got += n;
	lk_scan_close(s);
}

static void canceller(void *arg)
{
	struct cancel_ctx *c = arg;
	fibril_yield();
	lk_group_cancel(c->g);
}

START_TEST(group_cancel)
{
	tl_mkdir("big");
	for (unsigned i = 0; i < 3000; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "big/n%u", i);
		tl_mkfile(rel, NULL);
	}
	struct cancel_ctx c = { NULL, 1, 0 };
	ck_assert_int_eq(lk_group_new(&c.g), 0);
	async_engine_t *e;
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	ck_assert_int_eq(fibril_create(NULL, scanner, &c, "scan"), 0);
	ck_assert_int_eq(fibril_create(NULL, canceller, &c, "cancel"), 0);
	ck_assert_int_eq(async_engine_run(e), 0);
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_int_eq(c.rc, -ECANCELED);
	ck_assert_uint_lt(c.got, 3000);
	ck_assert_uint_eq(st.live_scans, 0);
	ck_assert_uint_eq(st.live_flights, 0);
	ck_assert_uint_eq(async_engine_inflight(e), 0);
	async_engine_destroy(e);
	fibril_sched_fini();
	lk_group_free(c.g);
}
END_TEST

/* Close in the middle with calls in flight, outside fibrils. */
START_TEST(close_mid_scan)
{
	make_many("big", 5000);
	async_engine_t *e;
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	for (int sort = LK_SORT_NONE; sort <= LK_SORT_MTIME; sort++) {
		struct lk_scan_opts o = { .sort = sort, .window = 64 };
		lk_scan_t *s;
		ck_assert_int_eq(lk_scan_open(root, "big", &o, &s), 0);
		const struct lk_entry *ent;
		size_t n;
		if (sort == LK_SORT_NONE || sort == LK_SORT_NAME)
			ck_assert_int_eq(lk_scan_next(s, &ent, &n), 1);
		lk_scan_cancel(s);
		ck_assert_int_eq(lk_scan_next(s, &ent, &n), -ECANCELED);
		lk_scan_close(s);
	}
	/* Let the cancelled calls come back; then nothing is left. */
	while (async_engine_inflight(e) > 0) {
		struct pollfd p = { async_engine_fd(e), POLLIN, 0 };
		async_engine_process(e, 0);
		poll(&p, 1, 10);
	}
	async_engine_process(e, 0);
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_uint_eq(st.live_scans, 0);
	ck_assert_uint_eq(st.live_flights, 0);
	async_engine_destroy(e);
}
END_TEST

/* Callback style from a foreign loop: no fibrils at all. */
struct cbctx { lk_scan_t *s; struct tl_names got; int rc; int calls; bool done; };

static void pull(void *arg)
{
	struct cbctx *c = arg;
	const struct lk_entry *e;
	size_t n;
	c->calls++;
	for (;;) {
		int rc = lk_scan_next_cb(c->s, &e, &n, pull, c);
		if (rc == -EAGAIN)
			return;
		if (rc != 1) {
			c->rc = rc;
			c->done = true;
			return;
		}
		for (size_t i = 0; i < n; i++)
			tl_names_add(&c->got, e[i].name);
	}
}

START_TEST(callback_style)
{
	make_many("big", 3000);
	async_engine_t *e;
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	for (int sort = LK_SORT_NONE; sort <= LK_SORT_NAME; sort++) {
		struct cbctx c = { 0 };
		struct lk_scan_opts o = { .sort = sort, .window = 32, .flags = ALL };
		ck_assert_int_eq(lk_scan_open(root, "big", &o, &c.s), 0);
		pull(&c);
		while (!c.done) {
			struct pollfd p = { async_engine_fd(e), POLLIN, 0 };
			if (async_engine_process(e, 0) == 0)
				poll(&p, 1, async_engine_timeout_ms(e));
		}
		ck_assert_int_eq(c.rc, 0);
		ck_assert_int_gt(c.calls, 1);
		lk_scan_close(c.s);
		struct tl_names want = { 0 };
		char p[512];
		snprintf(p, sizeof(p), "%s/big", tl_dir);
		tl_ls("-a", p, &want);
		if (sort == LK_SORT_NONE)
			tl_names_sort(&c.got);
		tl_names_eq(&c.got, &want);
		tl_names_free(&c.got);
		tl_names_free(&want);
	}
	async_engine_destroy(e);
}
END_TEST

START_TEST(pagination)
{
	tl_mkdir("p");
	for (unsigned i = 0; i < 100; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "p/e%03u", i);
		tl_mkfile(rel, NULL);
	}
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .after = "e041",
				  .limit = 10 };
	struct tl_names got = { 0 };
	ck_assert_int_eq(scan_all("p", &o, &got), 0);
	ck_assert_uint_eq(got.n, 10);
	ck_assert_str_eq(got.v[0], "e042");
	ck_assert_str_eq(got.v[9], "e051");
	tl_names_free(&got);
	o.after = "e0415";   /* a cursor that is not itself an entry */
	o.limit = 0;
	ck_assert_int_eq(scan_all("p", &o, &got), 0);
	ck_assert_uint_eq(got.n, 58);
	ck_assert_str_eq(got.v[0], "e042");
	tl_names_free(&got);
	o.flags = LK_SCAN_DESC;
	o.after = "e005";
	ck_assert_int_eq(scan_all("p", &o, &got), 0);
	ck_assert_uint_eq(got.n, 5);
	ck_assert_str_eq(got.v[0], "e004");
	tl_names_free(&got);
	o.after = "zzz";
	o.flags = 0;
	ck_assert_int_eq(scan_all("p", &o, &got), 0);
	ck_assert_uint_eq(got.n, 0);
	o.sort = LK_SORT_SIZE;
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "p", &o, &s), -EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lookup_scan");
	TCase *tc = tcase_create("scan");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, empty_dir);
	tcase_add_test(tc, one_entry);
	tcase_add_test(tc, hundred_thousand);
	tcase_add_test(tc, sort_modes);
	tcase_add_test(tc, sort_modes_many);
	tcase_add_test(tc, sort_shared_prefix);
	tcase_add_test(tc, sort_odd_name);
	tcase_add_test(tc, entry_metadata);
	tcase_add_test(tc, deleted_mid_scan_sorted);
	tcase_add_test(tc, deleted_mid_scan_streaming);
	tcase_add_test(tc, single_flight);
	tcase_add_test(tc, single_flight_two_fibrils);
	tcase_add_test(tc, group_cancel);
	tcase_add_test(tc, close_mid_scan);
	tcase_add_test(tc, callback_style);
	tcase_add_test(tc, pagination);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite, .before = tl_run_dir_begin, .after = tl_run_dir_end);
