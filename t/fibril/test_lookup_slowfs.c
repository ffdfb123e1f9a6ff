/* The lookup engine on slowfs (t/slowfs: a FUSE passthrough with a delay
 * per metadata op and EIO for names ending in ".eio"): one failing entry
 * fails alone, slow stats overlap, other fibrils keep running, and
 * cancelling frees everything. Skips (77) when FUSE cannot be mounted. */
#include "first.h"

#include <dirent.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "lookup_check.h"
#include "thread_policy.h"

static char back[300], mnt[300];
static char slowfs_pid[32];
static lk_root_t *root;

static void unmount_all(void)
{
	const char *src = getenv("top_srcdir");
	char cmd[1024];
	if (mnt[0] && src) {
		snprintf(cmd, sizeof(cmd), "sh '%s/t/slowfs/umount.sh' '%s' %s",
			 src, mnt, slowfs_pid);
		if (system(cmd) != 0)
			fprintf(stderr, "umount %s failed\n", mnt);
	}
	if (tl_dir[0])
		tl_rm_rf(tl_dir);
}

static void on_signal(int sig)
{
	unmount_all();
	_exit(1);
}

/* Returns 0 mounted, 77 skip, 1 error. */
static int mount_slowfs(unsigned delay_ms)
{
	const char *src = getenv("top_srcdir");
	if (!src)
		return 77;
	/* Not tl_setup(): no ck_assert outside a running test. */
	const char *t = getenv("TMPDIR");
	snprintf(tl_dir, sizeof(tl_dir), "%s/lktest.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tl_dir)) {
		tl_dir[0] = 0;
		return 1;
	}
	snprintf(back, sizeof(back), "%s/back", tl_dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", tl_dir);
	if (mkdir(back, 0755) || mkdir(mnt, 0755))
		return 1;
	char p[400];
	for (unsigned i = 0; i < 200; i++) {
		snprintf(p, sizeof(p), "%s/f%03u", back, i);
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			return 1;
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/f100.eio", back);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	snprintf(p, sizeof(p), "%s/sub", back);
	mkdir(p, 0755);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "sh '%s/t/slowfs/mount.sh' -o delay_ms=%u '%s' '%s'",
		 src, delay_ms, back, mnt);
	FILE *f = popen(cmd, "r");
	if (!f)
		return 1;
	if (!fgets(slowfs_pid, sizeof(slowfs_pid), f))
		slowfs_pid[0] = 0;
	slowfs_pid[strcspn(slowfs_pid, "\n")] = 0;
	int st = pclose(f);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	if (rc != 0) {
		mnt[0] = 0;
		return rc == 77 ? 77 : 1;
	}
	return 0;
}

static unsigned long slowfs_stat_at(const char *m, const char *op)
{
	char p[460], line[128];
	snprintf(p, sizeof(p), "%s/.slowfs-stats", m);
	FILE *f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	unsigned long v = 0;
	size_t l = strlen(op);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, op, l) && line[l] == ' ')
			v = strtoul(line + l + 1, NULL, 10);
	fclose(f);
	return v;
}

static unsigned long slowfs_stat(const char *op)
{
	return slowfs_stat_at(mnt, op);
}

static void open_root(void)
{
	ck_assert_int_eq(lk_root_open(mnt, NULL, &root), 0);
}

static void close_root(void)
{
	lk_root_close(root);
	root = NULL;
}

/* ---- FUSE is not a local file system ---- */
START_TEST(fuse_is_not_local)
{
	open_root();
	ck_assert_int_eq(lk_fs_local(lk_root_fd(root)), 0);
	close_root();
}
END_TEST

