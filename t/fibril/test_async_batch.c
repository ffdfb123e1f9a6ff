/* Runs of statx calls in one directory on a local file system, which
 * the engine sends to its pool in batches: every result right, from a
 * thread and from fibrils, across directories, when cancelled while the
 * batch fills, and when the engine is destroyed with batches in flight.
 * Runs on both backends (async.mk). */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>

#include "async_check.h"
#include "fibril/fibril.h"

/* More than a few batches, and not a multiple of one. */
enum { NFILES = 1000 };

static async_engine_t *eng;
static int many = -1;

static void setup(void)
{
	char name[16];

	tdir_make();
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(NULL, &eng), 0);
	ck_assert_str_eq(async_engine_backend(eng), want_backend());
	ck_assert_int_eq(mkdirat(tdfd, "many", 0755), 0);
	many = openat(tdfd, "many", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(many, 0);
	/* Each file's size is its number: a stat given to the wrong entry
	 * shows. */
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "m%04d", i);
		int fd = openat(many, name, O_CREAT | O_WRONLY, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, i), 0);
		close(fd);
	}
}

static void teardown(void)
{
	char name[16];

	if (eng)
		async_engine_destroy(eng);
	eng = NULL;
	fibril_sched_fini();
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "m%04d", i);
		unlinkat(many, name, 0);
	}
	unlinkat(many, "gone", 0);
	close(many);
	many = -1;
	unlinkat(tdfd, "many", AT_REMOVEDIR);
	tdir_remove();
}

/* Room for the files, "." and "..", and one more ("gone"). */
enum { NENT = NFILES + 3 };

struct loop {
	int dfd;
	int n;
	char names[NENT][256];
	struct statx sb[NENT];
	long res[NENT];
	long cookie[NENT];
};

static struct loop lp;

/* The readdir-then-stat loop; does not wait. */
static void loop_submit(struct loop *l, int dirfd_)
{
	/* A descriptor of its own: a dup would share the position. */
	DIR *dir = fdopendir(openat(dirfd_, ".", O_RDONLY | O_DIRECTORY));
	struct dirent *de;

	ck_assert_ptr_nonnull(dir);
	l->dfd = dirfd_;
	l->n = 0;
	while ((de = readdir(dir)) != NULL) {
		ck_assert_int_lt(l->n, NENT);
		snprintf(l->names[l->n], sizeof(l->names[0]), "%s", de->d_name);
		l->cookie[l->n] = async_stat(dirfd_, l->names[l->n],
		                             &l->sb[l->n], &l->res[l->n]);
		ck_assert_int_ge(l->cookie[l->n], 0);
		l->n++;
	}
	closedir(dir);
}

static void loop_check(const struct loop *l)
{
	ck_assert_int_eq(l->n, NFILES + 2);
	for (int i = 0; i < l->n; i++) {
		ck_assert_msg(l->res[i] == 0, "%s: %ld", l->names[i], l->res[i]);
		if (l->names[i][0] == 'm')
			ck_assert_uint_eq(l->sb[i].stx_size,
			                  (unsigned long)atoi(l->names[i] + 1));
		else
			ck_assert(S_ISDIR(l->sb[i].stx_mode));
	}
}

START_TEST(thread_loop_every_result)
{
	for (int round = 0; round < 3; round++) {
		memset(&lp, 0, sizeof(lp));
		loop_submit(&lp, many);
		ck_assert_int_eq(wait_for_async(0), 0);
		loop_check(&lp);
		ck_assert_uint_eq(async_engine_inflight(eng), 0);
		ck_assert_uint_eq(async_outstanding(), 0);
	}
}
END_TEST

/* Where the loop's stats went (async_engine_stats()): on io_uring, only
 * the run's first calls to the ring, the rest to the pool, in batches. */
