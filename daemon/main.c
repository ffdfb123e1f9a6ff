#include "first.h"

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/mime.h"
#include "daemon/notify.h"
#include "daemon/priv.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <microhttpd.h>
#include <fibril/lookup.h>

/* The server taking new connections, and those still draining after a
 * reload (freed once their workers are joined). */
static struct fsd_server *cur;
static struct fsd_server **draining;
static size_t ndraining;

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: fileserverd [-c FILE] [-r DIR] [-l ADDR:PORT]... [-w N] [-t] [-V] [-h]\n"
	        "  -c, --config FILE    read the configuration file FILE\n"
	        "  -r, --root DIR       serve DIR (default: the current directory)\n"
	        "  -l, --listen 'ADDR:PORT [ssl] [status]'\n"
	        "                       listen there (repeatable; default 127.0.0.1:8080;\n"
	        "                       ssl: HTTPS, certificate from the configuration;\n"
	        "                       status: /metrics, /status, /healthz too)\n"
	        "  -w, --workers N      worker threads, 1 to 1024 (default 1)\n"
	        "  -t, --test           check the configuration and exit\n"
	        "  -V, --version        print the version and exit\n"
	        "  -h, --help           print this help and exit\n");
}

static in_port_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	return ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                               : ((struct sockaddr_in6 *)&ss)->sin6_port;
}

static void print_url(const struct conf_listen *l, in_port_t port)
{
	char host[INET6_ADDRSTRLEN] = "";
	const char *scheme = l->ssl ? "https" : "http";

	if (l->addr.ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)&l->addr;
		inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
		if (s->sin_addr.s_addr == htonl(INADDR_ANY))
			strcpy(host, "127.0.0.1");
		printf("fileserverd: %s%s on %s://%s:%u/\n", l->status_only ? "status" : "serving ",
		       l->status_only ? "" : fsd->conf.root, scheme, host, ntohs(port));
	} else {
		const struct sockaddr_in6 *s = (const void *)&l->addr;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
		printf("fileserverd: %s%s on %s://[%s]:%u/\n", l->status_only ? "status" : "serving ",
		       l->status_only ? "" : fsd->conf.root, scheme, host, ntohs(port));
	}
}

/* Privileges go before any ring or pool exists: the engine captures the
 * credentials of the thread that creates it (fibril/async.h). */
static int drop_privileges(const struct conf *c)
{
	struct passwd *pw;
	gid_t gid;

	if (!c->user) {
		if (geteuid() == 0)
			fsd_log(LOG_WARNING, "running as root without 'user': files are "
			        "served with root's access (mode 000 files and other users' "
			        "private files included); set user = nobody (or another "
			        "unprivileged user), or user = root to keep root");
		return 0;
	}
	pw = getpwnam(c->user);
	if (!pw) {
		fprintf(stderr, "fileserverd: user %s: no such user\n", c->user);
		return -1;
	}
	gid = pw->pw_gid;
	if (c->group) {
		struct group *gr = getgrnam(c->group);
		if (!gr) {
			fprintf(stderr, "fileserverd: group %s: no such group\n", c->group);
			return -1;
		}
		gid = gr->gr_gid;
	}
	if (getuid() != 0 && geteuid() != 0) {
		if (pw->pw_uid == geteuid())
			return 0;
		fprintf(stderr, "fileserverd: user %s: need root to switch user\n", c->user);
		return -1;
	}
	if (setgroups(1, &gid) < 0 || setgid(gid) < 0 || setuid(pw->pw_uid) < 0) {
		fprintf(stderr, "fileserverd: dropping privileges to %s: %s\n",
		        c->user, strerror(errno));
		return -1;
	}
	return 0;
}

/* Descriptors beyond the connections: logs, listening sockets, and per
 * worker its epoll and event fds, the ring, inotify, the spare fd of
 * conn.c; a listing in progress holds its directory twice (the scan's
 * dup). Every connection may hold the file it sends besides its socket. */
#define FSD_FDS_BASE 32
#define FSD_FDS_PER_WORKER 16
#define FSD_FDS_PER_CONN 2

