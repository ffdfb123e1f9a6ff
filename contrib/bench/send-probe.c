/*
 * send-probe: three ways for a server to send a body it holds in
 * memory to a client on the other CPU, side by side: a plain copy
 * (`send`), `MSG_ZEROCOPY`, and `sendfile` from a memfd holding the
 * same bytes (the page references libmicrohttpd's file bodies and
 * nginx's `sendfile` hand the kernel).
 *
 * A sender on one CPU and a receiving process on the other (a client
 * of its own, as wrk is) move BODIES bodies of SIZE bytes over one TCP
 * connection per run; the receiver reads them READ bytes at a time
 * (8 KiB, as wrk does) and throws them away. Each round runs the three ways in turn, in the
 * reverse order every other round. Prints `name: value` lines:
 *   send_WAY_bodies_per_s        median of the rounds, and their range
 *   send_WAY_sender_us           the sender's CPU per body (median)
 *   send_WAY_receiver_us         the receiver's CPU per body (median)
 *   send_WAY_vs_copy             median of the per-round ratios of
 *                                bodies per second, and their range
 *   send_zerocopy_copied         of the zero-copy sends the kernel
 *                                completed, how many it says it copied
 *   send_zerocopy_waits          waits for completions (ENOBUFS: too
 *                                much memory pinned, or at the end)
 * WAY is copy, zerocopy or sendfile. To a client on the same host the
 * kernel copies every zero-copy send on delivery (the pages cannot
 * stay pinned in a local receive queue), so `send_zerocopy_copied`
 * tells whether the path could have saved anything at all.
 *
 * Usage: send-probe [-r ROUNDS] [-n BODIES] [-s SIZE] [-b READ]
 *                   [-c CPU_A,CPU_B] [-N NETNS_PATH -a ADDR]
 * Defaults: 5 rounds of 2,000 bodies of 1 MiB, the first two CPUs this
 * process may run on, 127.0.0.1. With -N the receiver joins that
 * network namespace (a path under /var/run/netns) and connects to ADDR,
 * where the sender listens: a client behind a veth pair.
 * Exit 0, or 1 with a message (docs/BENCHMARKS.md, "http-bench").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

enum sp_way { SP_COPY, SP_ZEROCOPY, SP_SENDFILE, SP_NWAYS };
static const char *const sp_names[SP_NWAYS] = { "copy", "zerocopy", "sendfile" };

#define SP_MAX_ROUNDS 99
/* The send buffer fileserverd gives a loopback client (DESIGN.md,
 * "Connections and limits"), so that every way is paced alike. */
#define SP_SNDBUF (1 << 20)

struct sp_opts {
	int rounds, cpu[2];
	long bodies, size, read;
	const char *netns, *addr;
};

struct sp_run {
	double per_s, sender_us, receiver_us;
};

/* The zero-copy sends the kernel has completed, and of them the ones
 * it copied anyway. */
struct sp_zc {
	unsigned long done, copied, waits;
};

static void sp_die(const char *what)
{
	fprintf(stderr, "send-probe: %s\n", what);
	exit(1);
}

static void sp_die_errno(const char *what)
{
	fprintf(stderr, "send-probe: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double sp_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double sp_cpu_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int sp_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set);
}

/* ---- the receiver: a process of its own ---- */

/* Reads until the sender closes, then writes its CPU seconds to @out. */
static void sp_receive(const struct sp_opts *o, const struct sockaddr_in *at, int out)
{
	char *buf = malloc((size_t)o->read);
	double cpu;

	if (sp_pin(o->cpu[1]))
		sp_die_errno("pinning the receiver");
	if (o->netns) {
		int ns = open(o->netns, O_RDONLY | O_CLOEXEC);
		if (ns < 0 || setns(ns, CLONE_NEWNET))
			sp_die_errno(o->netns);
		close(ns);
	}
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!buf)
		sp_die("out of memory");
	if (s < 0 || connect(s, (const struct sockaddr *)at, sizeof *at))
		sp_die_errno("connecting");
	for (;;) {
		ssize_t r = read(s, buf, (size_t)o->read);
		if (r == 0)
			break;
		if (r < 0 && errno != EINTR)
			sp_die_errno("reading");
	}
	cpu = sp_cpu_s(RUSAGE_SELF);
	if (write(out, &cpu, sizeof cpu) != sizeof cpu)
		sp_die_errno("reporting");
	_exit(0);
}

/* ---- the sender ---- */

/* Takes the completions queued on @s's error queue; waits for one
 * first when @wait. */
