/*
 * fsd-sftp: command line, listeners and the loop.
 *
 *   fsd-sftp [-r ROOT] [-l ADDR:PORT]... [-u USER] [-i] [-h]
 *
 * Without -l it serves one connection on stdin/stdout (an OpenSSH
 * subsystem); with -l it accepts connections on loopback TCP ports (for
 * sshfs -o directport=PORT). A direct port has no authentication, which
 * is why only loopback addresses are accepted.
 */
#include "first.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fibril/async.h"
#include "contrib/sftpd/sftpd.h"

#define X__MAX_LISTEN 16
/* Scans reading at once. Each keeps up to a window of calls in flight,
 * which is what a slow file system's parallelism needs; more scans at
 * once only queue in it and delay every other request's calls. */
#define X__SCANS 2u

static void sftpd__usage(FILE *f)
{
	fprintf(f,
	        "usage: fsd-sftp [-r ROOT] [-l ADDR:PORT]... [-u USER] [-s SCANS] [-A MS]\n"
	        "                [-i] [-h]\n"
	        "  -r ROOT       serve ROOT as / (default: the current directory)\n"
	        "  -l ADDR:PORT  listen on a loopback address (repeatable; port 0 picks one);\n"
	        "                without -l: one connection on stdin/stdout\n"
	        "  -u USER       serve every connection as USER\n"
	        "  -s SCANS      directory scans reading the file system at once; the\n"
	        "                others wait, and identical listings share a waiting one\n"
	        "                (default %u; 0: no bound)\n"
	        "  -A MS         a listing may join a scan that began its stats up to MS\n"
	        "                milliseconds before, showing attributes that old (default 0)\n"
	        "  -i            case-insensitive path lookups\n"
	        "  -h            this help\n", X__SCANS);
}

struct sftpd__listener {
	struct sftpd *srv;
	int fd;
};

static void sftpd__on_accept(struct tevent_context *ev, struct tevent_fd *fde,
                         uint16_t flags, void *arg)
{
	struct sftpd__listener *l = arg;
	struct sftpd *srv = l->srv;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	(void)ev;
	(void)fde;
	(void)flags;
	int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl,
	                 SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			sftpd_log("accept: %s", strerror(errno));
		return;
	}
	/* Pipelined replies must not wait for Nagle. */
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	char host[INET6_ADDRSTRLEN] = "?", serv[8] = "?", peer[64];
	getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv,
	            sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(peer, sizeof(peer), "%s:%s", host, serv);
	if (sftpd_conn_new(srv, fd, fd, peer) < 0) {
		sftpd_log("%s: out of memory", peer);
		close(fd);
	}
}

static bool sftpd__loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