/* ---- EIO on one entry fails that entry only ---- */
static void eio_fibril(void *arg)
{
	struct lk_scan_opts o = { .sort = *(enum lk_sort *)arg, .window = 64 };
	lk_scan_t *s;
	struct lk_stats a, b;
	lk_stats(&a);
	ck_assert_int_eq(lk_scan_open(root, "", &o, &s), 0);
	const struct lk_entry *e;
	size_t n, total = 0, failed = 0;
	int rc;
	while ((rc = lk_scan_next(s, &e, &n)) == 1)
		for (size_t i = 0; i < n; i++, total++) {
			if (!strcmp(e[i].name, "f100.eio")) {
				ck_assert_int_eq(e[i].err, -EIO);
				ck_assert_uint_eq(e[i].stx.stx_mask, 0);
				failed++;
			} else {
				ck_assert_msg(e[i].err == 0, "%s: err %d", e[i].name,
					      e[i].err);
				ck_assert_uint_ne(e[i].stx.stx_mask, 0);
			}
		}
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(failed, 1);
	ck_assert_uint_eq(total, 202);
	lk_scan_close(s);
	/* FUSE is not a local file system: one statx per entry, never a
	 * batch (each stat waits a round trip; 64 of them overlap). */
	lk_stats(&b);
	ck_assert_uint_eq(b.statx_batches - a.statx_batches, 0);
	ck_assert_uint_ge(b.statx_calls - a.statx_calls, 202);
}

START_TEST(eio_fails_alone)
{
	enum lk_sort sorts[] = { LK_SORT_NAME, LK_SORT_NONE, LK_SORT_SIZE };
	open_root();
	for (unsigned i = 0; i < 3; i++)
		tl_run_fibril(eio_fibril, &sorts[i]);
	struct lk_file f;
	ck_assert_int_eq(lk_open(root, "f100.eio", O_RDONLY, NULL, &f), -EIO);
	close_root();
}
END_TEST

/* ---- slow stats overlap; other fibrils run meanwhile ---- */
struct par { bool scanning; unsigned ran_while_parked; int rc; size_t n; };

static void par_scan(void *arg)
{
	struct par *p = arg;
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .window = 64 };
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "", &o, &s), 0);
	const struct lk_entry *e;
	size_t n;
	p->scanning = true;
	while ((p->rc = lk_scan_next(s, &e, &n)) == 1)
		p->n += n;
	p->scanning = false;
	lk_scan_close(s);
}

static void par_other(void *arg)
{
	struct par *p = arg;
	/* Runs only when the scanner parks: its stats are in flight. */
	while (!p->scanning)
		fibril_yield();
	while (p->scanning) {
		p->ran_while_parked++;
		fibril_park_until(fibril_now_ns() + 1000000);
	}
}

START_TEST(parallel_and_not_blocking)
{
	open_root();
	unsigned long lookups0 = slowfs_stat("lookup");
	struct par p = { 0 };
	async_engine_t *e;
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	ck_assert_int_eq(fibril_create(NULL, par_scan, &p, "scan"), 0);
	ck_assert_int_eq(fibril_create(NULL, par_other, &p, "other"), 0);
	ck_assert_int_eq(async_engine_run(e), 0);
	async_engine_destroy(e);
	fibril_sched_fini();
	ck_assert_int_eq(p.rc, 0);
	ck_assert_uint_eq(p.n, 202);   /* 200 files, f100.eio, sub */
	ck_assert_uint_ge(p.ran_while_parked, 1);
	/* Every entry was looked up once by its statx... */
	ck_assert_uint_ge(slowfs_stat("lookup") - lookups0, 202);
	/* ...and many were waiting in slowfs at the same time. */
	ck_assert_uint_ge(slowfs_stat("inflight_max"), 8);
	close_root();
}
END_TEST

/* ---- callback-style opens from a foreign loop (no fibrils) ---- */
struct ocb { int calls, res; long size; };

static void ocb_done(void *arg, int res, const struct lk_file *f)
{
	struct ocb *o = arg;
	o->calls++;
	o->res = res;
	if (res == 0) {
		o->size = (long)f->stx.stx_size;
		close(f->fd);
	}
}

