/* lk_lookup(): case-insensitive matching (LK_LOOKUP_NOCASE) and symlink
 * reporting (LK_LOOKUP_STOP_SYMLINK), without an engine, in a fibril
 * and callback-style. */
#include "first.h"

#include <stdatomic.h>

#include "lookup_check.h"

TL_ROOT_FIXTURE

static const char *file_text(int fd)
{
	static char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	ck_assert_int_ge(n, 0);
	buf[n] = 0;
	return buf;
}

/* Looks @path up case-insensitively; returns 0 and the path found (and
 * checks the file's content is @text when non-NULL), or -errno. */
static int nocase(const char *path, int oflags, char *found, size_t cap)
{
	struct lk_lookup_opts o = { .oflags = oflags, .flags = LK_LOOKUP_NOCASE };
	struct lk_lookup l;
	int rc = lk_lookup(root, path, &o, &l);
	if (rc == 0) {
		ck_assert_ptr_nonnull(l.path);
		snprintf(found, cap, "%s", l.path);
		ck_assert_int_eq(l.stopped, 0);
		lk_lookup_release(&l);
	}
	return rc;
}

#define NOCASE_IS(path, want) do {                                      \
	char f_[512];                                                   \
	int rc_ = nocase(path, O_RDONLY, f_, sizeof(f_));               \
	ck_assert_msg(rc_ == 0, "%s: %s", path, strerror(-rc_));        \
	ck_assert_str_eq(f_, want);                                     \
} while (0)

static void nocase_tree(void)
{
	tl_mkfile("foo", "lower");
	tl_mkfile("Foo", "capital");
	tl_mkfile("ab", NULL);
	tl_mkfile("AB", NULL);
	tl_mkfile("Ab", NULL);
	tl_mkdir("dir");
	tl_mkdir("dir/sub");
	tl_mkfile("dir/sub/file", "deep");
	tl_mkfile("\xc3\xa9t\xc3\xa9.txt", "ete");          /* été.txt */
	tl_mkfile("stra\xc3\x9f" "e", NULL);                 /* straße */
	tl_mkfile("kelvin", NULL);
	tl_mkfile("\xce\xbb\xcf\x8c\xce\xb3\xce\xbf\xcf\x82", NULL); /* λόγος */
	tl_mkfile("i", NULL);
	tl_mkfile("Exist", "x");
}

