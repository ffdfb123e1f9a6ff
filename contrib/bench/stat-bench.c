/*
 * stat-bench DIR [ROUNDS [COLD_ROUNDS]]: the readdir-then-stat loop
 * (readdir, async_stat per entry, one wait_for_async) against the same
 * loop with plain statx(), side by side in one run; and one fibril's
 * openat2 + fstat + close against the raw syscalls. Prints
 * `name: value` lines.
 *
 * Each round measures both sides, in alternating order, and gives one
 * ratio; a figure is the median of the rounds (ROUNDS, default 7; cold:
 * COLD_ROUNDS, default 3), printed with the range of the rounds
 * (`_range: lowest-highest`). Round r starts both sides on CPU r mod
 * ncpu (then lets the scheduler move them), so no figure depends on the
 * vCPU the bench started on; `_by_start_cpu` gives each CPU's median.
 * The `_cpu_ns_per_entry` figures split the async side's CPU time
 * between the submitting thread and every other thread of the process
 * (the pool's, the ring's io-wq workers).
 *
 * Cold figures need root (they write /proc/sys/vm/drop_caches before
 * each side); without it they are skipped.
 *
 * For experiments, STAT_BENCH_IOWQ, STAT_BENCH_INFLIGHT, STAT_BENCH_SQ
 * and STAT_BENCH_POOL set the engine's iowq_bounded, max_inflight,
 * ring_entries and pool_threads (unset: the library's defaults, which
 * is what the figures are quoted with).
 */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fibril/async.h"
#include "fibril/fibril.h"

struct one_entry {
	struct one_entry *next;
	char name[256];
	struct statx stat_buf;
	long res;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* Jiffies of the whole machine: [0] all, [1] idle + iowait. */
static void machine_ticks(unsigned long long t[2])
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	t[0] = t[1] = 0;
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
	           &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
		for (int i = 0; i < 8; i++)
			t[0] += v[i];
		t[1] = v[3] + v[4];
	}
	fclose(f);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* What one pass cost, per entry. */
struct cost {
	double ns;        /* wall time */
	double self_cpu;  /* the loop's own thread */
	double other_cpu; /* every other thread of the process */
	double idle_pct;  /* of the whole machine meanwhile */
};

static void free_list(struct one_entry *e)
{
	while (e) {
		struct one_entry *n = e->next;
		free(e);
		e = n;
	}
}

/* One pass over @path; *count gets the number of entries. */
static struct cost pass(const char *path, int async, long *count)
{
	struct one_entry *prev = NULL;
	struct dirent *de;
	struct cost c;
	long n = 0, bad = 0;
	unsigned long long m0[2], m1[2];
	machine_ticks(m0);
	uint64_t c0 = cpu_ns(), s0 = thread_cpu_ns();
	uint64_t t0 = now_ns();
	DIR *dir = opendir(path);

	if (!dir) {
		perror(path);
		exit(1);
	}
	int dfd = dirfd(dir);
	if (async) {
		/* the readdir-then-stat loop, nearly verbatim */
		while ((de = readdir(dir)) != NULL) {
			struct one_entry *entry = malloc(sizeof(*entry));

			entry->next = prev;
			prev = entry;
			strcpy(entry->name, de->d_name);

			async_stat(dfd, entry->name, &entry->stat_buf, &entry->res);
			n++;
		}
		wait_for_async(0);
	} else {
		while ((de = readdir(dir)) != NULL) {
			struct one_entry *entry = malloc(sizeof(*entry));

			entry->next = prev;
			prev = entry;
			strcpy(entry->name, de->d_name);

			entry->res = statx(dfd, entry->name, AT_SYMLINK_NOFOLLOW,
			                   STATX_BASIC_STATS, &entry->stat_buf);
			n++;
		}
	}
	uint64_t t1 = now_ns(), s1 = thread_cpu_ns(), c1 = cpu_ns();
	double per = (double)(n ? n : 1);
	c.ns = (double)(t1 - t0) / per;
	c.self_cpu = (double)(s1 - s0) / per;
	c.other_cpu = c1 - c0 > s1 - s0 ? (double)((c1 - c0) - (s1 - s0)) / per : 0;
	machine_ticks(m1);
	c.idle_pct = m1[0] > m0[0] ? 100.0 * (double)(m1[1] - m0[1]) /
	                             (double)(m1[0] - m0[0]) : 0;
	closedir(dir);
	for (struct one_entry *e = prev; e; e = e->next)
		bad += e->res != 0;
	if (bad) {
		fprintf(stderr, "stat-bench: %ld failed stats\n", bad);
		exit(1);
	}
	free_list(prev);
	*count = n;
	return c;
}