START_TEST(open_callback_and_cancel)
{
	open_root();
	async_engine_t *e;
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	struct ocb a = { 0, 1, -1 }, b = { 0, 1, -1 };
	struct lk_file f;
	lk_op_t *opb = NULL;
	/* Nothing is cached on slowfs: both go through the engine. */
	ck_assert_int_eq(lk_open_start(root, "f001", O_RDONLY, NULL, &f,
				       ocb_done, &a, NULL), 1);
	ck_assert_int_eq(lk_open_start(root, "f002", O_RDONLY, NULL, &f,
				       ocb_done, &b, &opb), 1);
	ck_assert_int_eq(a.calls + b.calls, 0);
	lk_op_cancel(opb);
	while (a.calls == 0 || b.calls == 0) {
		struct pollfd p = { async_engine_fd(e), POLLIN, 0 };
		if (async_engine_process(e, 0) == 0)
			poll(&p, 1, 100);
	}
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.res, 0);
	ck_assert_int_eq(a.size, 0);
	ck_assert_int_eq(b.calls, 1);
	ck_assert_int_eq(b.res, -ECANCELED);
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_uint_eq(st.live_ops, 0);
	async_engine_destroy(e);
	close_root();
}
END_TEST

/* Keeps the descriptor opened (the callback form of lk_open). */
struct ocbk { int calls, res, fd; };

static void ocb_keep(void *arg, int res, const struct lk_file *f)
{
	struct ocbk *o = arg;
	o->calls++;
	o->res = res;
	o->fd = res == 0 ? f->fd : -1;
}

/* ---- the caller never waits on the server's open or release ---- */
struct pend { int calls; long res; unsigned inflight_added; };

static void pend_done(void *arg, long res)
{
	struct pend *p = arg;
	p->calls++;
	p->res = res;
}

static void pend_until(async_engine_t *e, const int *calls)
{
	while (*calls == 0) {
		struct pollfd p = { async_engine_fd(e), POLLIN, 0 };
		if (async_engine_process(e, 0) == 0)
			poll(&p, 1, 100);
	}
}

static void lookup_release_cb(void *arg, int res, struct lk_lookup *l)
{
	struct pend *p = arg;
	p->calls++;
	p->res = res;
	if (res == 0) {
		unsigned before = async_engine_inflight(async_engine_current());
		lk_lookup_release(l);
		p->inflight_added = async_engine_inflight(async_engine_current()) -
			before;
	}
}

/* The FUSE mount point, reached from the directory holding it, is in
 * the dcache (the walk crosses into the mount's root, no FUSE lookup):
 * a cached walk reaches it, and what is left is the server's OPENDIR
 * (and, at close, RELEASEDIR), which must be a backend's wait, never
 * the submitting thread's. Seen as a pending submit, not as a time. */
START_TEST(remote_open_close_not_inline)
{
	open_root();
	lk_root_t *parent;
	ck_assert_int_eq(lk_root_open(tl_dir, NULL, &parent), 0);
	async_engine_t *e;
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	/* The lookup engine: from a local root into the FUSE mount, and
	 * beneath the FUSE root itself, never inline; what it opened is
	 * closed through the engine. */
	const char *paths[2] = { "mnt", "" };
	lk_root_t *roots[2] = { parent, root };
	for (int i = 0; i < 2; i++) {
		struct ocb o = { 0, 1, -1 };
		struct lk_file f;
		ck_assert_int_eq(lk_open_start(roots[i], paths[i],
					       O_RDONLY | O_DIRECTORY, NULL,
					       &f, ocb_done, &o, NULL), 1);
		ck_assert_int_eq(o.calls, 0);
		pend_until(e, &o.calls);
		ck_assert_int_eq(o.res, 0);
	}
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC };
	unsigned long a[4] = { (unsigned long)lk_root_fd(parent),
			       (unsigned long)"mnt", (unsigned long)&how,
			       sizeof(how) };
	struct pend po = { 0 }, pc = { 0 }, pl = { 0 };
	long res = 0;
	unsigned long opendirs0 = slowfs_stat("opendir");
	ck_assert_int_gt(async_submit_cb(0, &res, ASYNC_OPENAT2, a,
					 pend_done, &po), 0);
	ck_assert_int_eq(po.calls, 0);
	pend_until(e, &po.calls);
	ck_assert_int_ge(po.res, 0);
	ck_assert_uint_eq(slowfs_stat("opendir") - opendirs0, 1);
	unsigned long c[1] = { (unsigned long)po.res };
	ck_assert_int_gt(async_submit_cb(0, &res, ASYNC_CLOSE, c,
					 pend_done, &pc), 0);
	ck_assert_int_eq(pc.calls, 0);
	pend_until(e, &pc.calls);
	ck_assert_int_eq(pc.res, 0);

	struct lk_lookup_opts lo = { .oflags = O_RDONLY | O_DIRECTORY };
	struct lk_lookup l;
	ck_assert_int_eq(lk_lookup_start(parent, "mnt", &lo, &l,
					 lookup_release_cb, &pl, NULL), 1);
	ck_assert_int_eq(pl.calls, 0);
	pend_until(e, &pl.calls);
	ck_assert_int_eq(pl.res, 0);
	ck_assert_uint_eq(pl.inflight_added, 1);
	ck_assert_int_eq(async_engine_run(e), 0);
	ck_assert_uint_eq(async_engine_inflight(e), 0);
	async_engine_destroy(e);
	lk_root_close(parent);
	close_root();
}
END_TEST

