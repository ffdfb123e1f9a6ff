/* lk_fs_local() on file systems mounted for the test: a tmpfs of its
 * own (needs CAP_SYS_ADMIN: skips with 77 without it), /proc and a pipe.
 * FUSE is checked in test_lookup_slowfs.c, which mounts one. */
#include "first.h"

#include "lookup_check.h"

#include <linux/openat2.h>
#include <sys/mount.h>

static char mnt[300];

static void open_unused(void *arg, int res, const struct lk_file *f)
{
	(void)arg;
	(void)res;
	(void)f;
	ck_abort_msg("a cached open on tmpfs went asynchronous");
}

START_TEST(tmpfs_is_local)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/f", mnt);
	int dfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ffd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_ge(ffd, 0);
	ck_assert_int_eq(lk_fs_local(dfd), 1);
	ck_assert_int_eq(lk_fs_local(ffd), 1);
	/* A root's fd is O_PATH: the answer is the same. */
	lk_root_t *r;
	ck_assert_int_eq(lk_root_open(mnt, NULL, &r), 0);
	ck_assert_int_eq(lk_fs_local(lk_root_fd(r)), 1);
	/* On a local mount a cached open completes in the call. */
	struct lk_file lf;
	ck_assert_int_eq(lk_open_start(r, "f", O_RDONLY, NULL, &lf,
				       open_unused, NULL, NULL), 0);
	ck_assert_int_ge(lf.fd, 0);
	close(lf.fd);
	lk_root_close(r);
	close(ffd);
	close(dfd);
}
END_TEST

START_TEST(kernel_pseudo_fs_is_not)
{
	/* Served by this kernel, but not from a disk or memory that
	 * inotify watches: procfs and pipefs are not on the list. */
	int pfd = open("/proc/self", O_PATH | O_CLOEXEC);
	ck_assert_int_ge(pfd, 0);
	ck_assert_int_eq(lk_fs_local(pfd), 0);
	close(pfd);
	int pp[2];
	ck_assert_int_eq(pipe(pp), 0);
	ck_assert_int_eq(lk_fs_local(pp[0]), 0);
	close(pp[0]);
	close(pp[1]);
}
END_TEST

START_TEST(bad_fd_is_an_error)
{
	ck_assert_int_eq(lk_fs_local(-1), -EBADF);
	int fd = open(mnt, O_PATH | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(lk_fs_local(fd), -EBADF);
}
END_TEST

/* Creates the empty file @dir/@name. */
static void touch_in(const char *dir, const char *name)
{
	char p[460];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

/* A directory the engine remembers as local, and a mount placed below
 * it afterwards: a cached open beneath the directory still runs inline,
 * one that would walk into the new mount goes to a backend (whatever
 * that file system is, the remembered answer is not its). */
START_TEST(mount_below_remembered_dir)
{
	char sub[400];
	snprintf(sub, sizeof(sub), "%s/sub", mnt);
	int dfd = tl_dir_with(mnt, "sub", "f");
	async_engine_t *e;
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	bool pend;
	for (int i = 0; i < 2; i++) {
		long f = tl_submit_open(dfd, "f", O_RDONLY, &pend);
		ck_assert_int_ge(f, 0);
		ck_assert(!pend);
		close((int)f);
	}
	ck_assert_int_eq(mount("lkfs2", sub, "tmpfs", MS_NOSUID | MS_NODEV,
			       "size=1m"), 0);
	touch_in(sub, "g");
	long g = tl_submit_open(dfd, "sub/g", O_RDONLY, &pend);
	ck_assert_int_ge(g, 0);
	ck_assert_msg(pend, "an open into a mount placed later ran inline");
	close((int)g);
	long f = tl_submit_open(dfd, "f", O_RDONLY, &pend);
	ck_assert_int_ge(f, 0);
	ck_assert(!pend);
	close((int)f);
	ck_assert_int_eq(async_engine_run(e), 0);
	async_engine_destroy(e);
	close(dfd);
	ck_assert_int_eq(umount2(sub, MNT_DETACH), 0);
}
END_TEST

/* A mount point among a directory's entries carries
 * STATX_ATTR_MOUNT_ROOT (its attributes are the mounted file system's,
 * which a watch on the outer directory does not follow), with or
 * without LK_SCAN_LOOKUP_ATTRS; other entries do not. */
static void mount_root_fibril(void *arg)
{
	lk_root_t *r = arg;
	for (int pass = 0; pass < 2; pass++) {
		struct lk_scan_opts o = { .sort = LK_SORT_NAME,
			.flags = pass ? LK_SCAN_LOOKUP_ATTRS : 0 };
		lk_scan_t *s;
		const struct lk_entry *e;
		size_t n;
		int seen = 0, rc;
		ck_assert_int_eq(lk_scan_open(r, "d", &o, &s), 0);
		while ((rc = lk_scan_next(s, &e, &n)) == 1)
			for (size_t i = 0; i < n; i++) {
				bool mr = e[i].stx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
				ck_assert(e[i].stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT);
				if (!strcmp(e[i].name, "sub")) {
					ck_assert_msg(mr, "the mount point is not marked");
					ck_assert_int_eq(e[i].stx.stx_size, 60);
					seen++;
				} else if (!strcmp(e[i].name, "f")) {
					ck_assert(!mr);
					seen++;
				}
			}
		ck_assert_int_eq(rc, 0);
		ck_assert_int_eq(seen, 2);
		lk_scan_close(s);
	}
}

START_TEST(scan_marks_mount_root)
{
	char sub[400];
	snprintf(sub, sizeof(sub), "%s/d", mnt);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	touch_in(sub, "f");
	snprintf(sub, sizeof(sub), "%s/d/sub", mnt);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_int_eq(mount("lkfs3", sub, "tmpfs", MS_NOSUID | MS_NODEV,
			       "size=1m"), 0);
	/* The mounted root holds one name (tmpfs: 60 bytes), the
	 * directory under it none (40). */
	touch_in(sub, "g");
	lk_root_t *r;
	ck_assert_int_eq(lk_root_open(mnt, NULL, &r), 0);
	tl_run_fibril(mount_root_fibril, r);
	lk_root_close(r);
	ck_assert_int_eq(umount2(sub, MNT_DETACH), 0);
}
END_TEST

static int before(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(mnt, sizeof(mnt), "%s/lkfs.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(mnt)) {
		perror("mkdtemp");
		return 1;
	}
	if (mount("lkfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") < 0) {
		fprintf(stderr, "cannot mount a tmpfs on %s (%s): skipped\n",
			mnt, strerror(errno));
		rmdir(mnt);
		return 77;
	}
	return 0;
}

static void after(void)
{
	if (umount2(mnt, MNT_DETACH) < 0)
		fprintf(stderr, "umount %s: %s\n", mnt, strerror(errno));
	rmdir(mnt);
}

static Suite *suite(void)
{
	const TTest *tests[] = { tmpfs_is_local, kernel_pseudo_fs_is_not,
				 bad_fd_is_an_error, mount_below_remembered_dir,
				 scan_marks_mount_root };
	return tmain_one_tcase("lookup_fs", tests, sizeof tests / sizeof *tests);
}

TMAIN_SUITE(.suite = suite, .before = before, .after = after);
