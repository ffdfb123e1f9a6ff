/*
 * contrib/bench/fibril-bench: what a fibril costs, next to a thread
 * measured in the same run. One "name: value" line per figure, each the
 * median of --reps repetitions (default 5):
 *
 *   switch_ns                   one park/wake hand-off between two fibrils
 *                               parking at the same call site
 *   switch_asym_ns              the same, parking at different call sites
 *   create_exit_ns              fibril_start() of an empty fibril that
 *                               exits, on a pooled stack
 *   pthread_create_join_ns      pthread_create() + pthread_join() of an
 *                               empty thread
 *   create_vs_pthread_ratio     pthread_create_join_ns / create_exit_ns
 *   rss_per_parked_fibril_bytes RSS growth (/proc/self/statm) per fibril
 *                               with 100,000 fibrils parked
 *
 * switch and create/exit run entirely on this thread, so they are timed
 * with its CPU clock (CLOCK_THREAD_CPUTIME_ID): on a shared 2-core
 * machine the wall clock also counts the time slices other processes
 * take while we are preempted, which moved switch_ns by 2x between runs
 * and is no part of what a switch costs. pthread_create/join waits for
 * another thread by nature, so it keeps the wall clock.
 *
 * The fibril figures are taken pinned to the CPU the bench started on
 * (as a daemon worker thread may be): unpinned, the kernel migrating the
 * thread between the two vCPUs during a run made switch_ns bimodal here
 * (8.8 or 14.5 ns from one run to the next; 8.8 every time pinned to
 * either CPU). pthread_create/join runs with the original affinity, so
 * the new thread can start on the other CPU as it would in a server.
 */
#include "first.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fibril/fibril.h"

static int reps = 5;

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- switch ---- */

/* Both fibrils run the same code and so park at the same call site, as
 * request fibrils parking in the async layer do: the CPU's return-stack
 * predictor then guesses right on the far side of the switch. With
 * different call sites every frame unwound after a switch is a
 * mispredicted return: that case is reported as switch_asym_ns. */
static fibril_t *peer[2];
static long rounds;

static void pingpong(void *arg)
{
	fibril_t *other = peer[(uintptr_t)arg ^ 1];
	for (long i = 0; i < rounds; i++) {
		fibril_wake(other);
		fibril_park();
	}
	fibril_wake(other);
}

static __attribute__((noinline)) void pingpong_b(void *arg)
{
	fibril_t *other = peer[(uintptr_t)arg ^ 1];
	for (long i = 0; i < rounds; i++) {
		fibril_wake(other);
		fibril_park();
	}
	fibril_wake(other);
}

static double bench_switch(int asym)
{
	rounds = 2000000;
	if (fibril_create(&peer[0], pingpong, (void *)0, "ping") < 0 ||
	    fibril_create(&peer[1], asym ? pingpong_b : pingpong, (void *)1,
	                  "pong") < 0)
		exit(1);
	uint64_t t0 = cpu_ns();
	int n = fibril_sched_run();
	uint64_t t1 = cpu_ns();
	fibril_join(peer[0]);
	fibril_join(peer[1]);
	return (double)(t1 - t0) / n;
}

/* ---- create/exit ---- */

static void empty(void *arg)
{
	(void)arg;
}

static double bench_create_exit(void)
{
	const long n = 1000000;
	uint64_t t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		if (fibril_start(NULL, empty, NULL, NULL) < 0)
			exit(1);
	return (double)(cpu_ns() - t0) / n;
}

static void *thread_empty(void *arg)
{
	return arg;
}

static double bench_pthread(void)
{
	const long n = 5000;
	uint64_t t0 = fibril_now_ns();
	for (long i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, thread_empty, NULL) != 0)
			exit(1);
		pthread_join(t, NULL);
	}
	return (double)(fibril_now_ns() - t0) / n;
}

/* ---- RSS of parked fibrils ---- */

static long rss_pages(void)
{
	long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld", &size, &rss) != 2)
		exit(1);
	fclose(f);
	return rss;
}

static void parked(void *arg)
{
	fibril_park();
}

static double bench_rss(void)
{
	enum { N = 100000 };
	static fibril_t *f[N];
	/* a fresh scheduler: no pooled stacks with pages already in */
	fibril_sched_fini();
	if (fibril_sched_init(NULL) < 0)
		exit(1);
	long before = rss_pages();
	for (int i = 0; i < N; i++)
		if (fibril_create(&f[i], parked, NULL, NULL) < 0)
			exit(1);
	fibril_sched_run();
	long after = rss_pages();
	for (int i = 0; i < N; i++)
		fibril_wake(f[i]);
	fibril_sched_run();
	for (int i = 0; i < N; i++)
		fibril_join(f[i]);
	return (double)(after - before) * (double)sysconf(_SC_PAGESIZE) / N;
}

int main(int argc, char **argv)
{
	double sw[32], swa[32], ce[32], pt[32], rss[32];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--reps N]\n", argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > 32)
		reps = 5;
	if (fibril_sched_init(NULL) < 0)
		return 1;
	cpu_set_t all, one;
	int pinned = sched_getaffinity(0, sizeof(all), &all) == 0 && sched_getcpu() >= 0;
	CPU_ZERO(&one);
	if (pinned)
		CPU_SET(sched_getcpu(), &one);
	bench_create_exit();  /* warm the stack pool */
	for (int r = 0; r < reps; r++) {
		if (pinned)
			sched_setaffinity(0, sizeof(one), &one);
		sw[r] = bench_switch(0);
		swa[r] = bench_switch(1);
		ce[r] = bench_create_exit();
		if (pinned)
			sched_setaffinity(0, sizeof(all), &all);
		pt[r] = bench_pthread();
	}
	for (int r = 0; r < (reps < 3 ? reps : 3); r++)
		rss[r] = bench_rss();
	double msw = median(sw, reps), mswa = median(swa, reps), mce = median(ce, reps),
	       mpt = median(pt, reps), mrss = median(rss, reps < 3 ? reps : 3);
	printf("switch_ns: %.1f\n", msw);
	printf("switch_asym_ns: %.1f\n", mswa);
	printf("create_exit_ns: %.1f\n", mce);
	printf("pthread_create_join_ns: %.1f\n", mpt);
	printf("create_vs_pthread_ratio: %.1f\n", mpt / mce);
	printf("rss_per_parked_fibril_bytes: %.0f\n", mrss);
	fibril_sched_fini();
	return 0;
}
