/*
 * send-probe: three ways for a server to send a body it holds in
 * memory to a client on the other CPU, side by side: a plain copy
 * (`send`), `MSG_ZEROCOPY`, and `sendfile` from a memfd holding the
 * same bytes (the page references libmicrohttpd's file bodies and
 * nginx's `sendfile` hand the kernel).
 *
 * A sender on one CPU and a receiving process on the other (a client
 * of its own, as wrk is) move BODIES bodies of SIZE bytes over CONNS
 * TCP connections per run; the receiver reads them READ bytes at a
 * time (8 KiB, as wrk does) and throws them away. Each round runs the
 * three ways in turn, each first in its turn, in the reverse order
 * every other round. Prints
 * `name: value` lines:
 *   send_WAY_bodies_per_s        median of the rounds, and their range
 *   send_WAY_sender_us           the sender's CPU per body (median)
 *   send_WAY_receiver_us         the receiver's CPU per body (median)
 *   send_WAY_vs_copy             median of the per-round ratios of
 *                                bodies per second, and their range
 *   send_sndbuf_bytes            each connection's send buffer (1 MiB
 *                                unless net.core.wmem_max is lower and
 *                                the probe runs without CAP_NET_ADMIN)
 *   send_zerocopy_sends          the zero-copy send calls made
 *   send_zerocopy_copied         of the zero-copy sends the kernel
 *                                completed, how many it says it copied
 *   send_zerocopy_enobufs        sends refused for the pages pinned
 *                                (the socket then waits for its
 *                                completions; RLIMIT_MEMLOCK bounds
 *                                them for users other than root)
 * WAY is copy, zerocopy or sendfile. To a client on the same host the
 * kernel copies every zero-copy send on delivery (the pages cannot
 * stay pinned in a local receive queue), so `send_zerocopy_copied`
 * tells whether the path could have saved anything at all.
 *
 * Usage: send-probe [-r ROUNDS] [-n BODIES] [-s SIZE] [-b READ] [-C CONNS]
 *                   [-c CPU_A,CPU_B] [-N NETNS_PATH -a ADDR]
 * Defaults: 5 rounds of 2,000 bodies of 1 MiB over 1 connection, the
 * first two CPUs this process may run on, 127.0.0.1. With -C the
 * bodies are shared out among CONNS connections, which the sender
 * fills as their sockets have room and the receiver reads as they have
 * data, as an event-driven server and wrk do: every connection's
 * copies are its own, where every `sendfile` hands over the same
 * pages. With -N the receiver joins that network namespace (a path
 * under /var/run/netns) and connects to ADDR, where the sender
 * listens: a client behind a veth pair.
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
#include <stdint.h>
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
/* Each process holds every connection, under the usual limit of 1,024
 * descriptors. */
#define SP_MAX_CONNS 512
/* The send buffer fileserverd gives a loopback client (DESIGN.md,
 * "Connections and limits"), so that every way is paced alike. Linux
 * doubles what it is asked for: half is asked. */
#define SP_SNDBUF (1 << 20)

struct sp_opts {
	int rounds, conns, cpu[2];
	long bodies, size, read;
	const char *netns, *addr;
};

struct sp_run {
	double per_s, sender_us, receiver_us;
};

/* The zero-copy sends the kernel has completed, and of them the ones
 * it copied anyway. */
struct sp_zc {
	unsigned long sends, done, copied, enobufs;
};

/* The send buffer the kernel gave the last connection. */
static int sp_sndbuf;

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

/* What the receiver tells the sender at its end. */
struct sp_report {
	uint64_t bytes;
	double cpu_s;
};

/* Reads every connection, READ bytes at a time and on while a read
 * fills the buffer (as wrk does), until the sender closes them all;
 * then writes its CPU seconds to @out. */