/* ---- what the engine remembers of a descriptor is never stale ---- */
/* true when the close went to a backend, false when it ran here */
static bool sub_close(long fd)
{
	unsigned long a[1] = { (unsigned long)fd };
	long res = 1;
	long c = async_submit(0, &res, ASYNC_CLOSE, a);
	ck_assert_int_ge(c, 0);
	if (c > 0)
		res = wait_for_async(c);
	ck_assert_int_eq(res, 0);
	return c > 0;
}

/* The engine learns that a directory is local once and then opens and
 * closes beneath it from memory. A FUSE mount placed below that
 * directory afterwards, and a number it knew as a local file handed
 * out again for a FUSE file, must still see their opens and closes go
 * to a backend. */
START_TEST(late_mount_and_reused_numbers)
{
	char late[400], p[460];
	snprintf(late, sizeof(late), "%s/late", tl_dir);
	int dfd = tl_dir_with(tl_dir, "late", "local.txt");
	async_engine_t *e;
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);

	/* Local: both inline, the second time from memory. */
	bool pend;
	for (int i = 0; i < 2; i++) {
		long fd = tl_submit_open(dfd, "local.txt", O_RDONLY, &pend);
		ck_assert_int_ge(fd, 0);
		ck_assert(!pend);
		ck_assert(!sub_close(fd));
	}

	/* slowfs mounted on late/ while the engine runs. */
	const char *src = getenv("top_srcdir");
	char cmd[1200], pid[32] = "";
	snprintf(cmd, sizeof(cmd), "sh '%s/t/slowfs/mount.sh' -o delay_ms=1 '%s' '%s'",
		 src, back, late);
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	if (!fgets(pid, sizeof(pid), f))
		pid[0] = 0;
	pid[strcspn(pid, "\n")] = 0;
	ck_assert_int_eq(pclose(f), 0);
	struct stat st;
	ck_assert_int_eq(stat(late, &st), 0);   /* the mount point, cached */
	snprintf(p, sizeof(p), "%s/f001", late);
	ck_assert_int_eq(stat(p, &st), 0);      /* and a file in it */

	unsigned long opens0 = slowfs_stat_at(late, "open");
	unsigned long dirs0 = slowfs_stat_at(late, "opendir");
	const char *paths[2] = { "late", "late/f001" };
	int fl[2] = { O_RDONLY | O_DIRECTORY, O_RDONLY };
	for (int i = 0; i < 2; i++) {
		long fd = tl_submit_open(dfd, paths[i], fl[i], &pend);
		ck_assert_int_ge(fd, 0);
		ck_assert_msg(pend, "%s: FUSE open ran inline", paths[i]);
		ck_assert_msg(sub_close(fd), "%s: FUSE close ran inline", paths[i]);
	}
	ck_assert_uint_eq(slowfs_stat_at(late, "open") - opens0, 1);
	ck_assert_uint_eq(slowfs_stat_at(late, "opendir") - dirs0, 1);

	/* The number of a local file the engine opened inline, closed
	 * behind its back and handed out again by a FUSE open through the
	 * engine (the lowest free number: the same one). */
	int lfd = open(late, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(lfd, 0);
	long fd = tl_submit_open(dfd, "local.txt", O_RDONLY, &pend);
	ck_assert(!pend);
	close((int)fd);
	long ffd = tl_submit_open(lfd, "f002", O_RDONLY, &pend);
	ck_assert_int_eq(ffd, fd);
	ck_assert(pend);
	ck_assert_msg(sub_close(ffd), "reused number: FUSE close ran inline");
	/* The same through the lookup engine's own open. */
	fd = tl_submit_open(dfd, "local.txt", O_RDONLY, &pend);
	ck_assert(!pend);
	close((int)fd);
	lk_root_t *fr;
	ck_assert_int_eq(lk_root_open(late, NULL, &fr), 0);
	struct ocbk o = { 0, 1, -1 };
	struct lk_file lkf = { .fd = -1 };
	int rc = lk_open_start(fr, "f003", O_RDONLY, NULL, &lkf, ocb_keep, &o,
			       NULL);
	ck_assert_int_eq(rc, 1);
	pend_until(e, &o.calls);
	ck_assert_int_eq(o.res, 0);
	ck_assert_msg(sub_close(o.fd), "lk_open's number: FUSE close ran inline");
	lk_root_close(fr);
	close(lfd);

	ck_assert_int_eq(async_engine_run(e), 0);
	async_engine_destroy(e);
	close(dfd);
	snprintf(cmd, sizeof(cmd), "sh '%s/t/slowfs/umount.sh' '%s' %s", src,
		 late, pid);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- LK_SCAN_LOOKUP_ATTRS: one round trip per entry, not two ---- */
static void count_scan(void *arg)
{
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .flags = *(unsigned *)arg };
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "", &o, &s), 0);
	const struct lk_entry *e;
	size_t n;
	while (lk_scan_next(s, &e, &n) == 1)
		;
	lk_scan_close(s);
}

