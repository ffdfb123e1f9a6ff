/*
 * xcopy-probe: how fast one CPU reads memory another CPU has just
 * written, the step every body copied into a loopback socket by the
 * server and out of it by a client on the other CPU goes through.
 *
 * A writer thread on one CPU fills a buffer, a reader thread on the
 * other copies it out, in turn, and the reader's copies are timed; then
 * the two CPUs swap. Prints one line:
 *   xcopy_gbps: A B     (GB/s, first CPU to second, then back)
 *
 * On a virtual machine the rate can change for seconds at a time with
 * where the host runs the two vCPUs; the benchmarks run this beside
 * each measurement so that a slow round can be told from a slow server
 * (docs/BENCHMARKS.md, "Periods of slow copies into the socket").
 *
 * Usage: xcopy-probe [CPU_A CPU_B]   (default: the first two CPUs this
 * process may run on). Exit 0, or 1 with a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Within one CPU's L2 on the machines measured, so that a fast round is
 * a cache-to-cache transfer and not a walk to memory. */
#define XC_BYTES (256u * 1024u)
#define XC_TURNS 200

struct xc_pair {
	int cpu_w, cpu_r;
	unsigned char *shared, *own;
	atomic_int turn;        /* 0: the writer's, 1: the reader's */
	double read_s;
	bool pin_failed_w, pin_failed_r;       /* each written by its thread */
};

static double xc_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int xc_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *xc_writer(void *arg)
{
	struct xc_pair *p = arg;

	p->pin_failed_w = xc_pin(p->cpu_w) != 0;
	for (int i = 0; i < XC_TURNS; i++) {
		while (atomic_load_explicit(&p->turn, memory_order_acquire) != 0)
			;
		memset(p->shared, i, XC_BYTES);
		atomic_store_explicit(&p->turn, 1, memory_order_release);
	}
	return NULL;
}

static void *xc_reader(void *arg)
{
	struct xc_pair *p = arg;

	p->pin_failed_r = xc_pin(p->cpu_r) != 0;
	for (int i = 0; i < XC_TURNS; i++) {
		while (atomic_load_explicit(&p->turn, memory_order_acquire) != 1)
			;
		double t0 = xc_now();
		memcpy(p->own, p->shared, XC_BYTES);
		p->read_s += xc_now() - t0;
		atomic_store_explicit(&p->turn, 0, memory_order_release);
	}
	return NULL;
}

/* GB/s of @r reading what @w wrote, or -1 if either could not be
 * pinned to its CPU. */
static double xc_measure(int w, int r, unsigned char *shared, unsigned char *own)
{
	struct xc_pair p = { .cpu_w = w, .cpu_r = r, .shared = shared, .own = own };
	pthread_t tw, tr;

	atomic_init(&p.turn, 0);
	/* (a writer without its reader would wait for ever: no way back) */
	if (pthread_create(&tw, NULL, xc_writer, &p) ||
	    pthread_create(&tr, NULL, xc_reader, &p)) {
		fprintf(stderr, "xcopy-probe: cannot start a thread\n");
		exit(1);
	}
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	if (p.pin_failed_w || p.pin_failed_r || p.read_s <= 0)
		return -1;
	return (double)XC_BYTES * XC_TURNS / p.read_s / 1e9;
}

static int xc_first_two(int cpu[2])
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof set, &set))
		return -errno;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[n++] = c;
	return n == 2 ? 0 : -ENODEV;
}

static int xc_cpu_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v >= CPU_SETSIZE)
		return -EINVAL;
	return (int)v;
}

int main(int argc, char **argv)
{
	int cpu[2];
	unsigned char *shared, *own;

	if (argc == 3) {
		if ((cpu[0] = xc_cpu_arg(argv[1])) < 0 || (cpu[1] = xc_cpu_arg(argv[2])) < 0) {
			fprintf(stderr, "xcopy-probe: not a CPU number: %s\n",
			        cpu[0] < 0 ? argv[1] : argv[2]);
			return 1;
		}
	} else if (argc != 1 || xc_first_two(cpu) < 0) {
		fprintf(stderr, argc != 1 ? "usage: xcopy-probe [CPU_A CPU_B]\n"
		                          : "xcopy-probe: fewer than two CPUs to run on\n");
		return 1;
	}
	shared = aligned_alloc(4096, XC_BYTES);
	own = aligned_alloc(4096, XC_BYTES);
	if (!shared || !own) {
		fprintf(stderr, "xcopy-probe: out of memory\n");
		return 1;
	}
	memset(own, 0, XC_BYTES);
	double ab = xc_measure(cpu[0], cpu[1], shared, own);
	double ba = xc_measure(cpu[1], cpu[0], shared, own);
	if (ab < 0 || ba < 0) {
		fprintf(stderr, "xcopy-probe: cannot run on CPUs %d and %d\n", cpu[0], cpu[1]);
		return 1;
	}
	printf("xcopy_gbps: %.1f %.1f\n", ab, ba);
	free(shared);
	free(own);
	return 0;
}
