/* Per-request credentials: lookups, opens, stats and scans run as the
 * user of their lk_cred_t, on the engine's backend (io_uring
 * personalities; pool threads with FIBRIL_BACKEND=threads) and without
 * an engine, while the process stays root. Needs root (skips with 77). */
#include "first.h"

#include <grp.h>
#include <sys/wait.h>

#include "lookup_check.h"

#define NOBODY 65534
#define OWNER 12345
#define GROUP 4242

static lk_root_t *root;
static lk_cred_t *nobody, *owner, *member;
static gid_t groups0[64];
static int ngroups0;

static void tl_chown(const char *rel, uid_t u, gid_t g, mode_t m)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", tl_dir, rel);
	ck_assert_int_eq(chown(p, u, g), 0);
	ck_assert_int_eq(chmod(p, m), 0);
}

static void setup(void)
{
	tl_setup();
	ck_assert_int_eq(chmod(tl_dir, 0755), 0);
	tl_mkdir("pub");
	tl_mkfile("pub/f", "pub");
	tl_mkdir("priv");
	tl_mkfile("priv/f", "priv");
	tl_mkdir("priv/sub");
	tl_mkfile("priv/sub/g", "g");
	tl_chown("priv/f", OWNER, OWNER, 0644);
	tl_chown("priv", OWNER, OWNER, 0700);
	tl_mkdir("grp");
	tl_mkfile("grp/f", "grp");
	tl_chown("grp", 0, GROUP, 0750);
	tl_mkdir("ro");
	tl_mkfile("ro/a", "a");
	tl_mkfile("ro/b", "b");
	tl_chown("ro", 0, 0, 0744);   /* others may list it, not look inside */
	ck_assert_int_eq(lk_root_open(tl_dir, NULL, &root), 0);
	ck_assert_int_eq(lk_cred_new(NOBODY, NOBODY, 0, NULL, &nobody), 0);
	ck_assert_int_eq(lk_cred_new(OWNER, OWNER, 0, NULL, &owner), 0);
	gid_t g = GROUP;
	ck_assert_int_eq(lk_cred_new(NOBODY, NOBODY, 1, &g, &member), 0);
	ngroups0 = getgroups(64, groups0);
	ck_assert_int_ge(ngroups0, 0);
}

static void teardown(void)
{
	lk_cred_free(nobody);
	lk_cred_free(owner);
	lk_cred_free(member);
	lk_root_close(root);
	tl_teardown();
}

/* The process (and this thread) are still root with their groups. */
static void still_root(void)
{
	uid_t r, e, s;
	gid_t gr, ge, gs, g[64];
	ck_assert_int_eq(getresuid(&r, &e, &s), 0);
	ck_assert_int_eq(getresgid(&gr, &ge, &gs), 0);
	ck_assert(r == 0 && e == 0 && s == 0);
	ck_assert(gr == 0 && ge == 0 && gs == 0);
	int n = getgroups(64, g);
	ck_assert_int_eq(n, ngroups0);
	ck_assert_int_eq(memcmp(g, groups0, (size_t)n * sizeof(gid_t)), 0);
}

static int open_as(const lk_cred_t *c, const char *path, int oflags)
{
	struct lk_lookup_opts o = { .oflags = oflags, .cred = c };
	struct lk_lookup l;
	int rc = lk_lookup(root, path, &o, &l);
	if (rc == 0) {
		ck_assert_int_ge(l.file.fd, 0);
		lk_lookup_release(&l);
	}
	return rc;
}

static int stat_as(const lk_cred_t *c, const char *path)
{
	struct lk_lookup_opts o = { .cred = c };
	struct statx stx;
	return lk_stat(root, path, &o, &stx);
}