START_TEST(lookup_attrs_saves_getattr)
{
	open_root();
	unsigned flags = 0;
	unsigned long g0 = slowfs_stat("getattr");
	tl_run_fibril(count_scan, &flags);
	unsigned long g1 = slowfs_stat("getattr");
	flags = LK_SCAN_LOOKUP_ATTRS;
	unsigned long l1 = slowfs_stat("lookup");
	tl_run_fibril(count_scan, &flags);
	unsigned long g2 = slowfs_stat("getattr"), l2 = slowfs_stat("lookup");
	ck_assert_uint_ge(g1 - g0, 201);     /* a getattr per entry */
	ck_assert_uint_ge(l2 - l1, 201);     /* still a lookup per entry */
	ck_assert_uint_lt(g2 - g1, 20);      /* but no getattr */
	close_root();
}
END_TEST

/* ---- LK_SCAN_BACKGROUND: on FUSE, the stats run at SCHED_IDLE ---- */
static int idle_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && t_thread_policy(de->d_name) == SCHED_IDLE)
			n++;
	closedir(d);
	return n;
}

struct bgs { unsigned flags; size_t total, failed; int idle; };

static void bg_scan(void *arg)
{
	struct bgs *b = arg;
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .flags = b->flags,
				  .window = 64 };
	lk_scan_t *s;
	ck_assert_int_eq(lk_scan_open(root, "", &o, &s), 0);
	const struct lk_entry *e;
	size_t n;
	int rc;
	while ((rc = lk_scan_next(s, &e, &n)) == 1)
		for (size_t i = 0; i < n; i++, b->total++)
			if (e[i].err)
				b->failed++;
	ck_assert_int_eq(rc, 0);
	lk_scan_close(s);
	b->idle = idle_threads();   /* the engine keeps its threads */
}