static void sp_receive(const struct sp_opts *o, const struct sockaddr_in *at, int out)
{
	char *buf = malloc((size_t)o->read);
	struct pollfd *p = calloc((size_t)o->conns, sizeof *p);
	int nopen = o->conns;
	struct sp_report rep = { 0 };

	if (!buf || !p)
		sp_die("out of memory");
	if (sp_pin(o->cpu[1]))
		sp_die_errno("pinning the receiver");
	if (o->netns) {
		int ns = open(o->netns, O_RDONLY | O_CLOEXEC);
		if (ns < 0 || setns(ns, CLONE_NEWNET))
			sp_die_errno(o->netns);
		close(ns);
	}
	for (int i = 0; i < o->conns; i++) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0 || connect(s, (const struct sockaddr *)at, sizeof *at) ||
		    fcntl(s, F_SETFL, O_NONBLOCK))
			sp_die_errno("connecting");
		p[i] = (struct pollfd){ .fd = s, .events = POLLIN };
	}
	while (nopen > 0) {
		if (poll(p, (nfds_t)o->conns, -1) < 0) {
			if (errno == EINTR)
				continue;
			sp_die_errno("poll");
		}
		for (int i = 0; i < o->conns; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			ssize_t r;
			while ((r = read(p[i].fd, buf, (size_t)o->read)) > 0) {
				rep.bytes += (uint64_t)r;
				if (r < o->read)
					break;
			}
			if (r == 0) {
				close(p[i].fd);
				p[i].fd = -1;
				nopen--;
			} else if (r < 0 && errno != EAGAIN && errno != EINTR) {
				sp_die_errno("reading");
			}
		}
	}
	rep.cpu_s = sp_cpu_s(RUSAGE_SELF);
	if (write(out, &rep, sizeof rep) != sizeof rep)
		sp_die_errno("reporting");
	_exit(0);
}

/* ---- the sender ---- */

/* Takes the completions queued on @s's error queue. */
static void sp_reap(int s, struct sp_zc *zc)
{
	char control[128];

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

/* A connection of the sender's: its bodies left, where it is in the
 * current one, and its send calls. */
struct sp_conn {
	int fd;
	long left, off;
	unsigned long calls;
};

/* Sends on @c, the way @way says, until the socket is full or its
 * bodies are sent; false when the kernel wants completions reaped
 * first (ENOBUFS: too many pages pinned). */
static bool sp_pump(struct sp_conn *c, enum sp_way way, const char *buf, int memfd, long size)
{
	while (c->left > 0) {
		ssize_t w;
		if (way == SP_SENDFILE) {
			off_t at = c->off;
			w = sendfile(c->fd, memfd, &at, (size_t)(size - c->off));
		} else {
			w = send(c->fd, buf + c->off, (size_t)(size - c->off),
			         way == SP_ZEROCOPY ? MSG_ZEROCOPY : 0);
		}
		if (w < 0 && errno == ENOBUFS && way == SP_ZEROCOPY)
			return false;
		if (w < 0 && errno == EAGAIN)
			return true;
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			sp_die_errno("sending");
		c->calls++;
		if ((c->off += w) == size) {
			c->off = 0;
			c->left--;
		}
	}
	return true;
}

/* Sends every connection's bodies, each as its socket has room, as an
 * event-driven server does; returns the send calls made. */
static unsigned long sp_send_all(const struct sp_opts *o, struct sp_conn *c, enum sp_way way,
                                 const char *buf, int memfd, struct sp_zc *zc)
{
	struct pollfd *p = calloc((size_t)o->conns, sizeof *p);
	unsigned long calls = 0;
	int busy = o->conns;

	if (!p)
		sp_die("out of memory");
	for (int i = 0; i < o->conns; i++)
		p[i] = (struct pollfd){ .fd = c[i].fd, .events = POLLOUT };
	while (busy > 0) {
		int n = poll(p, (nfds_t)o->conns, 100);
		if (n < 0 && errno != EINTR)
			sp_die_errno("poll");
		/* (a socket held back for its completions is tried again) */
		for (int i = 0; n == 0 && i < o->conns; i++)
			if (c[i].left > 0)
				p[i].events = POLLOUT;
		if (n <= 0)
			continue;
		for (int i = 0; i < o->conns; i++) {
			if (way == SP_ZEROCOPY && (p[i].revents & POLLERR)) {
				sp_reap(c[i].fd, zc);
				if (c[i].left > 0)
					p[i].events = POLLOUT;
			}
			if (!(p[i].revents & POLLOUT) || c[i].left == 0)
				continue;
			/* Refused for the pages it has pinned: no more sends on
			 * it until its completions come (POLLERR). */
			if (!sp_pump(&c[i], way, buf, memfd, o->size)) {
				p[i].events = 0;
				zc->enobufs++;
				continue;
			}
			if (c[i].left == 0) {
				p[i].events = 0;        /* (its completions still come) */
				busy--;
			}
		}
	}
	for (int i = 0; i < o->conns; i++)
		calls += c[i].calls;
	free(p);
	return calls;
}

/* The receiver's connections, accepted on @l, each given its share of
 * the bodies. A receiver that fails before it has connected them all
 * closes its end of the pipe @report, which ends the wait (its message
 * is on stderr). */
static struct sp_conn *sp_accept_all(const struct sp_opts *o, int l, int report, enum sp_way way)
{
	struct sp_conn *c = calloc((size_t)o->conns, sizeof *c);
	int one = 1, sndbuf = SP_SNDBUF / 2, got;
	socklen_t len = sizeof got;

	if (!c)
		sp_die("out of memory");
	for (int i = 0; i < o->conns; i++) {
		struct pollfd p[2] = { { .fd = l, .events = POLLIN }, { .fd = report, .events = POLLIN } };
		while (poll(p, 2, -1) < 0)
			if (errno != EINTR)
				sp_die_errno("poll");
		if (!(p[0].revents & POLLIN))
			sp_die("the receiver ended before it connected");
		int s = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (s < 0)
			sp_die_errno("accepting");
		/* Past net.core.wmem_max only with CAP_NET_ADMIN; the size
		 * the kernel gave is printed either way. */
		if (setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf))
			setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
		if (getsockopt(s, SOL_SOCKET, SO_SNDBUF, &got, &len) == 0)
			sp_sndbuf = got;
		if (way == SP_ZEROCOPY && setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one))
			sp_die_errno("SO_ZEROCOPY");
		/* The first connections take one body more. */
		c[i] = (struct sp_conn){ .fd = s,
		                         .left = o->bodies / o->conns + (i < o->bodies % o->conns) };
	}
	return c;
}