static int drop_caches(void)
{
	sync();
	FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
	if (!f)
		return -1;
	int ok = fputs("3\n", f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* ---- one fibril: openat2 + fstat + close on a cached file ---- */

static int bench_dfd;
static const char *bench_file;
static long bench_iters;
static uint64_t bench_ns;

static void open_fstat_fibril(void *arg)
{
	struct open_how how = { .flags = O_RDONLY };
	struct statx sb;
	(void)arg;
	uint64_t t0 = now_ns();
	for (long i = 0; i < bench_iters; i++) {
		long fd = fibril_openat2(bench_dfd, bench_file, &how);
		if (fd < 0 || fibril_statx((int)fd, "", AT_EMPTY_PATH,
		                           STATX_BASIC_STATS, &sb) < 0) {
			fprintf(stderr, "stat-bench: fibril open/fstat failed\n");
			exit(1);
		}
		fibril_close((int)fd);
	}
	bench_ns = now_ns() - t0;
}

static double open_fstat_sync(void)
{
	struct open_how how = { .flags = O_RDONLY };
	struct statx sb;
	uint64_t t0 = now_ns();
	for (long i = 0; i < bench_iters; i++) {
		long fd = syscall(SYS_openat2, bench_dfd, bench_file, &how,
		                  sizeof(how));
		if (fd < 0 || statx((int)fd, "", AT_EMPTY_PATH,
		                    STATX_BASIC_STATS, &sb) < 0) {
			perror("stat-bench: open/fstat");
			exit(1);
		}
		close((int)fd);
	}
	return (double)(now_ns() - t0) / bench_iters;
}

static double open_fstat_async(async_engine_t *e)
{
	if (fibril_start(NULL, open_fstat_fibril, NULL, "bench") < 0 ||
	    async_engine_run(e) < 0) {
		fprintf(stderr, "stat-bench: fibril run failed\n");
		exit(1);
	}
	return (double)bench_ns / bench_iters;
}

static const char *first_file(const char *path)
{
	static char name[256];
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_type == DT_REG) {
			snprintf(name, sizeof(name), "%s", de->d_name);
			closedir(d);
			return name;
		}
	}
	if (d)
		closedir(d);
	return NULL;
}

static double min2(double a, double b)
{
	return a < b ? a : b;
}

/* ---- rounds: medians, ranges, and which CPU each round starts on ---- */

static cpu_set_t all_cpus;
static int ncpus, cpu_ids[CPU_SETSIZE];

static void cpus_init(void)
{
	if (sched_getaffinity(0, sizeof(all_cpus), &all_cpus) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all_cpus))
			cpu_ids[ncpus++] = c;
}

/* Moves this thread to the round's CPU, then lets the scheduler move it
 * again: where a pass starts is the round's choice, not the bench's
 * start-up's. Threads the engine makes inherit the whole set. */
static int start_round_on(int round)
{
	cpu_set_t one;

	if (!ncpus)
		return -1;
	int cpu = cpu_ids[round % ncpus];
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
	return cpu;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double *t = malloc((size_t)(n ? n : 1) * sizeof(*t));
	double m = 0;

	if (!t || n == 0) {
		free(t);
		return 0;
	}
	memcpy(t, v, (size_t)n * sizeof(*t));
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	free(t);
	return m;
}

/* `NAME: median`, `NAME_range: lo-hi`, with @fmt for each value. */
static void print_figure(const char *name, const double *v, int n,
                         const char *fmt)
{
	double lo = 1e300, hi = -1e300;
	char a[32], b[32], m[32];

	for (int i = 0; i < n; i++) {
		lo = min2(lo, v[i]);
		hi = v[i] > hi ? v[i] : hi;
	}
	snprintf(m, sizeof(m), fmt, median(v, n));
	snprintf(a, sizeof(a), fmt, lo);
	snprintf(b, sizeof(b), fmt, hi);
	printf("%s: %s\n%s_range: %s-%s\n", name, m, name, a, b);
}

/* `NAME_by_start_cpu: cpuA median, cpuB median`. */
static void print_by_cpu(const char *name, const double *v, const int *cpu,
                         int n)
{
	double *t = malloc((size_t)(n ? n : 1) * sizeof(*t));

	if (!t)
		return;
	printf("%s_by_start_cpu:", name);
	for (int k = 0; k < ncpus; k++) {
		int m = 0;
		for (int i = 0; i < n; i++)
			if (cpu[i] == cpu_ids[k])
				t[m++] = v[i];
		if (m)
			printf("%s cpu%d %.2f", k ? "," : "", cpu_ids[k],
			       median(t, m));
	}
	printf("\n");
	free(t);
}