START_TEST(background_scan)
{
	open_root();
	struct bgs fg = { 0 }, bg = { .flags = LK_SCAN_BACKGROUND };
	tl_run_fibril(bg_scan, &fg);
	tl_run_fibril(bg_scan, &bg);
	ck_assert_uint_eq(fg.total, 202);
	ck_assert_uint_eq(bg.total, 202);
	ck_assert_uint_eq(fg.failed, 1);   /* f100.eio, alone */
	ck_assert_uint_eq(bg.failed, 1);
	ck_assert_int_eq(fg.idle, 0);
	ck_assert_int_ge(bg.idle, 1);
	close_root();
}
END_TEST

/* ---- cancelling opens and scans frees everything ---- */
struct cx { lk_group_t *g; int open_rc, scan_rc; };

static void cx_open(void *arg)
{
	struct cx *c = arg;
	struct lk_file f;
	c->open_rc = lk_open(root, "sub/../f001", O_RDONLY, c->g, &f);
	if (c->open_rc == 0)
		close(f.fd);
}

static void cx_scan(void *arg)
{
	struct cx *c = arg;
	struct lk_scan_opts o = { .sort = LK_SORT_MTIME, .group = c->g };
	lk_scan_t *s;
	c->scan_rc = lk_scan_open(root, "", &o, &s);
	if (c->scan_rc < 0)
		return;
	const struct lk_entry *e;
	size_t n;
	while ((c->scan_rc = lk_scan_next(s, &e, &n)) == 1)
		;
	lk_scan_close(s);
}

static void cx_cancel(void *arg)
{
	struct cx *c = arg;
	fibril_yield();
	lk_group_cancel(c->g);
}

START_TEST(cancel_frees)
{
	open_root();
	struct cx c = { NULL, 1, 1 };
	ck_assert_int_eq(lk_group_new(&c.g), 0);
	async_engine_t *e;
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	ck_assert_int_eq(fibril_create(NULL, cx_open, &c, "open"), 0);
	ck_assert_int_eq(fibril_create(NULL, cx_scan, &c, "scan"), 0);
	ck_assert_int_eq(fibril_create(NULL, cx_cancel, &c, "cancel"), 0);
	ck_assert_int_eq(async_engine_run(e), 0);
	ck_assert_int_eq(c.open_rc, -ECANCELED);
	ck_assert_int_eq(c.scan_rc, -ECANCELED);
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_uint_eq(st.live_ops, 0);
	ck_assert_uint_eq(st.live_scans, 0);
	ck_assert_uint_eq(st.live_flights, 0);
	ck_assert_uint_eq(async_engine_inflight(e), 0);
	async_engine_destroy(e);
	fibril_sched_fini();
	lk_group_free(c.g);
	close_root();
}
END_TEST