static void sp_reap(int s, bool wait, struct sp_zc *zc)
{
	char control[128];

	if (wait) {
		/* POLLERR is reported whatever events asks. A short wait: a
		 * send refused for want of option memory may find nothing
		 * queued yet, and is simply tried again. */
		struct pollfd p = { .fd = s };
		poll(&p, 1, 1);
		zc->waits++;
	}
	for (;;) {
		struct msghdr m = { .msg_control = control, .msg_controllen = sizeof control };
		if (recvmsg(s, &m, MSG_ERRQUEUE) < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			sp_die_errno("reading the error queue");
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			struct sock_extended_err e;
			memcpy(&e, CMSG_DATA(c), sizeof e);
			if (e.ee_errno != 0 || e.ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			unsigned long n = e.ee_data - e.ee_info + 1;
			zc->done += n;
			if (e.ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				zc->copied += n;
		}
	}
}

/* One body on @s, the way @way says; returns the send calls made. */
static unsigned long sp_send_body(int s, enum sp_way way, const char *buf, int memfd,
                                  long size, struct sp_zc *zc)
{
	unsigned long calls = 0;
	long off = 0;

	while (off < size) {
		ssize_t w;
		if (way == SP_SENDFILE) {
			off_t at = off;
			w = sendfile(s, memfd, &at, (size_t)(size - off));
		} else {
			w = send(s, buf + off, (size_t)(size - off),
			         way == SP_ZEROCOPY ? MSG_ZEROCOPY : 0);
		}
		if (w < 0 && errno == ENOBUFS && way == SP_ZEROCOPY) {
			sp_reap(s, true, zc);         /* too many pages pinned */
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			sp_die_errno("sending");
		off += w;
		calls++;
		if (way == SP_ZEROCOPY)
			sp_reap(s, false, zc);
	}
	return calls;
}

static struct sp_run sp_one(const struct sp_opts *o, enum sp_way way, const char *buf,
                            int memfd, struct sp_zc *zc)
{
	struct sockaddr_in at = { .sin_family = AF_INET };
	socklen_t len = sizeof at;
	int one = 1, sndbuf = SP_SNDBUF, report[2];
	double got = -1;

	if (inet_pton(AF_INET, o->addr, &at.sin_addr) != 1)
		sp_die("not an IPv4 address");
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&at, sizeof at) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&at, &len) || pipe2(report, O_CLOEXEC))
		sp_die_errno("listening");
	pid_t pid = fork();
	if (pid < 0)
		sp_die_errno("starting the receiver");
	if (pid == 0) {
		close(report[0]);
		sp_receive(o, &at, report[1]);
	}
	close(report[1]);
	/* A receiver that fails before it connects closes its end of the
	 * pipe, which ends the wait (its message is on stderr). */
	struct pollfd p[2] = { { .fd = l, .events = POLLIN }, { .fd = report[0], .events = POLLIN } };
	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			sp_die_errno("poll");
	if (!(p[0].revents & POLLIN))
		exit(1);
	int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		sp_die_errno("accepting");
	close(l);
	setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	if (way == SP_ZEROCOPY && setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one))
		sp_die_errno("SO_ZEROCOPY");

	unsigned long calls = 0, done0 = zc->done;
	double cpu0 = sp_cpu_s(RUSAGE_SELF), t0 = sp_now();
	for (long i = 0; i < o->bodies; i++)
		calls += sp_send_body(s, way, buf, memfd, o->size, zc);
	/* The buffer may be reused only once every completion is in. */
	while (way == SP_ZEROCOPY && zc->done - done0 < calls)
		sp_reap(s, true, zc);
	close(s);
	int status;
	if (read(report[0], &got, sizeof got) != sizeof got ||
	    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		sp_die("the receiver failed");
	close(report[0]);
	double t = sp_now() - t0;
	return (struct sp_run){
		.per_s = (double)o->bodies / t,
		.sender_us = (sp_cpu_s(RUSAGE_SELF) - cpu0) * 1e6 / (double)o->bodies,
		.receiver_us = got * 1e6 / (double)o->bodies,
	};
}