START_TEST(run_goes_to_the_pool)
{
	struct async_stats before, after;

	async_engine_stats(eng, &before);
	memset(&lp, 0, sizeof(lp));
	loop_submit(&lp, many);
	ck_assert_int_eq(wait_for_async(0), 0);
	loop_check(&lp);
	async_engine_stats(eng, &after);
	uint64_t ring = after.async[ASYNC_BACKEND_URING] -
	                before.async[ASYNC_BACKEND_URING];
	uint64_t pool = after.async[ASYNC_BACKEND_POOL] -
	                before.async[ASYNC_BACKEND_POOL];
	uint64_t sync = after.sync[ASYNC_BACKEND_URING] +
	                after.sync[ASYNC_BACKEND_POOL] -
	                before.sync[ASYNC_BACKEND_URING] -
	                before.sync[ASYNC_BACKEND_POOL];
	ck_assert_uint_eq(ring + pool + sync, (uint64_t)lp.n);
	if (strcmp(want_backend(), "uring") == 0)
		ck_assert_msg(ring < 64 && pool > (uint64_t)lp.n - 64,
		              "ring %lu, pool %lu of %d", (unsigned long)ring,
		              (unsigned long)pool, lp.n);
}
END_TEST

/* The process's threads named @name (the pools name theirs). */
static int threads_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;  /* gone meanwhile */
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (strcmp(comm, name) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Cached stats only use CPU: a large directory's loop queues batches
 * faster than they run, and they run on a pool of their own, one thread
 * per CPU and one more, not on the foreground pool (which would start a
 * thread for each batch waiting, up to its 16). On io_uring the
 * foreground pool takes only the directory's read-ahead and its close. */
enum { NBIG = 20000 };

START_TEST(batches_take_few_threads)
{
	cpu_set_t set;
	char name[16];
	struct statx *sb = calloc(NBIG + 2, sizeof(*sb));
	long *res = calloc(NBIG + 2, sizeof(*res));
	char (*names)[256] = calloc(NBIG + 2, sizeof(*names));
	int n = 0;

	ck_assert(sb && res && names);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	ck_assert_int_eq(mkdirat(tdfd, "big", 0755), 0);
	int big = openat(tdfd, "big", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(big, 0);
	for (int i = 0; i < NBIG; i++) {
		snprintf(name, sizeof(name), "b%05d", i);
		int fd = openat(big, name, O_CREAT | O_WRONLY, 0644);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
	int pool_before = threads_named("fibril-pool");
	DIR *dir = fdopendir(openat(big, ".", O_RDONLY | O_DIRECTORY));
	struct dirent *de;
	ck_assert_ptr_nonnull(dir);
	while ((de = readdir(dir)) != NULL) {
		ck_assert_int_lt(n, NBIG + 2);
		snprintf(names[n], sizeof(names[0]), "%s", de->d_name);
		ck_assert_int_ge(async_stat(big, names[n], &sb[n], &res[n]), 0);
		n++;
	}
	closedir(dir);
	ck_assert_int_eq(wait_for_async(0), 0);
	int batch = threads_named("fibril-batch");
	int pool = threads_named("fibril-pool") - pool_before;
	ck_assert_int_eq(n, NBIG + 2);
	for (int i = 0; i < n; i++)
		ck_assert_msg(res[i] == 0, "%s: %ld", names[i], res[i]);
	for (int i = 0; i < NBIG; i++) {
		snprintf(name, sizeof(name), "b%05d", i);
		unlinkat(big, name, 0);
	}
	close(big);
	unlinkat(tdfd, "big", AT_REMOVEDIR);
	free(sb);
	free(res);
	free(names);
	/* (On the threads backend the run's first stats, before it is
	 * seen to be one, go to the foreground pool one call each.) */
	if (strcmp(want_backend(), "threads") == 0)
		pool = 0;
	ck_assert_msg(batch >= 1 && batch <= CPU_COUNT(&set) + 1 && pool <= 2,
	              "%d batch threads, %d more in the pool, %d CPUs",
	              batch, pool, CPU_COUNT(&set));
}
END_TEST

/* Waiting on one cookie of a partly filled batch: the wait sends it. */
START_TEST(wait_one_in_partial_batch)
{
	memset(&lp, 0, sizeof(lp));
	loop_submit(&lp, many);
	int last = lp.n - 1;
	ck_assert_int_eq(wait_for_async(lp.cookie[last]), 0);
	ck_assert_int_eq(lp.res[last], 0);
	ck_assert_int_eq(wait_for_async(0), 0);
	loop_check(&lp);
}
END_TEST

/* Two directories, interleaved: each entry stat'ed in its own. */
START_TEST(two_directories_interleaved)
{
	static struct statx sa[NFILES], sb2[NFILES];
	static long ra[NFILES], rb[NFILES];
	char name[16];

	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "m%04d", i);
		char *nm = strdup(name);
		ck_assert_int_ge(async_stat(many, nm, &sa[i], &ra[i]), 0);
		/* The same name in the parent does not exist. */
		ck_assert_int_ge(async_stat(tdfd, nm, &sb2[i], &rb[i]), 0);
		ck_assert_int_eq(wait_for_async(0), 0);
		free(nm);
	}
	for (int i = 0; i < NFILES; i++) {
		ck_assert_int_eq(ra[i], 0);
		ck_assert_uint_eq(sa[i].stx_size, (unsigned long)i);
		ck_assert_int_eq(rb[i], -ENOENT);
	}
	/* Now without waiting in between: runs of 100 in each in turn,
	 * long enough to be batched, so that one batch holds both. */
	static char names[NFILES][16];
	for (int i = 0; i < NFILES; i++) {
		snprintf(names[i], sizeof(names[i]), "m%04d", i);
		ck_assert_int_ge(async_stat(i / 100 % 2 ? many : tdfd, names[i],
		                            &sa[i], &ra[i]), 0);
	}
	ck_assert_int_eq(wait_for_async(0), 0);
	for (int i = 0; i < NFILES; i++) {
		if (i / 100 % 2) {
			ck_assert_int_eq(ra[i], 0);
			ck_assert_uint_eq(sa[i].stx_size, (unsigned long)i);
		} else {
			ck_assert_int_eq(ra[i], -ENOENT);
		}
	}
}
END_TEST

/* A run's errors stay each entry's own. */
START_TEST(errors_per_entry)
{
	static char names[NFILES][16];
	static struct statx sb[NFILES];
	static long res[NFILES];

	for (int i = 0; i < NFILES; i++) {
		snprintf(names[i], sizeof(names[i]), i % 3 ? "m%04d" : "x%04d", i);
		ck_assert_int_ge(async_stat(many, names[i], &sb[i], &res[i]), 0);
	}
	ck_assert_int_eq(wait_for_async(0), 0);
	for (int i = 0; i < NFILES; i++) {
		if (i % 3) {
			ck_assert_int_eq(res[i], 0);
			ck_assert_uint_eq(sb[i].stx_size, (unsigned long)i);
		} else {
			ck_assert_int_eq(res[i], -ENOENT);
		}
	}
}
END_TEST

/* Cancelling every call of a run: each ends cancelled or done, never
 * anything else, and the engine is left with nothing in flight. */
START_TEST(cancel_whole_run)
{
	memset(&lp, 0, sizeof(lp));
	loop_submit(&lp, many);
	for (int i = 0; i < lp.n; i++)
		if (lp.cookie[i] > 0)
			ck_assert_int_eq(async_cancel(lp.cookie[i]), 0);
	int cancelled = 0;
	for (int i = 0; i < lp.n; i++) {
		if (lp.cookie[i] == 0)
			continue;  /* ran inline or synchronously */
		long r = wait_for_async(lp.cookie[i]);
		ck_assert_msg(r == 0 || r == -ECANCELED, "%s: %ld", lp.names[i], r);
		ck_assert_int_eq(r, lp.res[i]);
		if (r == 0 && lp.names[i][0] == 'm')
			ck_assert_uint_eq(lp.sb[i].stx_size,
			                  (unsigned long)atoi(lp.names[i] + 1));
		cancelled += r == -ECANCELED;
	}
	/* The last calls were still in the batch being filled. */
	ck_assert_int_gt(cancelled, 0);
	ck_assert_int_eq(lp.res[lp.n - 1], -ECANCELED);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
	/* The engine goes on: a new run, all right. */
	memset(&lp, 0, sizeof(lp));
	loop_submit(&lp, many);
	ck_assert_int_eq(wait_for_async(0), 0);
	loop_check(&lp);
}
END_TEST

/* Destroyed without a wait: every result written before destroy
 * returns (a stat or -ECANCELED), none after. */
START_TEST(destroy_with_batches_in_flight)
{
	memset(&lp, 0, sizeof(lp));
	loop_submit(&lp, many);
	async_engine_destroy(eng);
	eng = NULL;
	for (int i = 0; i < lp.n; i++) {
		ck_assert_msg(lp.res[i] == 0 || lp.res[i] == -ECANCELED,
		              "%s: %ld", lp.names[i], lp.res[i]);
		if (lp.res[i] == 0 && lp.names[i][0] == 'm')
			ck_assert_uint_eq(lp.sb[i].stx_size,
			                  (unsigned long)atoi(lp.names[i] + 1));
	}
}
END_TEST

/* Four fibrils, each its own loop over the directory, interleaved by
 * their waits: a fibril's wait sends the batch it is in. */
static struct loop floops[4];

static void fibril_loop(void *arg)
{
	struct loop *l = arg;
	loop_submit(l, many);
	ck_assert_int_eq(wait_for_async(0), 0);
}

START_TEST(fibrils_loops)
{
	memset(floops, 0, sizeof(floops));
	for (int k = 0; k < 4; k++)
		ck_assert_int_ge(fibril_start(NULL, fibril_loop, &floops[k], "loop"),
		                 0);
	ck_assert_int_eq(async_engine_run(eng), 0);
	for (int k = 0; k < 4; k++)
		loop_check(&floops[k]);
	ck_assert_uint_eq(async_engine_inflight(eng), 0);
}
END_TEST

/* An engine whose thread must never run a call itself: the same loop,
 * every result right. */
START_TEST(queue_at_limit_loop)
{
	struct async_engine_opts o = { 0 };

	async_engine_destroy(eng);
	o.queue_at_limit = 1;
	o.max_inflight = 256;
	ck_assert_int_eq(async_engine_create(&o, &eng), 0);
	for (int round = 0; round < 2; round++) {
		memset(&lp, 0, sizeof(lp));
		loop_submit(&lp, many);
		ck_assert_int_eq(wait_for_async(0), 0);
		loop_check(&lp);
		ck_assert_uint_eq(async_engine_inflight(eng), 0);
	}
}
END_TEST

/* An entry removed between readdir and the batch's stat: ENOENT for it
 * alone. */
START_TEST(entry_removed_meanwhile)
{
	int fd = openat(many, "gone", O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	memset(&lp, 0, sizeof(lp));
	DIR *dir = fdopendir(openat(many, ".", O_RDONLY | O_DIRECTORY));
	ck_assert_ptr_nonnull(dir);
	struct dirent *de;
	int gone = -1;
	while ((de = readdir(dir)) != NULL) {
		ck_assert_int_lt(lp.n, NENT);
		snprintf(lp.names[lp.n], sizeof(lp.names[0]), "%s", de->d_name);
		if (strcmp(de->d_name, "gone") == 0) {
			gone = lp.n;
			/* Gone before its stat can run: the batch it joins is
			 * only handed over later. */
			ck_assert_int_eq(unlinkat(many, "gone", 0), 0);
		}
		lp.cookie[lp.n] = async_stat(many, lp.names[lp.n], &lp.sb[lp.n],
		                             &lp.res[lp.n]);
		lp.n++;
	}
	closedir(dir);
	ck_assert_int_eq(wait_for_async(0), 0);
	ck_assert_int_ge(gone, 0);
	for (int i = 0; i < lp.n; i++) {
		if (i == gone)
			ck_assert_int_eq(lp.res[i], -ENOENT);
		else
			ck_assert_msg(lp.res[i] == 0, "%s: %ld", lp.names[i],
			              lp.res[i]);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("async_batch");
	TCase *tc = tcase_create("runs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, thread_loop_every_result);
	tcase_add_test(tc, run_goes_to_the_pool);
	tcase_add_test(tc, batches_take_few_threads);
	tcase_add_test(tc, wait_one_in_partial_batch);
	tcase_add_test(tc, two_directories_interleaved);
	tcase_add_test(tc, errors_per_entry);
	tcase_add_test(tc, cancel_whole_run);
	tcase_add_test(tc, destroy_with_batches_in_flight);
	tcase_add_test(tc, fibrils_loops);
	tcase_add_test(tc, entry_removed_meanwhile);
	tcase_add_test(tc, queue_at_limit_loop);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite);