static void check_nocase(void)
{
	char f[512];
	/* The name as written wins; then the byte-wise smallest. */
	NOCASE_IS("foo", "foo");
	NOCASE_IS("Foo", "Foo");
	NOCASE_IS("FOO", "Foo");
	NOCASE_IS("fOO", "Foo");
	NOCASE_IS("aB", "AB");
	NOCASE_IS("ab", "ab");
	/* Every component; "." and empty ones dropped, ".." kept. */
	NOCASE_IS("DIR/Sub/FILE", "dir/sub/file");
	NOCASE_IS("./Dir//SUB/./file", "dir/sub/file");
	NOCASE_IS("Dir/../DIR/sub", "dir/../dir/sub");
	NOCASE_IS("DIR", "dir");
	NOCASE_IS("", "");
	/* UTF-8 simple case folding. */
	NOCASE_IS("\xc3\x89T\xc3\x89.TXT", "\xc3\xa9t\xc3\xa9.txt"); /* ÉTÉ.TXT */
	NOCASE_IS("STRA\xc3\x9f" "E", "stra\xc3\x9f" "e");            /* STRAßE */
	NOCASE_IS("\xe2\x84\xaa" "ELVIN", "kelvin");                  /* Kelvin sign */
	NOCASE_IS("\xce\x9b\xce\x8c\xce\x93\xce\x9f\xce\xa3",          /* ΛΌΓΟΣ */
		  "\xce\xbb\xcf\x8c\xce\xb3\xce\xbf\xcf\x82");
	/* The Turkic dotted capital I is not folded (CaseFolding C+S). */
	ck_assert_int_eq(nocase("\xc4\xb0", O_RDONLY, f, sizeof(f)), -ENOENT);
	NOCASE_IS("I", "i");
	/* Misses, and escapes as ever. */
	ck_assert_int_eq(nocase("nothere", O_RDONLY, f, sizeof(f)), -ENOENT);
	ck_assert_int_eq(nocase("DIR/nothere/x", O_RDONLY, f, sizeof(f)), -ENOENT);
	ck_assert_int_eq(nocase("FOO/x", O_RDONLY, f, sizeof(f)), -ENOTDIR);
	ck_assert_int_eq(nocase("../x", O_RDONLY, f, sizeof(f)), -EXDEV);
	ck_assert_int_eq(nocase("DIR/../../x", O_RDONLY, f, sizeof(f)), -EXDEV);
	/* The file opened is the one named. */
	struct lk_lookup_opts o = { .flags = LK_LOOKUP_NOCASE };
	struct lk_lookup l;
	ck_assert_int_eq(lk_lookup(root, "FOO", &o, &l), 0);
	ck_assert_str_eq(file_text(l.file.fd), "capital");
	ck_assert(S_ISREG(l.file.stx.stx_mode));
	lk_lookup_release(&l);
	ck_assert_int_eq(lk_lookup(root, "dir/SUB/File", &o, &l), 0);
	ck_assert_str_eq(file_text(l.file.fd), "deep");
	lk_lookup_release(&l);
	/* O_CREAT opens an existing match, creates the name as written
	 * otherwise; O_EXCL refuses a match. */
	ck_assert_int_eq(nocase("EXIST", O_WRONLY | O_CREAT, f, sizeof(f)), 0);
	ck_assert_str_eq(f, "Exist");
	ck_assert_int_eq(nocase("EXIST", O_WRONLY | O_CREAT | O_EXCL, f,
				sizeof(f)), -EEXIST);
	ck_assert_int_eq(nocase("Dir/NewOne", O_WRONLY | O_CREAT, f,
				sizeof(f)), 0);
	ck_assert_str_eq(f, "dir/NewOne");
	struct stat st;
	char p[512];
	snprintf(p, sizeof(p), "%s/dir/NewOne", tl_dir);
	ck_assert_int_eq(stat(p, &st), 0);
	snprintf(p, sizeof(p), "%s/EXIST", tl_dir);
	ck_assert_int_eq(stat(p, &st), -1);
	/* lk_stat takes the same options. */
	struct statx stx;
	ck_assert_int_eq(lk_stat(root, "DIR/SUB/FILE", &o, &stx), 0);
	ck_assert_uint_eq(stx.stx_size, 4);
}

START_TEST(nocase_without_engine)
{
	nocase_tree();
	check_nocase();
}
END_TEST

static void nocase_fibril(void *arg)
{
	(void)arg;
	check_nocase();
}

START_TEST(nocase_in_fibril)
{
	nocase_tree();
	tl_run_fibril(nocase_fibril, NULL);
}
END_TEST

/* A name created, or renamed, after the cache knew the directory is
 * found; and the cache is what answers a repeated lookup. */
static atomic_uint folds;

static size_t counting_fold(const char *n, size_t len, char *out, size_t cap,
			    void *arg)
{
	atomic_fetch_add(&folds, 1);
	return lk_fold_utf8(n, len, out, cap, arg);
}

START_TEST(cache_and_new_names)
{
	char f[512];
	tl_mkdir("d");
	for (int i = 0; i < 20; i++) {
		char n[32];
		snprintf(n, sizeof(n), "d/name%02d", i);
		tl_mkfile(n, NULL);
	}
	struct lk_lookup_opts o = { .flags = LK_LOOKUP_NOCASE,
				    .fold = counting_fold };
	struct lk_lookup l;
	ck_assert_int_eq(lk_lookup(root, "d/NAME07", &o, &l), 0);
	ck_assert_str_eq(l.path, "d/name07");
	lk_lookup_release(&l);
	ck_assert_uint_ge(atomic_load(&folds), 21);   /* the directory was read */
	atomic_store(&folds, 0);
	ck_assert_int_eq(lk_lookup(root, "d/NAME07", &o, &l), 0);
	ck_assert_str_eq(l.path, "d/name07");
	lk_lookup_release(&l);
	ck_assert_uint_eq(atomic_load(&folds), 1);    /* only the key: cached */
	/* Renamed since: the cached name fails to open, the directory is
	 * read again. */
	char a[512], b[512];
	snprintf(a, sizeof(a), "%s/d/name07", tl_dir);
	snprintf(b, sizeof(b), "%s/d/Name07", tl_dir);
	ck_assert_int_eq(rename(a, b), 0);
	ck_assert_int_eq(lk_lookup(root, "d/NAME07", &o, &l), 0);
	ck_assert_str_eq(l.path, "d/Name07");
	lk_lookup_release(&l);
	/* Not there yet, then created: found (no negative caching). */
	ck_assert_int_eq(nocase("D/LATER", O_RDONLY, f, sizeof(f)), -ENOENT);
	tl_mkfile("d/later", NULL);
	ck_assert_int_eq(nocase("D/LATER", O_RDONLY, f, sizeof(f)), 0);
	ck_assert_str_eq(f, "d/later");
}
END_TEST

