#include "first.h"

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/mime.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <microhttpd.h>
#include <fibril/lookup.h>

static struct fsd_server srv0 = { .rootfd = -1 };

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: fileserverd [-c FILE] [-r DIR] [-l ADDR:PORT]... [-w N] [-t] [-V] [-h]\n"
	        "  -c, --config FILE    read the configuration file FILE\n"
	        "  -r, --root DIR       serve DIR (default: the current directory)\n"
	        "  -l, --listen ADDR:PORT\n"
	        "                       listen there (repeatable; default 127.0.0.1:8080)\n"
	        "  -w, --workers N      worker threads (default 1)\n"
	        "  -t, --test           check the configuration and exit\n"
	        "  -V, --version        print the version and exit\n"
	        "  -h, --help           print this help and exit\n");
}

static void conf_err(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "%s\n", msg);
}

/*
 * One listening socket per address, shared by every worker (each
 * accepts from it, conn.c), and no SO_REUSEPORT: with it, a second
 * server run by the same user (another fileserverd, anything setting
 * the option) would bind the same port without an error and silently
 * take a share of the connections. Without it the kernel refuses the
 * port to anyone while we hold it, and refuses it to us while anyone
 * else does: EADDRINUSE at start-up, as with nginx.
 */
static int bind_one(const struct conf_listen *l)
{
	int one = 1, fd;

	fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Only lets us rebind over connections in TIME_WAIT after a
	 * restart; a listening socket still holds the port. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l->addr.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	/* Accept once the first bytes are in, so that reqhdr.c can tell a
	 * non-HTTP client at once (and idle connects cost no fd). */
	setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &(int){ 10 }, sizeof(int));
	if (bind(fd, (const struct sockaddr *)&l->addr, l->addrlen) < 0 ||
	    listen(fd, 1024) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
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

	if (l->addr.ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)&l->addr;
		inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
		if (s->sin_addr.s_addr == htonl(INADDR_ANY))
			strcpy(host, "127.0.0.1");
		printf("fileserverd: serving %s on http://%s:%u/\n", fsd->conf.root,
		       host, ntohs(port));
	} else {
		const struct sockaddr_in6 *s = (const void *)&l->addr;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
		printf("fileserverd: serving %s on http://[%s]:%u/\n", fsd->conf.root,
		       host, ntohs(port));
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
 * because no file could be opened for them.
 */
static void fit_fd_limit(struct conf *c)
{
	struct rlimit rl;
	unsigned long long n, reserve, fit;

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
	fsd_log(LOG_NOTICE, "at most %u connections per worker, %u per client address; "
	        "open file limit %llu", c->max_connections,
	        c->max_connections_per_ip, n);
}

/* The command line: overrides the configuration file. */
struct args {
	const char *config, *root;
	char **listen;
	int nlisten, workers;
	bool test;
};

/* Returns -1 to go on, else the exit status (-V, -h, a bad option). */
static int parse_args(int argc, char **argv, struct args *a)
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

/* The configuration file, the command line over it, the root and the
 * MIME types. Returns the number of errors (reported), or -1 when
 * nothing more can be said. */
static int configure(struct conf *c, const struct args *a)
{
	const char *config = a->config;
	int errors = 0;

	if (conf_init(c) < 0)
		return -1;
	if (config) {
		int r = conf_load(c, config, conf_err, NULL);
		if (r < 0)
			return -1;
		errors += r;
	}
	/* The command line overrides the file. */
	if (a->root && conf_set_str(&c->root, a->root) < 0)
		return -1;
	if (a->nlisten) {
		for (size_t i = 0; i < c->nlisten; i++)
			free(c->listen[i].text);
		c->nlisten = 0;
		for (int i = 0; i < a->nlisten; i++)
			if (conf_add_listen(c, a->listen[i]) < 0) {
				fprintf(stderr, "fileserverd: --listen: expected ADDR:PORT, got '%s'\n",
				        a->listen[i]);
				errors++;
			}
	}
	if (a->workers)
		c->workers = (unsigned)a->workers;
	if (!c->nlisten && conf_add_listen(c, "127.0.0.1:8080") < 0)
		return -1;
	errors += conf_validate(c, conf_err, NULL);

	int r = lk_root_open(c->root, NULL, &srv0.lkroot);
	if (r < 0) {
		fprintf(stderr, "%s%sroot %s: %s\n", config ? config : "",
		        config ? ": " : "fileserverd: ", c->root, strerror(-r));
		errors++;
	} else
		srv0.rootfd = lk_root_fd(srv0.lkroot);
	if (fsd_mime_load(c->mime_types) < 0 && config &&
	    strcmp(c->mime_types, "/etc/mime.types")) {
		fprintf(stderr, "%s: mime_types %s: cannot read\n", config, c->mime_types);
		errors++;
	}
	return errors;
}

/* The workers and the listening sockets they share (a port below 1024
 * needs root: before the privileges go). NULL: failed (reported). */
static struct fsd_worker *bind_all(const struct conf *c)
{
	unsigned nw = c->workers;
	struct fsd_worker *w = calloc(nw, sizeof *w);

	if (!w)
		return NULL;
	for (unsigned i = 0; i < nw; i++) {
		w[i].id = i;
		w[i].srv = &srv0;
		w[i].nmhd = c->nlisten;
		w[i].listen_fds = calloc(c->nlisten, sizeof(int));
		if (!w[i].listen_fds)
			return NULL;
	}
	for (size_t l = 0; l < c->nlisten; l++) {
		int fd = bind_one(&c->listen[l]);
		if (fd < 0) {
			fprintf(stderr, "fileserverd: listen %s: %s%s\n", c->listen[l].text,
			        strerror(-fd), fd == -EADDRINUSE ?
			        " (another process is listening there)" : "");
			return NULL;
		}
		for (unsigned i = 0; i < nw; i++)
			w[i].listen_fds[l] = fd;
		print_url(&c->listen[l], bound_port(fd));
	}
	fflush(stdout);
	return w;
}

/* Starts the workers and waits for a signal: the logs are reopened on
 * SIGUSR1 and SIGHUP, anything else stops. Returns the exit status. */
static int run(struct fsd_worker *w, unsigned nw)
{
	/* Signals: blocked in every thread, taken here with sigwait. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	for (unsigned i = 0; i < nw; i++)
		if (fsd_worker_start(&w[i]) < 0) {
			fsd_log(LOG_ERR, "worker %u failed to start", i);
			for (unsigned j = 0; j < i; j++)
				fsd_worker_stop(&w[j]);
			for (unsigned j = 0; j < i; j++)
				fsd_worker_join(&w[j]);
			return 1;
		}
	fsd_log(LOG_NOTICE, "fileserverd %s started: %u worker%s, root %s",
	        PACKAGE_VERSION, nw, nw > 1 ? "s" : "", fsd->conf.root);

	for (;;) {
		int sig;
		if (sigwait(&set, &sig))
			continue;
		/* SIGUSR1 is logrotate's convention; SIGHUP does the same. */
		if (sig == SIGUSR1 || sig == SIGHUP) {
			fsd_log(LOG_NOTICE, "%s: reopening logs",
			        sig == SIGUSR1 ? "SIGUSR1" : "SIGHUP");
			fsd_log_reopen();
			continue;
		}
		fsd_log(LOG_NOTICE, "signal %d: stopping", sig);
		break;
	}
	for (unsigned i = 0; i < nw; i++)
		fsd_worker_stop(&w[i]);
	for (unsigned i = 0; i < nw; i++)
		fsd_worker_join(&w[i]);
	fsd_log(LOG_NOTICE, "stopped");
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	struct conf *c = &srv0.conf;
	int errors, st;

	fsd = &srv0;
	st = parse_args(argc, argv, &a);
	if (st >= 0)
		return st;
	errors = configure(c, &a);
	free(a.listen);
	if (errors < 0)
		return 1;
	if (errors) {
		if (a.test)
			fprintf(stderr, "fileserverd: configuration has %d error%s\n",
			        errors, errors > 1 ? "s" : "");
		return 1;
	}
	if (a.test) {
		printf("fileserverd: configuration %s is valid\n",
		       a.config ? a.config : "(defaults)");
		return 0;
	}

	/* Sockets first (a port below 1024 needs root), then the user. */
	unsigned nw = c->workers;
	struct fsd_worker *w = bind_all(c);
	if (!w)
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

	st = run(w, nw);
	fsd_log_close();
	if (st)
		return st;
	for (size_t l = 0; l < c->nlisten; l++)
		close(w[0].listen_fds[l]);
	for (unsigned i = 0; i < nw; i++)
		free(w[i].listen_fds);
	free(w);
	lk_root_close(srv0.lkroot);
	conf_free(c);
	return 0;
}