/* Takes the completions of @calls zero-copy sends, as they come: a
 * socket closed before them would drop them uncounted. */
static void sp_reap_all(const struct sp_opts *o, const struct sp_conn *c, unsigned long calls,
                        unsigned long done0, struct sp_zc *zc)
{
	struct pollfd *p = calloc((size_t)o->conns, sizeof *p);
	double until = sp_now() + 10;

	if (!p)
		sp_die("out of memory");
	for (int i = 0; i < o->conns; i++)
		p[i] = (struct pollfd){ .fd = c[i].fd };     /* POLLERR comes anyway */
	while (zc->done - done0 < calls) {
		if (sp_now() > until) {
			fprintf(stderr, "send-probe: %lu of %lu zero-copy completions never came\n",
			        calls - (zc->done - done0), calls);
			exit(1);
		}
		if (poll(p, (nfds_t)o->conns, 100) < 0 && errno != EINTR)
			sp_die_errno("poll");
		for (int i = 0; i < o->conns; i++)
			if (p[i].revents & POLLERR)
				sp_reap(c[i].fd, zc);
	}
	free(p);
}

static struct sp_run sp_one(const struct sp_opts *o, enum sp_way way, const char *buf,
                            int memfd, struct sp_zc *zc)
{
	struct sockaddr_in at = { .sin_family = AF_INET };
	socklen_t len = sizeof at;
	int report[2];

	inet_pton(AF_INET, o->addr, &at.sin_addr);         /* checked in main */
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&at, sizeof at) || listen(l, o->conns) ||
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
	struct sp_conn *c = sp_accept_all(o, l, report[0], way);
	close(l);

	unsigned long done0 = zc->done;
	double cpu0 = sp_cpu_s(RUSAGE_SELF), t0 = sp_now();
	unsigned long calls = sp_send_all(o, c, way, buf, memfd, zc);
	if (way == SP_ZEROCOPY) {
		sp_reap_all(o, c, calls, done0, zc);
		zc->sends += calls;
	}
	for (int i = 0; i < o->conns; i++)
		close(c[i].fd);
	free(c);
	int status = 0;
	struct sp_report rep = { 0 };
	bool reported = read(report[0], &rep, sizeof rep) == sizeof rep;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "send-probe: the receiver failed (%s %d)\n",
		        WIFSIGNALED(status) ? "signal" : "exit status",
		        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		exit(1);
	}
	if (!reported || rep.bytes != (uint64_t)o->bodies * (uint64_t)o->size) {
		fprintf(stderr, "send-probe: the receiver read %llu bytes of %llu\n",
		        (unsigned long long)rep.bytes,
		        (unsigned long long)o->bodies * (unsigned long long)o->size);
		exit(1);
	}
	close(report[0]);
	double t = sp_now() - t0;
	return (struct sp_run){
		.per_s = (double)o->bodies / t,
		.sender_us = (sp_cpu_s(RUSAGE_SELF) - cpu0) * 1e6 / (double)o->bodies,
		.receiver_us = rep.cpu_s * 1e6 / (double)o->bodies,
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
	printf("send_sndbuf_bytes: %d\n", sp_sndbuf);
	printf("send_zerocopy_sends: %lu\n", zc->sends);
	printf("send_zerocopy_copied: %lu of %lu\n", zc->copied, zc->done);
	printf("send_zerocopy_enobufs: %lu\n", zc->enobufs);
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
	fprintf(stderr, "usage: send-probe [-r ROUNDS] [-n BODIES] [-s SIZE] [-b READ] [-C CONNS] "
	                "[-c CPU_A,CPU_B] [-N NETNS_PATH -a ADDR]\n");
	exit(1);
}