static int before(void)
{
	int rc = mount_slowfs(1);
	if (rc) {
		unmount_all();
		if (rc == 77)
			fprintf(stderr, "slowfs cannot be mounted here: skipped\n");
		return rc;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return 0;
}

/* ---- a bound on the scans doing I/O at once ---- */
static void mkfiles(const char *dir, unsigned n)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/%s", back, dir);
	if (mkdir(p, 0755) != 0)
		ck_assert_int_eq(errno, EEXIST);
	for (unsigned i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s/e%04u", back, dir, i);
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
}

static long scan_all(lk_scan_t *s)
{
	const struct lk_entry *e;
	size_t n;
	long total = 0;
	int rc;
	while ((rc = lk_scan_next(s, &e, &n)) == 1)
		total += (long)n;
	return rc < 0 ? rc : total;
}

struct lim { long a, b, c; int joinable, a_busy; uint64_t joins, passes; };

/* Reads @a (which may have delivered l->a entries already), @b and @c
 * to their ends and closes them; the joins and passes since @st0. */
static void lim_finish(struct lim *l, const struct lk_stats *st0,
		       lk_scan_t *a, lk_scan_t *b, lk_scan_t *c)
{
	struct lk_stats st1;
	long rest = scan_all(a);

	l->a = rest < 0 ? rest : l->a + rest;
	l->b = scan_all(b);
	l->c = scan_all(c);
	lk_stats(&st1);
	l->joins = st1.shared_joins - st0->shared_joins;
	l->passes = st1.getdents_passes - st0->getdents_passes;
	lk_scan_close(a);
	lk_scan_close(b);
	lk_scan_close(c);
}

/* Opens lim_a size-sorted with a window of 8 (it stats every entry in
 * directory order whatever its reader does: 1,000 stats of 1 ms, eight
 * at a time) and waits until its directory is open and its flight
 * started. */
static lk_scan_t *busy_scan(void)
{
	struct lk_scan_opts oa = { .sort = LK_SORT_SIZE, .window = 8 };
	struct lk_stats st0, st1;
	lk_scan_t *a;

	lk_stats(&st0);
	ck_assert_int_eq(lk_scan_open(root, "lim_a", &oa, &a), 0);
	do {
		fibril_park_until(fibril_now_ns() + 1000000);
		lk_stats(&st1);
	} while (st1.getdents_passes == st0.getdents_passes);
	return a;
}

/* A (busy_scan) has calls in flight for 1,000 stats. B, opened
 * meanwhile, waits, and so is still joinable long after it would have
 * issued its stats alone; C, identical to B, joins it. */
static void lim_scan(void *arg)
{
	struct lim *l = arg;
	struct lk_scan_opts ob = { .sort = LK_SORT_NAME };
	struct lk_stats st0;
	struct statx bdir;
	lk_scan_t *a, *b, *c;
	char p[400];

	snprintf(p, sizeof(p), "%s/lim_b", mnt);
	ck_assert_int_eq(statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &bdir), 0);
	lk_stats(&st0);
	a = busy_scan();
	ck_assert_int_eq(lk_scan_open(root, "lim_b", &ob, &b), 0);
	fibril_park_until(fibril_now_ns() + 40000000);
	l->joinable = lk_scan_joinable(root, &bdir, &ob);
	ck_assert_int_eq(lk_scan_open(root, "lim_b", &ob, &c), 0);
	lim_finish(l, &st0, a, b, c);
}

/* Runs @fn with lim_a (1,000 entries) and lim_b (50) under a bound of
 * one scan at a time; the root is closed after. */
static struct lim lim_run(void (*fn)(void *))
{
	struct lim l = { 0 };
	open_root();
	mkfiles("lim_a", 1000);
	mkfiles("lim_b", 50);
	ck_assert_int_eq(lk_root_limit_scans(root, 1), 0);
	tl_run_fibril(fn, &l);
	close_root();
	ck_assert_int_eq(l.a, 1000);
	ck_assert_int_eq(l.b, 50);
	return l;
}

START_TEST(limit_scans)
{
	struct lim l = lim_run(lim_scan);
	ck_assert_int_eq(l.c, 50);
	ck_assert_int_eq(l.joinable, 1);
	ck_assert_uint_eq(l.joins, 1);
	ck_assert_uint_eq(l.passes, 2);
	struct lk_stats st;
	lk_stats(&st);
	ck_assert_uint_eq(st.live_flights, 0);
	ck_assert_int_eq(lk_root_limit_scans(NULL, 1), -EINVAL);
}
END_TEST

/* A scan whose reader stops reading holds no place once its look-ahead
 * is stat'ed: the same fibril can list another directory to its end,
 * then come back. */
static void lim_idle(void *arg)
{
	struct lim *l = arg;
	struct lk_scan_opts o = { .sort = LK_SORT_NAME, .window = 16 };
	const struct lk_entry *e;
	size_t n;
	lk_scan_t *a, *b;

	ck_assert_int_eq(lk_scan_open(root, "lim_a", &o, &a), 0);
	ck_assert_int_eq(lk_scan_next(a, &e, &n), 1);
	l->a = (long)n;
	ck_assert_int_eq(lk_scan_open(root, "lim_b", &o, &b), 0);
	l->b = scan_all(b);
	long rest = scan_all(a);
	l->a = rest < 0 ? rest : l->a + rest;
	lk_scan_close(a);
	lk_scan_close(b);
}

START_TEST(limit_scans_idle_reader)
{
	lim_run(lim_idle);
}
END_TEST