/* The caller's own comparison: '_' and '-' equal. */
static size_t dash_fold(const char *n, size_t len, char *out, size_t cap,
			void *arg)
{
	(void)arg;
	for (size_t i = 0; i < len && i < cap; i++)
		out[i] = n[i] == '_' ? '-' : n[i];
	return len;
}

START_TEST(custom_fold)
{
	tl_mkfile("a-b", NULL);
	struct lk_lookup_opts o = { .flags = LK_LOOKUP_NOCASE, .fold = dash_fold };
	struct lk_lookup l;
	ck_assert_int_eq(lk_lookup(root, "a_b", &o, &l), 0);
	ck_assert_str_eq(l.path, "a-b");
	lk_lookup_release(&l);
	ck_assert_int_eq(lk_lookup(root, "A_B", &o, &l), -ENOENT);
}
END_TEST

/* ---- symlinks ---- */

static void link_tree(void)
{
	tl_mkdir("a");
	tl_mkdir("target");
	tl_mkdir("target/b");
	tl_mkfile("target/b/c", "c");
	tl_mkfile("f", "f");
	tl_symlink("../target", "a/link");
	tl_symlink("../f", "a/last");
	tl_symlink("/etc", "a/abs");
}

static void check_stop(void)
{
	struct lk_lookup_opts o = { .flags = LK_LOOKUP_STOP_SYMLINK };
	struct lk_lookup l;
	const char *p = "a//link/b/c";
	ck_assert_int_eq(lk_lookup(root, p, &o, &l), 0);
	ck_assert_int_eq(l.stopped, 1);
	ck_assert_uint_eq(l.link_index, 1);
	ck_assert_uint_eq(l.link_offset, 3);
	ck_assert_uint_eq(l.link_len, 4);
	ck_assert_str_eq(p + l.rest_offset, "b/c");
	ck_assert_str_eq(l.link_target, "../target");
	ck_assert_str_eq(l.path, "a/link");
	ck_assert_int_ge(l.file.fd, 0);
	ck_assert(S_ISLNK(l.file.stx.stx_mode));
	lk_lookup_release(&l);
	/* The last component. */
	ck_assert_int_eq(lk_lookup(root, "./a/last", &o, &l), 0);
	ck_assert_int_eq(l.stopped, 1);
	ck_assert_uint_eq(l.link_index, 2);
	ck_assert_str_eq("./a/last" + l.rest_offset, "");
	ck_assert_str_eq(l.link_target, "../f");
	lk_lookup_release(&l);
	/* An escaping link is reported, not refused: the caller decides. */
	ck_assert_int_eq(lk_lookup(root, "a/abs/passwd", &o, &l), 0);
	ck_assert_int_eq(l.stopped, 1);
	ck_assert_str_eq(l.link_target, "/etc");
	ck_assert_str_eq("a/abs/passwd" + l.rest_offset, "passwd");
	lk_lookup_release(&l);
	/* No symlink: the file itself. */
	ck_assert_int_eq(lk_lookup(root, "target//b/./c", &o, &l), 0);
	ck_assert_int_eq(l.stopped, 0);
	ck_assert_str_eq(l.path, "target/b/c");
	ck_assert_str_eq(file_text(l.file.fd), "c");
	ck_assert_ptr_null(l.link_target);
	lk_lookup_release(&l);
	ck_assert_int_eq(lk_lookup(root, "a/none", &o, &l), -ENOENT);
	/* Without the flag links are followed (beneath the root). */
	ck_assert_int_eq(lk_lookup(root, "a/link/b/c", NULL, &l), 0);
	ck_assert_str_eq(file_text(l.file.fd), "c");
	ck_assert_ptr_null(l.path);
	lk_lookup_release(&l);
	ck_assert_int_eq(lk_lookup(root, "a/abs/passwd", NULL, &l), -EXDEV);
	/* With case-insensitive matching. */
	o.flags |= LK_LOOKUP_NOCASE;
	ck_assert_int_eq(lk_lookup(root, "A/LINK/b", &o, &l), 0);
	ck_assert_int_eq(l.stopped, 1);
	ck_assert_str_eq(l.path, "a/link");
	ck_assert_str_eq("A/LINK/b" + l.rest_offset, "b");
	lk_lookup_release(&l);
	/* lk_stat: -ELOOP at a link, or the trailing link's own lstat. */
	struct statx stx;
	o.flags = LK_LOOKUP_STOP_SYMLINK;
	ck_assert_int_eq(lk_stat(root, "a/link/b", &o, &stx), -ELOOP);
	ck_assert_int_eq(lk_stat(root, "a/last", &o, &stx), -ELOOP);
	o.oflags = O_NOFOLLOW;
	ck_assert_int_eq(lk_stat(root, "a/last", &o, &stx), 0);
	ck_assert(S_ISLNK(stx.stx_mode));
	ck_assert_int_eq(lk_stat(root, "a/last", NULL, &stx), 0);
	ck_assert(S_ISREG(stx.stx_mode));
}