int main(int argc, char **argv)
{
	struct sp_opts o = { .rounds = 5, .conns = 1, .bodies = 2000, .size = 1 << 20,
	                     .read = 8192, .addr = "127.0.0.1" };
	const char *cpus = NULL;
	int c;

	while ((c = getopt(argc, argv, "r:n:s:b:C:c:N:a:")) != -1) {
		switch (c) {
		case 'r': o.rounds = (int)sp_number(optarg, SP_MAX_ROUNDS, "ROUNDS"); break;
		case 'n': o.bodies = sp_number(optarg, 10000000, "BODIES"); break;
		case 's': o.size = sp_number(optarg, 1L << 30, "SIZE"); break;
		case 'b': o.read = sp_number(optarg, 1L << 24, "READ"); break;
		case 'C': o.conns = (int)sp_number(optarg, SP_MAX_CONNS, "CONNS"); break;
		case 'c': cpus = optarg; break;
		case 'N': o.netns = optarg; break;
		case 'a': o.addr = optarg; break;
		default: sp_usage();
		}
	}
	if (optind != argc)
		sp_usage();
	struct in_addr a;
	if (inet_pton(AF_INET, o.addr, &a) != 1) {
		fprintf(stderr, "send-probe: not an IPv4 address: %s\n", o.addr);
		return 1;
	}
	if (o.netns && !strcmp(o.addr, "127.0.0.1")) {
		fprintf(stderr, "send-probe: -N needs -a, an address of this host's "
		                "namespace that the other reaches\n");
		return 1;
	}
	if (o.conns > o.bodies) {
		fprintf(stderr, "send-probe: more connections than bodies\n");
		return 1;
	}
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
			/* Each way first in its turn, the order reversed every
			 * other round, so that none always follows another. */
			enum sp_way w = (enum sp_way)(i % 2 ? (i + SP_NWAYS - k) % SP_NWAYS
			                                    : (i + k) % SP_NWAYS);
			r[i][w] = sp_one(&o, w, buf, memfd, &zc);
		}
	sp_report(&o, r, &zc);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "send-probe: cannot write the results\n");
		return 1;
	}
	return 0;
}