/* A scan that joins a flight with nothing left to stat needs no place:
 * it reads at once while another scan holds the only one. */
static void lim_done_join(void *arg)
{
	struct lim *l = arg;
	struct lk_scan_opts of = { .sort = LK_SORT_NAME, .join_age_ms = 60000 };
	struct lk_stats st0, st1;
	lk_scan_t *a, *f, *j;

	ck_assert_int_eq(lk_scan_open(root, "lim_b", &of, &f), 0);
	l->b = scan_all(f);                      /* done, and still open */
	lk_stats(&st0);
	a = busy_scan();
	ck_assert_int_eq(lk_scan_open(root, "lim_b", &of, &j), 0);
	l->c = scan_all(j);
	/* A, 1,000 stats eight at a time, is still at them. */
	l->a_busy = async_engine_inflight(async_engine_current()) > 0;
	lk_stats(&st1);
	l->joins = st1.shared_joins - st0.shared_joins;
	l->a = scan_all(a);
	lk_scan_close(a);
	lk_scan_close(f);
	lk_scan_close(j);
}

START_TEST(limit_scans_done_join)
{
	struct lim l = lim_run(lim_done_join);
	ck_assert_int_eq(l.c, 50);
	ck_assert_uint_eq(l.joins, 1);
	ck_assert_int_eq(l.a_busy, 1);
}
END_TEST

/* A scan that accepts attributes up to join_age_ms old joins one that
 * has begun its stats; one that does not runs its own pass. */
static void age_scan(void *arg)
{
	struct lim *l = arg;
	struct lk_scan_opts oa = { .sort = LK_SORT_NAME, .window = 8 };
	struct lk_scan_opts old = oa, fresh = oa;
	const struct lk_entry *e;
	struct lk_stats st0;
	struct statx adir;
	lk_scan_t *a, *b, *c;
	size_t n;
	char p[400];

	old.join_age_ms = 60000;
	snprintf(p, sizeof(p), "%s/lim_a", mnt);
	ck_assert_int_eq(statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &adir), 0);
	lk_stats(&st0);
	ck_assert_int_eq(lk_scan_open(root, "lim_a", &oa, &a), 0);
	ck_assert_int_eq(lk_scan_next(a, &e, &n), 1);   /* A has begun its stats */
	l->a = (long)n;
	l->joinable = lk_scan_joinable(root, &adir, &fresh) * 10 +
		      lk_scan_joinable(root, &adir, &old);
	ck_assert_int_eq(lk_scan_open(root, "lim_a", &old, &b), 0);
	ck_assert_int_eq(lk_scan_open(root, "lim_a", &fresh, &c), 0);
	lim_finish(l, &st0, a, b, c);
}

START_TEST(join_age)
{
	open_root();
	mkfiles("lim_a", 1000);
	struct lim l = { 0 };
	tl_run_fibril(age_scan, &l);
	ck_assert_int_eq(l.a, 1000);
	ck_assert_int_eq(l.b, 1000);
	ck_assert_int_eq(l.c, 1000);
	ck_assert_int_eq(l.joinable, 1);   /* 0 without the age, 1 with */
	ck_assert_uint_eq(l.joins, 1);
	ck_assert_uint_eq(l.passes, 2);
	close_root();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lookup_slowfs");
	TCase *tc = tcase_create("slowfs");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, eio_fails_alone);
	tcase_add_test(tc, parallel_and_not_blocking);
	tcase_add_test(tc, cancel_frees);
	tcase_add_test(tc, lookup_attrs_saves_getattr);
	tcase_add_test(tc, background_scan);
	tcase_add_test(tc, open_callback_and_cancel);
	tcase_add_test(tc, fuse_is_not_local);
	tcase_add_test(tc, remote_open_close_not_inline);
	tcase_add_test(tc, late_mount_and_reused_numbers);
	tcase_add_test(tc, limit_scans);
	tcase_add_test(tc, limit_scans_idle_reader);
	tcase_add_test(tc, join_age);
	tcase_add_test(tc, limit_scans_done_join);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite, .before = before, .after = unmount_all);