/*
 * Raises the soft RLIMIT_NOFILE to the hard one and lowers
 * max_connections to what the limit can hold, keeping descriptors in
 * reserve for the files and listings of the connections admitted: at
 * 1,024 open files, 4,096 connections meant accepted ones answered 500
 * because no file could be opened for them. What the connections leave
 * goes to the file cache's open files (at least 1/64 of the limit, at
 * most fcache_entries), so that a working set of large files is kept
 * open where the limit allows it rather than opened and mapped again
 * on every request.
 */
static void fit_fd_limit(struct conf *c)
{
	struct rlimit rl;
	unsigned long long n, reserve, fit, conns, spare;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur != rl.rlim_max) {
		struct rlimit want = { rl.rlim_max, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl = want;
	}
	n = rl.rlim_cur == RLIM_INFINITY ? 1ULL << 30 : (unsigned long long)rl.rlim_cur;
	reserve = FSD_FDS_BASE + c->nlisten +
	          (unsigned long long)c->workers * (FSD_FDS_PER_WORKER + 2ULL * c->max_listings);
	fit = n > reserve ? (n - reserve) / FSD_FDS_PER_CONN / c->workers : 0;
	if (fit < 1)
		fit = 1;
	if (c->max_connections > fit) {
		fsd_log(LOG_WARNING, "max_connections lowered from %u to %llu per worker: "
		        "open file limit %llu", c->max_connections, fit, n);
		c->max_connections = (unsigned)fit;
	}
	conns = (unsigned long long)c->max_connections * FSD_FDS_PER_CONN * c->workers;
	spare = n > reserve + conns ? (n - reserve - conns) / c->workers : 0;
	if (spare < n / 64 / c->workers)
		spare = n / 64 / c->workers;
	c->fcache_open_files = spare > c->fcache_entries ? c->fcache_entries : (unsigned)spare;
	fsd_log(LOG_NOTICE, "at most %u connections per worker, %u per client address, "
	        "%u open files in the file cache; open file limit %llu", c->max_connections,
	        c->max_connections_per_ip, c->fcache_open_files, n);
}

/* Says so when the kernel caps loopback_sndbuf (net.core.wmem_max):
 * the connections then get the smaller buffer (daemon/conn.c). */
static void check_loopback_sndbuf(const struct conf *c)
{
	int fd, v = (int)(c->loopback_sndbuf / 2), got = 0;
	socklen_t len = sizeof got;

	if (v <= 0 || (fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len) == 0 &&
	    (size_t)got < c->loopback_sndbuf)
		fsd_log(LOG_NOTICE, "loopback_sndbuf %zu: the kernel allows %d "
		        "(twice net.core.wmem_max)", c->loopback_sndbuf, got);
	close(fd);
}