static int sp_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @v[0..n), which it sorts; the range in *lo, *hi. */
static double sp_median(double *v, int n, double *lo, double *hi)
{
	qsort(v, (size_t)n, sizeof *v, sp_cmp);
	*lo = v[0];
	*hi = v[n - 1];
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void sp_report(const struct sp_opts *o, struct sp_run (*r)[SP_NWAYS], const struct sp_zc *zc)
{
	double v[SP_MAX_ROUNDS], lo, hi, m;

	for (int w = 0; w < SP_NWAYS; w++) {
		const char *n = sp_names[w];
		for (int i = 0; i < o->rounds; i++)
			v[i] = r[i][w].per_s;
		m = sp_median(v, o->rounds, &lo, &hi);
		printf("send_%s_bodies_per_s: %.0f (%.0f-%.0f)\n", n, m, lo, hi);
		for (int i = 0; i < o->rounds; i++)
			v[i] = r[i][w].sender_us;
		printf("send_%s_sender_us: %.1f\n", n, sp_median(v, o->rounds, &lo, &hi));
		for (int i = 0; i < o->rounds; i++)
			v[i] = r[i][w].receiver_us;
		printf("send_%s_receiver_us: %.1f\n", n, sp_median(v, o->rounds, &lo, &hi));
		if (w == SP_COPY)
			continue;
		for (int i = 0; i < o->rounds; i++)
			v[i] = r[i][w].per_s / r[i][SP_COPY].per_s;
		m = sp_median(v, o->rounds, &lo, &hi);
		printf("send_%s_vs_copy: %.2f (%.2f-%.2f)\n", n, m, lo, hi);
	}
	printf("send_zerocopy_copied: %lu of %lu\n", zc->copied, zc->done);
	printf("send_zerocopy_waits: %lu\n", zc->waits);
}

static long sp_number(const char *s, long max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max) {
		fprintf(stderr, "send-probe: %s must be 1 to %ld: %s\n", what, max, s);
		exit(1);
	}
	return v;
}

static void sp_cpus(const char *s, int cpu[2])
{
	int n = 0;

	if (!s) {
		cpu_set_t set;
		if (sched_getaffinity(0, sizeof set, &set))
			sp_die_errno("sched_getaffinity");
		for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
			if (CPU_ISSET(c, &set))
				cpu[n++] = c;
		if (n < 2)
			sp_die("fewer than two CPUs to run on");
		return;
	}
	if (sscanf(s, "%d,%d%n", &cpu[0], &cpu[1], &n) != 2 || s[n] || cpu[0] < 0 ||
	    cpu[1] < 0 || cpu[0] >= CPU_SETSIZE || cpu[1] >= CPU_SETSIZE || cpu[0] == cpu[1]) {
		fprintf(stderr, "send-probe: not two CPU numbers A,B: %s\n", s);
		exit(1);
	}
}

static void sp_usage(void)
{
	fprintf(stderr, "usage: send-probe [-r ROUNDS] [-n BODIES] [-s SIZE] [-b READ] "
	                "[-c CPU_A,CPU_B] [-N NETNS_PATH -a ADDR]\n");
	exit(1);
}

int main(int argc, char **argv)
{
	struct sp_opts o = { .rounds = 5, .bodies = 2000, .size = 1 << 20, .read = 8192,
	                     .addr = "127.0.0.1" };
	const char *cpus = NULL;
	int c;

	while ((c = getopt(argc, argv, "r:n:s:b:c:N:a:")) != -1) {
		switch (c) {
		case 'r': o.rounds = (int)sp_number(optarg, SP_MAX_ROUNDS, "ROUNDS"); break;
		case 'n': o.bodies = sp_number(optarg, 10000000, "BODIES"); break;
		case 's': o.size = sp_number(optarg, 1L << 30, "SIZE"); break;
		case 'b': o.read = sp_number(optarg, 1L << 24, "READ"); break;
		case 'c': cpus = optarg; break;
		case 'N': o.netns = optarg; break;
		case 'a': o.addr = optarg; break;
		default: sp_usage();
		}
	}
	if (optind != argc || (o.netns && !strcmp(o.addr, "127.0.0.1")))
		sp_usage();
	sp_cpus(cpus, o.cpu);
	if (sp_pin(o.cpu[1]) || sp_pin(o.cpu[0])) {
		fprintf(stderr, "send-probe: cannot run on CPUs %d and %d\n", o.cpu[0], o.cpu[1]);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	/* The same bytes in anonymous memory and in a memfd's pages. */
	char *buf = mmap(NULL, (size_t)o.size, PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int memfd = memfd_create("send-probe", MFD_CLOEXEC);
	if (buf == MAP_FAILED || memfd < 0)
		sp_die_errno("allocating the body");
	for (long i = 0; i < o.size; i++)
		buf[i] = (char)(i * 2654435761u >> 24);
	for (long off = 0; off < o.size;) {
		ssize_t w = pwrite(memfd, buf + off, (size_t)(o.size - off), off);
		if (w <= 0)
			sp_die_errno("filling the memfd");
		off += w;
	}

	struct sp_run r[SP_MAX_ROUNDS][SP_NWAYS];
	struct sp_zc zc = { 0 };
	for (int i = 0; i < o.rounds; i++)
		for (int k = 0; k < SP_NWAYS; k++) {
			enum sp_way w = i % 2 ? SP_NWAYS - 1 - k : k;
			r[i][w] = sp_one(&o, w, buf, memfd, &zc);
		}
	sp_report(&o, r, &zc);
	return 0;
}