/* Both sides of one comparison, one value per round. */
struct series {
	int n;
	double *sync_ns, *async_ns, *ratio, *sync_cpu, *self_cpu, *other_cpu,
	       *idle;
	int *cpu;
};

static void series_init(struct series *s, int rounds)
{
	size_t z = (size_t)(rounds ? rounds : 1);
	s->n = 0;
	s->sync_ns = calloc(z, sizeof(double));
	s->async_ns = calloc(z, sizeof(double));
	s->ratio = calloc(z, sizeof(double));
	s->sync_cpu = calloc(z, sizeof(double));
	s->self_cpu = calloc(z, sizeof(double));
	s->other_cpu = calloc(z, sizeof(double));
	s->idle = calloc(z, sizeof(double));
	s->cpu = calloc(z, sizeof(int));
	if (!s->sync_ns || !s->async_ns || !s->ratio || !s->sync_cpu ||
	    !s->self_cpu || !s->other_cpu || !s->idle || !s->cpu) {
		fprintf(stderr, "stat-bench: out of memory\n");
		exit(1);
	}
}

static void series_free(struct series *s)
{
	free(s->sync_ns);
	free(s->async_ns);
	free(s->ratio);
	free(s->sync_cpu);
	free(s->self_cpu);
	free(s->other_cpu);
	free(s->idle);
	free(s->cpu);
}

/* Rounds of the readdir-then-stat loop, each side after a drop of the
 * caches when @cold; the order of the two sides alternates. */
static void loop_rounds(struct series *s, const char *path, int rounds,
                        bool cold, long *n)
{
	series_init(s, rounds);
	for (int r = 0; r < rounds; r++) {
		struct cost c[2];
		int cpu = -1;
		for (int k = 0; k < 2; k++) {
			int async = (k + r) % 2;
			if (cold)
				drop_caches();
			cpu = start_round_on(r);
			c[async] = pass(path, async, n);
		}
		s->cpu[r] = cpu;
		s->sync_ns[r] = c[0].ns;
		s->async_ns[r] = c[1].ns;
		s->ratio[r] = c[1].ns / c[0].ns;
		s->sync_cpu[r] = c[0].self_cpu + c[0].other_cpu;
		s->self_cpu[r] = c[1].self_cpu;
		s->other_cpu[r] = c[1].other_cpu;
		s->idle[r] = c[1].idle_pct;
		s->n++;
	}
}

static void print_series(const struct series *s, const char *pre)
{
	char name[96];

#define FIG(suffix, v, fmt) \
	(snprintf(name, sizeof(name), "%s_%s", pre, suffix), \
	 print_figure(name, v, s->n, fmt))
	FIG("sync_ns_per_entry", s->sync_ns, "%.0f");
	FIG("async_ns_per_entry", s->async_ns, "%.0f");
	FIG("async_vs_sync", s->ratio, "%.2f");
	snprintf(name, sizeof(name), "%s_async_vs_sync", pre);
	print_by_cpu(name, s->ratio, s->cpu, s->n);
	FIG("sync_cpu_ns_per_entry", s->sync_cpu, "%.0f");
	FIG("async_submitter_cpu_ns_per_entry", s->self_cpu, "%.0f");
	FIG("async_other_threads_cpu_ns_per_entry", s->other_cpu, "%.0f");
	FIG("async_machine_idle_pct", s->idle, "%.0f");
#undef FIG
}

/* Slowest / fastest CPU on one fixed walk: a random cycle through 8 MiB
 * (past L2, within L3), as the cold lookups walk dentries, inodes and
 * buffer heads. Thread CPU time, so other load does not count, but a
 * vCPU whose cache the host shares with a busy neighbour does: here one
 * vCPU took 2.3-3.3x longer than the other for this walk while a pure
 * ALU loop ran at one speed on both. 0: not measured. */