/* Returns -1 to go on, else the exit status (-V, -h, a bad option). */
static int parse_args(int argc, char **argv, struct fsd_args *a)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "root", required_argument, NULL, 'r' },
		{ "listen", required_argument, NULL, 'l' },
		{ "workers", required_argument, NULL, 'w' },
		{ "test", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int ch;

	a->listen = calloc((size_t)argc, sizeof *a->listen);
	if (!a->listen)
		return 1;
	while ((ch = getopt_long(argc, argv, "c:r:l:w:tVh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': a->config = optarg; break;
		case 'r': a->root = optarg; break;
		case 'l': a->listen[a->nlisten++] = optarg; break;
		case 'w': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 1024) {
				fprintf(stderr, "fileserverd: --workers: expected 1..1024, got '%s'\n", optarg);
				return 2;
			}
			a->workers = (int)v;
			break;
		}
		case 't': a->test = true; break;
		case 'V': printf("fileserverd %s (libmicrohttpd %s)\n", PACKAGE_VERSION,
		                 MHD_get_version());
			return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fileserverd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* user and group hold for the process, which has already switched. */
static void warn_user_change(const struct conf *was, const struct conf *now)
{
	const char *u0 = was->user ? was->user : "", *u1 = now->user ? now->user : "";
	const char *g0 = was->group ? was->group : "", *g1 = now->group ? now->group : "";

	if (strcmp(u0, u1) || strcmp(g0, g1))
		fsd_log(LOG_WARNING, "%s: user and group take effect at a restart only: "
		        "still running as before", now->file ? now->file : "reload");
}

/* SIGHUP: the next server, or the old one goes on (with the reasons in
 * the error log). */
static void reload(const struct fsd_args *a)
{
	struct fsd_server *s, **d;
	int errors;

	fsd_log(LOG_NOTICE, "SIGHUP: reloading %s", a->config ? a->config :
	        "(no configuration file)");
	s = fsd_server_new(a, true, &errors);
	if (!s || errors) {
		if (errors > 0)
			fsd_log(LOG_ERR, "reload: the configuration has %d error%s: still "
			        "serving with the previous one", errors, errors > 1 ? "s" : "");
		else
			fsd_log(LOG_ERR, "reload failed: still serving with the previous "
			        "configuration");
		fsd_server_free(s);
		return;
	}
	warn_user_change(&cur->conf, &s->conf);
	fit_fd_limit(&s->conf);
	check_loopback_sndbuf(&s->conf);
	d = realloc(draining, (ndraining + 1) * sizeof *draining);
	if (!d || fsd_server_bind(s, cur) < 0 || fsd_server_start(s) < 0) {
		if (d)
			draining = d;
		fsd_log(LOG_ERR, "reload failed: still serving with the previous "
		        "configuration");
		fsd_server_free(s);
		return;
	}
	draining = d;
	if (fsd_log_reconfigure(&s->conf) < 0)
		fsd_log(LOG_ERR, "reload: logs not moved: %s", strerror(ENOMEM));
	fsd_server_stop(cur, false);
	draining[ndraining++] = cur;
	cur = s;
	fsd = s;
	fsd_log(LOG_NOTICE, "reloaded: %u worker%s, root %s; the previous workers "
	        "finish their requests (at most %us)", s->conf.workers,
	        s->conf.workers > 1 ? "s" : "", s->conf.root,
	        draining[ndraining - 1]->conf.shutdown_timeout);
}

/* Frees the servers whose workers are all done; true when none is left
 * (the current one counted once @all). */
static bool reap(bool all)
{
	size_t n = 0;

	for (size_t i = 0; i < ndraining; i++) {
		if (fsd_server_reap(draining[i]))
			fsd_server_free(draining[i]);
		else
			draining[n++] = draining[i];
	}
	ndraining = n;
	if (all && cur && fsd_server_reap(cur)) {
		fsd_server_free(cur);
		cur = NULL;
		fsd = NULL;
	}
	return !ndraining && (!all || !cur);
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGTERM: return "SIGTERM";
	case SIGINT: return "SIGINT";
	case SIGQUIT: return "SIGQUIT";
	default: return "signal";
	}
}

/*
 * Waits for signals: SIGHUP reloads, SIGUSR1 reopens the logs, SIGTERM,
 * SIGINT and SIGQUIT drain and stop (a second SIGTERM or SIGINT cuts the
 * drain short). Servers left by reloads are reaped in between, a few
 * times a second, never waited for. Returns the exit status.
 */
static int run(const struct fsd_args *a, const sigset_t *set)
{
	const struct timespec tick = { 0, 100 * 1000000L };
	bool stopping = false;

	for (;;) {
		int sig = sigtimedwait(set, NULL, &tick);

		if (reap(stopping) && stopping)
			break;
		if (sig < 0)
			continue;
		if (sig == SIGUSR1) {
			fsd_log(LOG_NOTICE, "SIGUSR1: reopening logs");
			fsd_log_reopen();
		} else if (sig == SIGHUP) {
			if (!stopping) {
				struct fsd_server *was = cur;
				fsd_notify("RELOADING=1");
				reload(a);
				fsd_notify_status("READY=1", cur != was ? "serving %s with %u "
				                  "worker%s" : "reload failed: still serving %s "
				                  "with %u worker%s", cur->conf.root,
				                  cur->conf.workers, cur->conf.workers > 1 ? "s" : "");
			}
		} else if (!stopping) {
			stopping = true;
			fsd_notify("STOPPING=1");
			fsd_log(LOG_NOTICE, "%s: stopping: no new connections, requests in "
			        "progress finish (at most %us)", sig_name(sig),
			        cur->conf.shutdown_timeout);
			fsd_server_stop(cur, false);
		} else if (sig != SIGQUIT) {
			fsd_log(LOG_NOTICE, "%s again: stopping now", sig_name(sig));
			for (size_t i = 0; i < ndraining; i++)
				fsd_server_stop(draining[i], true);
			if (cur)
				fsd_server_stop(cur, true);
		}
	}
	fsd_log(LOG_NOTICE, "stopped");
	return 0;
}

/* libfibril refuses an unknown FIBRIL_BACKEND in each worker's
 * async_engine_create(), after the sockets are bound; the worker would
 * then serve with blocking file system calls. Refused here instead,
 * once, before anything starts (and under -t). */
static int check_backend_env(void)
{
	static const char *const known[] = { "auto", "uring", "threads" };
	const char *b = getenv("FIBRIL_BACKEND");
	char esc[256];

	if (!b || !*b)
		return 0;
	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		if (!strcmp(b, known[i]))
			return 0;
	fsd_log_escape(esc, sizeof esc, b);
	fprintf(stderr, "fileserverd: FIBRIL_BACKEND=%s: unknown async backend "
	        "(expected auto, uring or threads)\n", esc);
	return -1;
}

/* Everything after the command line; main() frees what parse_args()
 * allocated whichever way this returns. */
static int serve(const struct fsd_args *a)
{
	struct conf *c;
	int errors, st;

	if (check_backend_env() < 0)
		return 1;
	cur = fsd_server_new(a, false, &errors);
	if (!cur || errors) {
		if (errors > 0 && a->test)
			fprintf(stderr, "fileserverd: configuration has %d error%s\n",
			        errors, errors > 1 ? "s" : "");
		return 1;
	}
	fsd = cur;
	c = &cur->conf;
	if (a->test) {
		printf("fileserverd: configuration %s is valid\n",
		       a->config ? a->config : "(defaults)");
		return 0;
	}

	/* Sockets first (a port below 1024 needs root), then the user. */
	if (fsd_server_bind(cur, NULL) < 0)
		return 1;
	for (size_t l = 0; l < c->nlisten; l++)
		print_url(&c->listen[l], bound_port(cur->listen_fds[l]));
	fflush(stdout);
	/* What needs root later (a reload's new low port or log, key
	 * files) goes through a helper forked before any thread. */
	if (fsd_priv_start(a->config, a->listen, (size_t)a->nlisten, c) < 0)
		return 1;
	/* Logs are opened while still privileged (like the sockets), so
	 * they may live in a root-owned directory. */
	if (fsd_log_open(c) < 0)
		return 1;
	if (drop_privileges(c) < 0) {
		fsd_log_close();
		return 1;
	}
	fit_fd_limit(c);
	check_loopback_sndbuf(c);

	/* Signals: blocked in every thread, taken by run() with sigtimedwait. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (fsd_server_start(cur) < 0) {
		fsd_log_close();
		return 1;
	}
	fsd_log(LOG_NOTICE, "fileserverd %s started: %u worker%s, root %s",
	        PACKAGE_VERSION, c->workers, c->workers > 1 ? "s" : "", c->root);
	fsd_notify_status("READY=1", "serving %s with %u worker%s", c->root,
	                  c->workers, c->workers > 1 ? "s" : "");
	st = run(a, &set);
	fsd_log_close();
	free(draining);
	return st;
}

int main(int argc, char **argv)
{
	struct fsd_args a = { 0 };
	int st = parse_args(argc, argv, &a);

	/* A whole listing (megabytes) grows in one buffer, then is sent or
	 * kept, and freed. Above a fixed threshold it has a mapping of its
	 * own: it grows by mremap instead of by copying, its huge pages
	 * (listing.c) stay its own, and it goes back to the kernel when
	 * freed, where glibc's moving threshold would serve it from the
	 * heaps after the first one. */
	if (st < 0) {
		mallopt(M_MMAP_THRESHOLD, 1 << 20);
		st = serve(&a);
	}
	free(a.listen);
	return st;
}