/* Opens and reads the whole directory as @c: 0, or the first error. */
static int scan_as(const lk_cred_t *c, const char *dir, size_t *n,
		   int *entry_err)
{
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .cred = c };
	lk_scan_t *s;
	const struct lk_entry *e;
	size_t k;
	int rc = lk_scan_open(root, dir, &o, &s);
	*n = 0;
	*entry_err = 0;
	if (rc < 0)
		return rc;
	while ((rc = lk_scan_next(s, &e, &k)) == 1) {
		for (size_t i = 0; i < k; i++)
			if (e[i].err)
				*entry_err = e[i].err;
		*n += k;
	}
	lk_scan_close(s);
	return rc;
}

static void check_denied(void)
{
	size_t n;
	int eerr;
	/* Root (no handle) may do everything. */
	ck_assert_int_eq(open_as(NULL, "priv/f", O_RDONLY), 0);
	ck_assert_int_eq(stat_as(NULL, "priv/sub/g"), 0);
	ck_assert_int_eq(scan_as(NULL, "priv", &n, &eerr), 0);
	ck_assert_uint_eq(n, 2);
	/* nobody may not search priv: nothing below it. */
	ck_assert_int_eq(open_as(nobody, "priv/f", O_RDONLY), -EACCES);
	ck_assert_int_eq(open_as(nobody, "priv/sub", O_PATH), -EACCES);
	ck_assert_int_eq(stat_as(nobody, "priv/sub/g"), -EACCES);
	ck_assert_int_eq(scan_as(nobody, "priv", &n, &eerr), -EACCES);
	ck_assert_int_eq(scan_as(nobody, "priv/sub", &n, &eerr), -EACCES);
	ck_assert_int_eq(open_as(nobody, "pub/f", O_RDONLY), 0);
	ck_assert_int_eq(open_as(nobody, "pub/f", O_WRONLY), -EACCES);
	/* Its owner may. */
	ck_assert_int_eq(open_as(owner, "priv/f", O_RDONLY), 0);
	ck_assert_int_eq(stat_as(owner, "priv/sub/g"), 0);
	ck_assert_int_eq(scan_as(owner, "priv/sub", &n, &eerr), 0);
	ck_assert_uint_eq(n, 1);
	/* Supplementary groups count. */
	ck_assert_int_eq(open_as(nobody, "grp/f", O_RDONLY), -EACCES);
	ck_assert_int_eq(open_as(member, "grp/f", O_RDONLY), 0);
	/* A directory nobody may list but not search: the names come, each
	 * stat fails as that user. */
	ck_assert_int_eq(scan_as(nobody, "ro", &n, &eerr), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(eerr, -EACCES);
	ck_assert_int_eq(scan_as(NULL, "ro", &n, &eerr), 0);
	ck_assert_int_eq(eerr, 0);
	/* The walk (pool thread) runs as the user too. */
	struct lk_lookup_opts o = { .flags = LK_LOOKUP_NOCASE, .cred = nobody };
	struct lk_lookup l;
	ck_assert_int_eq(lk_lookup(root, "priv/F", &o, &l), -EACCES);
	o.cred = owner;
	ck_assert_int_eq(lk_lookup(root, "priv/F", &o, &l), 0);
	ck_assert_str_eq(l.path, "priv/f");
	lk_lookup_release(&l);
	still_root();
}

START_TEST(denied_without_engine)
{
	check_denied();
}
END_TEST

static void denied_fibril(void *arg)
{
	(void)arg;
	check_denied();
}

START_TEST(denied_on_engine)
{
	tl_run_fibril(denied_fibril, NULL);
	still_root();
}
END_TEST

/* Two users' requests in flight together on one engine: each gets its
 * own answer. */
struct who {
	const lk_cred_t *c;
	int want;            /* priv/f's result for this user */
	int rounds;
};

static void user_loop(void *arg)
{
	struct who *w = arg;
	for (int i = 0; i < w->rounds; i++) {
		ck_assert_int_eq(open_as(w->c, "priv/f", O_RDONLY), w->want);
		struct lk_lookup_opts o = { .flags = LK_LOOKUP_NOCASE,
					    .cred = w->c };
		struct lk_lookup l;
		int rc = lk_lookup(root, "PRIV/F", &o, &l);
		ck_assert_int_eq(rc, w->want);
		if (rc == 0)
			lk_lookup_release(&l);
		size_t n;
		int eerr;
		ck_assert_int_eq(scan_as(w->c, "priv", &n, &eerr), w->want);
		fibril_yield();
	}
}

struct cbreq {
	int done, bad, want;
};

static void cb_req(void *arg, int res, struct lk_lookup *l)
{
	struct cbreq *q = arg;
	q->done++;
	if (res != q->want)
		q->bad++;
	if (l)
		lk_lookup_release(l);
}

START_TEST(two_users_interleave)
{
	async_engine_t *e;
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	struct who a = { nobody, -EACCES, 20 }, b = { owner, 0, 20 };
	ck_assert_int_eq(fibril_create(NULL, user_loop, &a, "nobody"), 0);
	ck_assert_int_eq(fibril_create(NULL, user_loop, &b, "owner"), 0);
	/* And callback-style requests of both, all pending at once. */
	enum { N = 32 };
	struct cbreq q[N];
	int pending = 0;
	for (int i = 0; i < N; i++) {
		struct lk_lookup_opts o = {
			.cred = i % 2 ? owner : nobody,
			.flags = i % 4 >= 2 ? LK_LOOKUP_NOCASE : 0,
		};
		struct lk_lookup out;
		memset(&q[i], 0, sizeof(q[i]));
		q[i].want = i % 2 ? 0 : -EACCES;
		int rc = lk_lookup_start(root, i % 4 >= 2 ? "Priv/F" : "priv/f",
					 &o, &out, cb_req, &q[i], NULL);
		if (rc == 1) {
			pending++;
			continue;
		}
		ck_assert_int_eq(rc, q[i].want);
		q[i].done = 1;
		if (rc == 0)
			lk_lookup_release(&out);
	}
	ck_assert_int_eq(async_engine_run(e), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(q[i].done, 1);
		ck_assert_msg(q[i].bad == 0, "request %d: wrong answer", i);
	}
	async_engine_destroy(e);
	fibril_sched_fini();
	ck_assert_int_gt(pending, 0);
	still_root();
}
END_TEST

/* A scan as root and one as nobody of the same directory at once must
 * not share their results. */
START_TEST(scans_not_shared_across_users)
{
	struct lk_scan_opts ro = { .sort = LK_SORT_NAME }, no = ro;
	no.cred = nobody;
	lk_scan_t *s1, *s2;
	ck_assert_int_eq(lk_scan_open(root, "ro", &ro, &s1), 0);
	ck_assert_int_eq(lk_scan_open(root, "ro", &no, &s2), 0);
	const struct lk_entry *e;
	size_t n;
	ck_assert_int_eq(lk_scan_next(s1, &e, &n), 1);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(e[0].err, 0);
	ck_assert_int_eq(e[1].err, 0);
	ck_assert_int_eq(lk_scan_next(s2, &e, &n), 1);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(e[0].err, -EACCES);
	lk_scan_close(s1);
	lk_scan_close(s2);
}
END_TEST

/* More users than an engine keeps personalities for (64): the oldest
 * are unregistered and registered again, each request still as its
 * own user, pending ones included. */
static void many_users(void *arg)
{
	(void)arg;
	enum { N = 80 };
	lk_cred_t *c[N];
	for (int i = 0; i < N; i++) {
		gid_t g = (gid_t)(30000 + i);  /* distinct handles, same uids */
		ck_assert_int_eq(lk_cred_new(i % 2 ? OWNER : NOBODY,
					     i % 2 ? OWNER : NOBODY, 1, &g,
					     &c[i]), 0);
	}
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < N; i++)
			ck_assert_int_eq(open_as(c[i], "priv/f", O_RDONLY),
					 i % 2 ? 0 : -EACCES);
	for (int i = 0; i < N; i++)
		lk_cred_free(c[i]);
}