START_TEST(stop_without_engine)
{
	link_tree();
	check_stop();
}
END_TEST

static void stop_fibril(void *arg)
{
	(void)arg;
	check_stop();
}

START_TEST(stop_in_fibril)
{
	link_tree();
	tl_run_fibril(stop_fibril, NULL);
}
END_TEST

/* With options a path gets the answers lk_open() gives it: an absolute
 * one is refused, and one ending in "/" or "/." must be a directory. */
static void check_as_open(void)
{
	static const struct { const char *path; int err; } cases[] = {
		{ "/dir", -EXDEV }, { "/dir/sub/file", -EXDEV },
		{ "dir/sub/file/", -ENOTDIR }, { "dir/sub/file/.", -ENOTDIR },
		{ "dir/sub/file//", -ENOTDIR },
		{ "dir/", 0 }, { "dir/sub/.", 0 }, { "dir//sub/", 0 },
		{ "dir/sub/file", 0 },
	};
	static const unsigned flags[] = { LK_LOOKUP_NOCASE, LK_LOOKUP_STOP_SYMLINK,
					  LK_LOOKUP_NOCASE | LK_LOOKUP_STOP_SYMLINK };

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct lk_file f;
		int rc = lk_open(root, cases[i].path, O_RDONLY, NULL, &f);
		if (rc == 0)
			close(f.fd);
		ck_assert_msg(rc == cases[i].err, "lk_open %s: %d", cases[i].path, rc);
		for (size_t k = 0; k < sizeof(flags) / sizeof(*flags); k++) {
			struct lk_lookup_opts o = { .oflags = O_RDONLY, .flags = flags[k] };
			struct lk_lookup l;
			struct statx stx;
			rc = lk_lookup(root, cases[i].path, &o, &l);
			if (rc == 0)
				lk_lookup_release(&l);
			ck_assert_msg(rc == cases[i].err, "lk_lookup %s, flags %u: %d",
				      cases[i].path, flags[k], rc);
			rc = lk_stat(root, cases[i].path, &o, &stx);
			ck_assert_msg(rc == cases[i].err, "lk_stat %s, flags %u: %d",
				      cases[i].path, flags[k], rc);
		}
	}
	struct lk_lookup_opts o = { .oflags = O_RDWR | O_CREAT, .flags = LK_LOOKUP_NOCASE };
	struct lk_lookup l;
	ck_assert_int_eq(lk_lookup(root, "newdir/", &o, &l), -EISDIR);
	ck_assert_int_eq(lk_lookup(root, "missing/.", &o, &l), -ENOENT);
	/* a link before a final slash is followed, even under O_NOFOLLOW */
	o = (struct lk_lookup_opts){ .oflags = O_PATH | O_NOFOLLOW,
				     .flags = LK_LOOKUP_NOCASE };
	struct statx stx;
	ck_assert_int_eq(lk_stat(root, "ldir/", &o, &stx), 0);
	ck_assert(S_ISDIR(stx.stx_mode));
	ck_assert_int_eq(lk_stat(root, "ldir", &o, &stx), 0);
	ck_assert(S_ISLNK(stx.stx_mode));
}