static double vcpu_speed_spread(void)
{
	enum { N = 1u << 21, STEPS = 500000 };
	cpu_set_t old, one;
	double lo = 1e18, hi = 0;
	uint32_t *next = malloc(N * sizeof(*next));
	uint64_t seed = 88172645463325252u;
	int ncpu = 0;

	if (!next || sched_getaffinity(0, sizeof(old), &old) != 0) {
		free(next);
		return 0;
	}
	/* Sattolo's shuffle: one cycle through every slot. */
	for (uint32_t i = 0; i < N; i++)
		next[i] = i;
	for (uint32_t i = N - 1; i > 0; i--) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		uint32_t k = (uint32_t)(seed % i), t = next[i];
		next[i] = next[k];
		next[k] = t;
	}
	for (int c = 0; c < CPU_SETSIZE && ncpu < 64; c++) {
		if (!CPU_ISSET(c, &old))
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			continue;
		double best = 1e18;
		volatile uint32_t sink;
		for (int r = 0; r < 3; r++) {
			struct timespec a, b;
			uint32_t j = 0;
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
			for (long i = 0; i < STEPS; i++)
				j = next[j];
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
			sink = j;
			best = min2(best, (double)(b.tv_sec - a.tv_sec) * 1e9 +
			                  (double)(b.tv_nsec - a.tv_nsec));
		}
		(void)sink;
		lo = min2(lo, best);
		hi = best > hi ? best : hi;
		ncpu++;
	}
	sched_setaffinity(0, sizeof(old), &old);
	free(next);
	return ncpu && lo > 0 ? hi / lo : 0;
}

/* Rounds of one fibril's cached open + fstat + close against the raw
 * system calls. */
static void open_fstat_rounds(async_engine_t *e, const char *dir, int rounds)
{
	bench_file = first_file(dir);
	if (!bench_file)
		return;
	bench_dfd = open(dir, O_RDONLY | O_DIRECTORY);
	bench_iters = 100000;
	double *os = calloc((size_t)rounds, sizeof(double));
	double *oa = calloc((size_t)rounds, sizeof(double));
	double *ratio = calloc((size_t)rounds, sizeof(double));
	if (bench_dfd < 0 || !os || !oa || !ratio) {
		fprintf(stderr, "stat-bench: open/fstat setup failed\n");
		exit(1);
	}
	open_fstat_sync();
	for (int r = 0; r < rounds; r++) {
		start_round_on(r);
		os[r] = open_fstat_sync();
		oa[r] = open_fstat_async(e);
		ratio[r] = oa[r] / os[r];
	}
	print_figure("open_fstat_sync_ns", os, rounds, "%.0f");
	print_figure("open_fstat_fibril_ns", oa, rounds, "%.0f");
	print_figure("cached_open_fstat_vs_sync", ratio, rounds, "%.2f");
	free(os);
	free(oa);
	free(ratio);
	close(bench_dfd);
}

int main(int argc, char **argv)
{
	async_engine_t *e;
	struct async_engine_opts eo;
	struct series s;
	long n = 0;
	int rounds = argc > 2 ? atoi(argv[2]) : 7;
	int crounds = argc > 3 ? atoi(argv[3]) : 3;
	const char *v;

	if (argc < 2 || rounds < 1 || crounds < 0) {
		fprintf(stderr, "usage: stat-bench DIR [ROUNDS [COLD_ROUNDS]]\n");
		return 2;
	}
	cpus_init();
	/* engine knobs for experiments; unset = the library's defaults */
	memset(&eo, 0, sizeof(eo));
	if ((v = getenv("STAT_BENCH_IOWQ")))
		eo.iowq_bounded = (unsigned)atoi(v);
	if ((v = getenv("STAT_BENCH_INFLIGHT")))
		eo.max_inflight = (unsigned)atoi(v);
	if ((v = getenv("STAT_BENCH_SQ")))
		eo.ring_entries = (unsigned)atoi(v);
	if ((v = getenv("STAT_BENCH_POOL")))
		eo.pool_threads = (unsigned)atoi(v);
	if (fibril_sched_init(NULL) < 0 || async_engine_create(&eo, &e) < 0) {
		fprintf(stderr, "stat-bench: no engine\n");
		return 1;
	}
	printf("backend: %s\n", async_engine_backend(e));
	printf("cpus: %d\n", ncpus);

	/* warm: dentries, inodes, the allocator, the engine's threads */
	pass(argv[1], 0, &n);
	pass(argv[1], 1, &n);
	loop_rounds(&s, argv[1], rounds, false, &n);
	printf("entries: %ld\n", n);
	printf("cached_rounds: %d\n", rounds);
	print_series(&s, "cached");
	series_free(&s);

	printf("vcpu_speed_spread: %.2f\n", vcpu_speed_spread());
	if (crounds && drop_caches() == 0) {
		loop_rounds(&s, argv[1], crounds, true, &n);
		printf("cold_rounds: %d\n", crounds);
		print_series(&s, "cold");
		series_free(&s);
	} else {
		printf("cold_async_vs_sync: skipped (%s)\n",
		       crounds ? "needs root" : "COLD_ROUNDS 0");
	}

	open_fstat_rounds(e, argv[1], rounds);
	async_engine_destroy(e);
	fibril_sched_fini();
	return 0;
}