START_TEST(more_users_than_personalities)
{
	tl_run_fibril(many_users, NULL);
	/* And callback-style, all in flight at once. */
	async_engine_t *e;
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	enum { N = 150 };
	lk_cred_t *c[N];
	struct cbreq q[N];
	for (int i = 0; i < N; i++) {
		gid_t g = (gid_t)(40000 + i);
		ck_assert_int_eq(lk_cred_new(i % 3 ? NOBODY : OWNER,
					     i % 3 ? NOBODY : OWNER, 1, &g,
					     &c[i]), 0);
		memset(&q[i], 0, sizeof(q[i]));
		q[i].want = i % 3 ? -EACCES : 0;
		struct lk_lookup_opts o = { .cred = c[i] };
		struct lk_lookup out;
		int rc = lk_lookup_start(root, "priv/f", &o, &out, cb_req,
					 &q[i], NULL);
		lk_cred_free(c[i]);   /* the request keeps it */
		if (rc != 1) {
			ck_assert_int_eq(rc, q[i].want);
			q[i].done = 1;
			if (rc == 0)
				lk_lookup_release(&out);
		}
	}
	while (async_engine_inflight(e))
		ck_assert_int_ge(async_engine_process(e, 0), 0);
	ck_assert_int_ge(async_engine_process(e, 0), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(q[i].done, 1);
		ck_assert_msg(q[i].bad == 0, "request %d: wrong answer", i);
	}
	async_engine_destroy(e);
	still_root();
}
END_TEST