static void as_open_fibril(void *arg)
{
	(void)arg;
	check_as_open();
}

START_TEST(paths_as_open)
{
	nocase_tree();
	tl_symlink("dir", "ldir");
	check_as_open();
	tl_run_fibril(as_open_fibril, NULL);
}
END_TEST

/* Callback-style, pending then cancelled. */
struct cbres {
	int calls, res, stopped;
	char path[64];
};

static void on_lookup(void *arg, int res, struct lk_lookup *l)
{
	struct cbres *r = arg;
	r->calls++;
	r->res = res;
	if (l) {
		r->stopped = l->stopped;
		snprintf(r->path, sizeof(r->path), "%s", l->path ? l->path : "");
		lk_lookup_release(l);
	}
}

START_TEST(callback_style)
{
	link_tree();
	tl_mkfile("Foo", NULL);
	async_engine_t *e;
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	struct cbres r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
	struct lk_lookup out;
	lk_op_t *op;
	struct lk_lookup_opts o = { .flags = LK_LOOKUP_NOCASE };
	int rc = lk_lookup_start(root, "FOO", &o, &out, on_lookup, &r1, &op);
	ck_assert_int_eq(rc, 1);
	o.flags = LK_LOOKUP_STOP_SYMLINK;
	rc = lk_lookup_start(root, "a/link/b", &o, &out, on_lookup, &r2, &op);
	ck_assert_int_eq(rc, 1);
	rc = lk_lookup_start(root, "a/link/b", &o, &out, on_lookup, &r3, &op);
	ck_assert_int_eq(rc, 1);
	lk_op_cancel(op);
	while (!r1.calls || !r2.calls || !r3.calls) {
		ck_assert_int_ge(async_engine_process(e, 0), 0);
		usleep(1000);
	}
	ck_assert_int_eq(r1.res, 0);
	ck_assert_str_eq(r1.path, "Foo");
	ck_assert_int_eq(r2.res, 0);
	ck_assert_int_eq(r2.stopped, 1);
	ck_assert_str_eq(r2.path, "a/link");
	ck_assert_int_eq(r3.res, -ECANCELED);
	ck_assert_int_eq(r1.calls + r2.calls + r3.calls, 3);
	/* A name as written, in the dcache: done inline, no callback. */
	struct lk_stats st0, st1;
	lk_stats(&st0);
	o.flags = LK_LOOKUP_NOCASE | LK_LOOKUP_STOP_SYMLINK;
	rc = lk_lookup_start(root, "./Foo", &o, &out, on_lookup, &r1, NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out.path, "Foo");
	ck_assert_int_eq(out.stopped, 0);
	lk_lookup_release(&out);
	lk_stats(&st1);
	ck_assert_uint_eq(st1.opens_inline, st0.opens_inline + 1);
	ck_assert_int_eq(r1.calls, 1);
	/* Without flags: an open (inline when cached). */
	struct cbres r4 = { 0 };
	rc = lk_lookup_start(root, "f", NULL, &out, on_lookup, &r4, NULL);
	ck_assert(rc == 0 || rc == 1);
	if (rc == 0) {
		ck_assert_str_eq(file_text(out.file.fd), "f");
		lk_lookup_release(&out);
	}
	while (rc == 1 && !r4.calls) {
		ck_assert_int_ge(async_engine_process(e, 0), 0);
		usleep(1000);
	}
	async_engine_destroy(e);
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_uint_eq(st.live_ops, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lookup_walk");
	TCase *tc = tcase_create("walk");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, nocase_without_engine);
	tcase_add_test(tc, nocase_in_fibril);
	tcase_add_test(tc, cache_and_new_names);
	tcase_add_test(tc, custom_fold);
	tcase_add_test(tc, stop_without_engine);
	tcase_add_test(tc, stop_in_fibril);
	tcase_add_test(tc, callback_style);
	tcase_add_test(tc, paths_as_open);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite, .before = tl_run_dir_begin, .after = tl_run_dir_end);