/* Opens a listener on "ADDR:PORT" or "[ADDR]:PORT". */
static int sftpd__listen(struct sftpd *srv, const char *spec)
{
	char host[128];
	const char *colon = strrchr(spec, ':');
	const char *h = spec;
	size_t hl = colon ? (size_t)(colon - spec) : 0;

	if (!colon || !colon[1] || hl == 0 || hl >= sizeof(host)) {
		fprintf(stderr, "fsd-sftp: -l %s: expected ADDR:PORT\n", spec);
		return -1;
	}
	if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	memcpy(host, h, hl);
	host[hl] = 0;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
	                          .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai;
	int rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc != 0) {
		fprintf(stderr, "fsd-sftp: -l %s: %s\n", spec, gai_strerror(rc));
		return -1;
	}
	if (!sftpd__loopback(ai->ai_addr)) {
		fprintf(stderr, "fsd-sftp: -l %s: not a loopback address (a direct "
		        "port has no authentication)\n", spec);
		freeaddrinfo(ai);
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
		fprintf(stderr, "fsd-sftp: -l %s: %s\n", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char hb[INET6_ADDRSTRLEN], pb[8];
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	getnameinfo((struct sockaddr *)&ss, sl, hb, sizeof(hb), pb, sizeof(pb),
	            NI_NUMERICHOST | NI_NUMERICSERV);
	struct sftpd__listener *l = talloc(srv, struct sftpd__listener);
	struct tevent_fd *fde = l ? tevent_add_fd(srv->ev, l, fd, TEVENT_FD_READ,
	                                          sftpd__on_accept, l) : NULL;
	if (l) {
		l->srv = srv;
		l->fd = fd;
	}
	if (!fde) {
		close(fd);
		return -1;
	}
	tevent_fd_set_auto_close(fde);
	/* Tests and scripts read the port from this line. */
	sftpd_log("listening on %s%s%s:%s", ss.ss_family == AF_INET6 ? "[" : "",
	          hb, ss.ss_family == AF_INET6 ? "]" : "", pb);
	return 0;
}

static void sftpd__on_signal(struct tevent_context *ev, struct tevent_signal *se,
                         int signum, int count, void *siginfo, void *arg)
{
	struct sftpd *srv = arg;
	(void)ev; (void)se; (void)signum; (void)count; (void)siginfo;
	srv->done = true;
}

/* SIGUSR1: what is alive, for operators and the leak test. */
static void sftpd__on_usr1(struct tevent_context *ev, struct tevent_signal *se,
                       int signum, int count, void *siginfo, void *arg)
{
	struct sftpd *srv = arg;
	struct lk_stats st;
	(void)ev; (void)se; (void)signum; (void)count; (void)siginfo;
	lk_stats(&st);
	sftpd_log("stats: connections %u, bytes %zu, scans %llu, flights %llu, "
	          "passes %llu, joins %llu, opens %llu, in flight %u, closing %u",
	          srv->nconns, talloc_total_size(srv->conns),
	          (unsigned long long)st.live_scans,
	          (unsigned long long)st.live_flights,
	          (unsigned long long)st.getdents_passes,
	          (unsigned long long)st.shared_joins,
	          (unsigned long long)st.live_ops,
	          async_engine_inflight(ftev_engine(srv->ft)), srv->closing);
}

static void sftpd__on_usr2(struct tevent_context *ev, struct tevent_signal *se,
                       int signum, int count, void *siginfo, void *arg)
{
	(void)ev; (void)se; (void)signum; (void)count; (void)siginfo; (void)arg;
	sftpd_tl_dump();
}

/* -u USER: the credentials every request of every connection runs
 * with. Per request: the process keeps its own ids (one process serves
 * every connection); see lk_cred_new(). Returns 0 or an exit status. */
static int sftpd__user(struct sftpd *srv, const char *user)
{
	errno = 0;
	struct passwd *pw = getpwnam(user);
	if (!pw) {
		fprintf(stderr, "fsd-sftp: -u %s: %s\n", user,
		        errno ? strerror(errno) : "no such user");
		return 2;
	}
	gid_t groups[256];
	int ng = 256;
	if (getgrouplist(user, pw->pw_gid, groups, &ng) < 0) {
		fprintf(stderr, "fsd-sftp: -u %s: more than 256 groups\n", user);
		return 2;
	}
	if (lk_cred_new(pw->pw_uid, pw->pw_gid, (size_t)ng, groups,
	                &srv->cred) < 0) {
		fprintf(stderr, "fsd-sftp: -u %s: out of memory\n", user);
		return 1;
	}
	return 0;
}

/* The loop, the engine on it, the connection and bulk machinery, the
 * timeline and the signals: 0, or the exit status (said on stderr). */
static int sftpd__start(struct sftpd *srv, async_engine_t **e)
{
	srv->conns = talloc_new(srv);
	srv->ev = tevent_context_init(srv);
	if (!srv->ev || async_engine_create(NULL, e) < 0 ||
	    ftev_attach(srv->ev, *e, &srv->ft) < 0) {
		fprintf(stderr, "fsd-sftp: cannot start the event loop or the engine\n");
		return 1;
	}
	if (sftpd_conns_init(srv) < 0 || sftpd_bulk_init(srv) < 0) {
		fprintf(stderr, "fsd-sftp: cannot start the event loop: %s\n",
		        strerror(errno));
		return 1;
	}
	if (sftpd_tl_start(srv->ev) < 0) {
		fprintf(stderr, "fsd-sftp: FSD_SFTP_TIMELINE: %s\n", strerror(errno));
		return 1;
	}
	/* (SIGHUP too: a hang-up ends the connections as cleanly as a
	 * stop; SIGUSR2 means nothing without a timeline, and must not
	 * kill the server) */
	tevent_add_signal(srv->ev, srv, SIGTERM, 0, sftpd__on_signal, srv);
	tevent_add_signal(srv->ev, srv, SIGINT, 0, sftpd__on_signal, srv);
	tevent_add_signal(srv->ev, srv, SIGHUP, 0, sftpd__on_signal, srv);
	tevent_add_signal(srv->ev, srv, SIGUSR1, 0, sftpd__on_usr1, srv);
	if (sftpd_tl_on)
		tevent_add_signal(srv->ev, srv, SIGUSR2, 0, sftpd__on_usr2, srv);
	else
		signal(SIGUSR2, SIG_IGN);
	return 0;
}

/* A decimal option value of 0 to @max; -1 (said on stderr) otherwise. */
static int sftpd__num_opt(char opt, const char *arg, unsigned long max,
                          unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > max) {
		fprintf(stderr, "fsd-sftp: -%c %s: not a number from 0 to %lu\n",
		        opt, arg, max);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

struct sftpd__args {
	const char *root, *user;
	const char *listen_on[X__MAX_LISTEN];
	int nlisten;
	bool icase;
	unsigned scans, join_age;
};

/* The command line into @a: -1 to go on, else the exit status. */
static int sftpd__parse(int argc, char **argv, struct sftpd__args *a)
{
	int opt;

	*a = (struct sftpd__args){ .root = ".", .scans = X__SCANS };
	while ((opt = getopt(argc, argv, "r:l:u:s:A:ih")) != -1) {
		switch (opt) {
		case 'r': a->root = optarg; break;
		case 'l':
			if (a->nlisten == X__MAX_LISTEN) {
				fprintf(stderr, "fsd-sftp: at most %d -l\n", X__MAX_LISTEN);
				return 2;
			}
			a->listen_on[a->nlisten++] = optarg;
			break;
		case 'u': a->user = optarg; break;
		case 's':
			if (sftpd__num_opt('s', optarg, 65536, &a->scans) < 0)
				return 2;
			break;
		case 'A':
			if (sftpd__num_opt('A', optarg, 3600000, &a->join_age) < 0)
				return 2;
			break;
		case 'i': a->icase = true; break;
		case 'h': sftpd__usage(stdout); return 0;
		default: sftpd__usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		sftpd__usage(stderr);
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct sftpd__args a;
	int rc = sftpd__parse(argc, argv, &a);

	if (rc >= 0)
		return rc;
	signal(SIGPIPE, SIG_IGN);

	TALLOC_CTX *top = talloc_new(NULL);
	struct sftpd *srv = talloc_zero(top, struct sftpd);
	srv->icase = a.icase;
	srv->join_age_ms = a.join_age;
	if (a.user && (rc = sftpd__user(srv, a.user)) != 0)
		return rc;
	rc = lk_root_open(a.root, NULL, &srv->root);
	if (rc < 0) {
		fprintf(stderr, "fsd-sftp: -r %s: %s\n", a.root, strerror(-rc));
		return 1;
	}
	lk_root_limit_scans(srv->root, a.scans);
	async_engine_t *e = NULL;
	if ((rc = sftpd__start(srv, &e)) != 0)
		return rc;
	int status = 0;
	for (int i = 0; i < a.nlisten; i++)
		if (sftpd__listen(srv, a.listen_on[i]) < 0)
			status = 1;
	if (status == 0 && a.nlisten == 0) {
		srv->stdio = true;
		fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
		fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
		if (sftpd_conn_new(srv, 0, 1, "stdio") < 0)
			status = 1;
	}
	while (status == 0 && !srv->done)
		if (tevent_loop_once(srv->ev) != 0) {
			sftpd_log("event loop: %s", strerror(errno));
			status = 1;
		}
	sftpd_tl_finish();
	/* Connections first (cancelling their operations), then the
	 * engine, which waits out whatever is still in the kernel. */
	talloc_free(srv->conns);
	talloc_free(srv->ev);
	srv->ev = NULL;
	if (e)
		async_engine_destroy(e);
	lk_root_close(srv->root);
	lk_cred_free(srv->cred);
	talloc_free(top);
	return status;
}