/* Without CAP_SETUID the calls made with a handle fail with -EPERM (and
 * those without one still work). */
static int unprivileged_child(void)
{
	if (setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) != 0)
		return 10;
	async_engine_t *e;
	if (async_engine_create(NULL, &e) != 0)
		return 11;
	if (open_as(owner, "pub/f", O_RDONLY) != -EPERM)
		return 12;
	if (open_as(NULL, "pub/f", O_RDONLY) != 0)
		return 13;
	struct lk_lookup_opts o = { .flags = LK_LOOKUP_NOCASE, .cred = owner };
	struct lk_lookup l;
	if (lk_lookup(root, "PUB/F", &o, &l) != -EPERM)
		return 14;
	async_engine_destroy(e);
	return 0;
}

START_TEST(unprivileged_gets_eperm)
{
	pid_t p = fork();
	ck_assert_int_ge(p, 0);
	if (p == 0)
		_exit(unprivileged_child());
	int st;
	ck_assert_int_eq(waitpid(p, &st, 0), p);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

START_TEST(bad_arguments)
{
	lk_cred_t *c;
	ck_assert_int_eq(lk_cred_new(1, 1, 1, NULL, &c), -EINVAL);
	ck_assert_int_eq(lk_cred_new((uid_t)-1, 1, 0, NULL, &c), -EINVAL);
	ck_assert_int_eq(lk_cred_new(1, 1, 70000, groups0, &c), -EINVAL);
	struct lk_lookup_opts o = { .flags = 0x100 };
	struct lk_lookup l;
	ck_assert_int_eq(lk_lookup(root, "pub/f", &o, &l), -EINVAL);
	/* A handle outlives its creator's reference while in use. */
	ck_assert_ptr_eq(lk_cred_ref(nobody), nobody);
	lk_cred_free(nobody);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lookup_cred");
	TCase *tc = tcase_create("cred");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, denied_without_engine);
	tcase_add_test(tc, denied_on_engine);
	tcase_add_test(tc, two_users_interleave);
	tcase_add_test(tc, scans_not_shared_across_users);
	tcase_add_test(tc, more_users_than_personalities);
	tcase_add_test(tc, unprivileged_gets_eperm);
	tcase_add_test(tc, bad_arguments);
	suite_add_tcase(s, tc);
	return s;
}

static int before(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "not root: credentials cannot be switched\n");
		return 77;
	}
	return tl_run_dir_begin();
}

TMAIN_SUITE(.suite = suite, .before = before, .after = tl_run_dir_end);
