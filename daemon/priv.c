#include "first.h"

#include "daemon/priv.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * One listening socket per address, shared by every worker (each
 * accepts from it, conn.c), and no SO_REUSEPORT: with it, a second
 * server run by the same user (another fileserverd, anything setting
 * the option) would bind the same port without an error and silently
 * take a share of the connections. Without it the kernel refuses the
 * port to anyone while we hold it, and refuses it to us while anyone
 * else does: EADDRINUSE at start-up, as with nginx. A reload keeps the
 * sockets of the addresses it keeps, so it never needs to bind twice.
 */
int fsd_listen_bind(const struct conf_listen *l)
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

/* ---- the helper's side ---- */

enum { PRIV_LOGS = 'R', PRIV_OPEN = 'O', PRIV_BIND = 'B' };

struct priv_req {
	char op;
	int flags;
	char arg[PATH_MAX];
};

struct priv_reply {
	int err[2];             /* 0: a descriptor follows, in order */
	char msg[2][LO_MSG];
};

#define PRIV_OPEN_FLAGS (O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)

struct priv_state {
	const char *config;     /* absolute, or NULL */
	char *const *listen;    /* the command line's */
	size_t nlisten;
	char *logs[2];          /* the last paths a valid file named */
	struct lo_trust trust;
};

static void priv_silent(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* The file as it is now: 0 when it loads without an error. */
static int priv_load(const struct priv_state *ps, struct conf *c)
{
	if (conf_init(c) < 0)
		return -ENOMEM;
	if (ps->config && conf_load(c, ps->config, priv_silent, NULL) != 0) {
		conf_free(c);
		return -EINVAL;
	}
	return 0;
}

static void priv_logs(struct priv_state *ps, struct priv_reply *rep, int fds[2],
                      int *nfd)
{
	struct conf c;

	/* A file that does not load (being edited, or refused by the
	 * daemon's last reload) leaves the paths of the last one that did. */
	if (ps->config && priv_load(ps, &c) == 0) {
		const char *now[2] = { c.access_log, c.error_log };
		for (int i = 0; i < 2; i++) {
			free(ps->logs[i]);
			ps->logs[i] = now[i] && strcmp(now[i], "-") ? strdup(now[i]) : NULL;
		}
		conf_free(&c);
	}
	for (int i = 0; i < 2; i++) {
		if (!ps->logs[i]) {
			rep->err[i] = -ENOENT;
			continue;
		}
		int fd = lo_open(ps->logs[i], &ps->trust, rep->msg[i]);
		if (fd < 0)
			rep->err[i] = fd;
		else
			fds[(*nfd)++] = fd;
	}
}

struct priv_find {
	const char *want;
	bool found;
};

/* Only the files the daemon reads through the helper: the TLS
 * certificate and key. Any other value of the file (a log, the MIME
 * table, the root) is not for the service user to read as root. */
static int priv_find_value(void *user, const char *section, const char *name,
                           const char *value)
{
	struct priv_find *f = user;

	if (!strcmp(section, "server") &&
	    (!strcmp(name, "ssl_certificate") || !strcmp(name, "ssl_certificate_key")) &&
	    !strcmp(value, f->want))
		f->found = true;
	return 1;
}

static int priv_open(const struct priv_state *ps, const struct priv_req *rq,
                     char msg[LO_MSG])
{
	struct priv_find f = { rq->arg, false };
	struct stat st;
	int fd;

	if ((rq->flags & ~PRIV_OPEN_FLAGS) != O_RDONLY || rq->arg[0] != '/') {
		snprintf(msg, LO_MSG, "only absolute paths, read-only");
		return -EPERM;
	}
	if (ps->config)
		ini_parse(ps->config, priv_find_value, &f);
	if (!f.found) {
		snprintf(msg, LO_MSG, "not named by ssl_certificate or ssl_certificate_key");
		return -EPERM;
	}
	/* Non-blocking: a FIFO or a device put there must not hang us. The
	 * name is the file's, but the service user may own a directory on
	 * the way: links are followed only where root made them. */
	fd = lo_open_read(rq->arg, rq->flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, msg);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		bool dir = S_ISDIR(st.st_mode);
		snprintf(msg, LO_MSG, dir ? "is a directory" : "not a regular file");
		close(fd);
		return dir ? -EISDIR : -EINVAL;
	}
	if (!(rq->flags & O_NONBLOCK))
		fcntl(fd, F_SETFL, 0);
	return fd;
}

static bool priv_same(const struct conf_listen *a, const struct sockaddr_storage *ss,
                      socklen_t len)
{
	return a->addrlen == len && !memcmp(&a->addr, ss, len);
}

static int priv_bind(const struct priv_state *ps, const struct priv_req *rq,
                     char msg[LO_MSG])
{
	struct conf_listen l = { .text = NULL };
	bool named = false;
	struct conf c;

	if (conf_parse_listen(rq->arg, &l.addr, &l.addrlen) < 0) {
		snprintf(msg, LO_MSG, "not an address");
		return -EINVAL;
	}
	for (size_t i = 0; i < ps->nlisten && !named; i++) {
		struct conf_listen k;
		named = conf_parse_listen(ps->listen[i], &k.addr, &k.addrlen) == 0 &&
		        priv_same(&k, &l.addr, l.addrlen);
	}
	if (!named && ps->config && priv_load(ps, &c) == 0) {
		for (size_t i = 0; i < c.nlisten && !named; i++)
			named = priv_same(&c.listen[i], &l.addr, l.addrlen);
		conf_free(&c);
	}
	if (!named) {
		snprintf(msg, LO_MSG, "not named in the configuration");
		return -EPERM;
	}
	int fd = fsd_listen_bind(&l);
	if (fd < 0)
		snprintf(msg, LO_MSG, "%s", strerror(-fd));
	return fd;
}

static void priv_serve(int sock, struct priv_state *ps)
{
	struct priv_req rq;

	for (;;) {
		ssize_t n = recv(sock, &rq, sizeof rq, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		struct priv_reply rep;
		int fds[2], nfd = 0;
		memset(&rep, 0, sizeof rep);
		if (n != (ssize_t)sizeof rq || (rq.op != PRIV_LOGS &&
		    memchr(rq.arg, 0, sizeof rq.arg) == NULL)) {
			rep.err[0] = rep.err[1] = -EINVAL;
		} else if (rq.op == PRIV_LOGS) {
			priv_logs(ps, &rep, fds, &nfd);
		} else {
			int fd = rq.op == PRIV_OPEN ? priv_open(ps, &rq, rep.msg[0]) :
			         rq.op == PRIV_BIND ? priv_bind(ps, &rq, rep.msg[0]) : -EINVAL;
			rep.err[1] = -ENOENT;
			if (fd < 0)
				rep.err[0] = fd;
			else
				fds[nfd++] = fd;
		}
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof fds)];
		} u;
		struct iovec iov = { &rep, sizeof rep };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		memset(&u, 0, sizeof u);
		if (nfd) {
			mh.msg_control = u.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfd);
		}
		while (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 && errno == EINTR)
			;
		for (int i = 0; i < nfd; i++)
			close(fds[i]);
	}
}

/* ---- the daemon's side ---- */

static int priv_sock = -1;
static pid_t priv_pid = -1;

int fsd_priv_start(const char *config, char *const *listen, size_t nlisten,
                   const struct conf *c)
{
	struct priv_state ps = { .listen = listen, .nlisten = nlisten };
	const char *logs[2] = { c->access_log, c->error_log };
	char *abs = NULL, msg[LO_MSG];
	int sv[2], r;

	if (geteuid() != 0 || !c->user)
		return 0;
	r = lo_trust_for(&ps.trust, c->user, c->group, msg);
	if (r < 0) {
		fprintf(stderr, "fileserverd: %s\n", msg);
		return r;
	}
	if (ps.trust.uid == 0)
		return 0;
	for (int i = 0; i < 2; i++)
		if (logs[i] && !strcmp(logs[i], "-"))
			logs[i] = NULL;
	/* The daemon does not change directory, but the helper must name
	 * the same file whatever happens. */
	if (config && !(abs = realpath(config, NULL)))
		goto fail;
	ps.config = abs;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		goto fail;
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		goto fail;
	}
	if (pid == 0) {
		/* Signals meant for the daemon (a whole process group or
		 * cgroup may get them) must not end the helper early. */
		static const int ign[] = { SIGHUP, SIGINT, SIGQUIT, SIGUSR1,
		                           SIGUSR2, SIGPIPE };
		for (size_t i = 0; i < sizeof ign / sizeof *ign; i++)
			signal(ign[i], SIG_IGN);
		int s = sv[1];
		if (s < 3) {
			s = fcntl(s, F_DUPFD_CLOEXEC, 3);
			if (s < 0)
				_exit(1);
		}
		/* Nothing of the daemon's (sockets, the document root) stays
		 * open in a process that keeps root. */
		if (s > 3)
			close_range(3, (unsigned)s - 1, 0);
		close_range((unsigned)s + 1, ~0U, 0);
		for (int i = 0; i < 2; i++)
			ps.logs[i] = logs[i] ? strdup(logs[i]) : NULL;
		priv_serve(s, &ps);
		_exit(0);
	}
	free(abs);
	close(sv[1]);
	priv_sock = sv[0];
	priv_pid = pid;
	return 0;
fail:
	r = -errno;
	fprintf(stderr, "fileserverd: root helper: %s\n", strerror(-r));
	free(abs);
	return r;
}

bool fsd_priv_running(void)
{
	return priv_sock >= 0;
}

/* One request, its reply and up to two descriptors (-1 where none). */
static int priv_call(const struct priv_req *rq, struct priv_reply *rep, int got[2])
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	struct iovec iov = { rep, sizeof *rep };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	                     .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	int ngot = 0;
	ssize_t n;

	got[0] = got[1] = -1;
	while ((n = send(priv_sock, rq, sizeof *rq, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof *rq)
		while ((n = recvmsg(priv_sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
			;
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm;
	     cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t j = 0; j < k; j++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + j * sizeof(int), sizeof fd);
			if (ngot < 2)
				got[ngot++] = fd;
			else
				close(fd);
		}
	}
	if (n != (ssize_t)sizeof *rep) {
		for (int j = 0; j < ngot; j++)
			close(got[j]);
		got[0] = got[1] = -1;
		return -EPIPE;  /* the helper is gone */
	}
	return 0;
}

/* Serialised: the reload (main thread) and log reopening (the log
 * writer) may ask at the same time, and replies are not tagged. */
static pthread_mutex_t priv_mu = PTHREAD_MUTEX_INITIALIZER;

/* The descriptor, or -errno with the helper's reason in @why (it knows
 * more than an errno says: which link it would not follow, that the
 * file does not name the path...). */
static int priv_one(char op, const char *arg, int flags, char why[LO_MSG])
{
	struct priv_req rq = { .op = op, .flags = flags };
	struct priv_reply rep;
	int got[2], r;

	if (strlen(arg) >= sizeof rq.arg) {
		snprintf(why, LO_MSG, "%s", strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	strcpy(rq.arg, arg);
	pthread_mutex_lock(&priv_mu);
	r = priv_call(&rq, &rep, got);
	pthread_mutex_unlock(&priv_mu);
	if (r < 0) {
		snprintf(why, LO_MSG, "root helper: %s", strerror(-r));
		return r;
	}
	if (got[1] >= 0)
		close(got[1]);
	if (rep.err[0] < 0) {
		if (got[0] >= 0)
			close(got[0]);
		rep.msg[0][LO_MSG - 1] = 0;
		snprintf(why, LO_MSG, "%s", rep.msg[0][0] ? rep.msg[0] : strerror(-rep.err[0]));
		return rep.err[0];
	}
	if (got[0] < 0)
		snprintf(why, LO_MSG, "root helper: no descriptor received");
	return got[0] >= 0 ? got[0] : -EBADMSG;
}

int fsd_priv_open(const char *path, int flags, char why[LO_MSG])
{
	char ignored[LO_MSG];
	int fd;

	if (!why)
		why = ignored;
	if (priv_sock >= 0)
		return priv_one(PRIV_OPEN, path, flags, why);
	/* Root follows links as the helper does at a reload: only those
	 * root made where only root may write. Start-up and a reload then
	 * agree on a file, and a service user's link cannot pass another
	 * file off as the certificate. */
	if (geteuid() == 0)
		return lo_open_read(path, flags, why);
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		snprintf(why, LO_MSG, "%s", strerror(-fd));
	}
	return fd;
}

int fsd_priv_bind(const struct conf_listen *l, char why[LO_MSG])
{
	char ignored[LO_MSG];
	int fd = fsd_listen_bind(l);

	if (!why)
		why = ignored;
	if ((fd == -EACCES || fd == -EPERM) && priv_sock >= 0)
		return priv_one(PRIV_BIND, l->text, 0, why);
	if (fd < 0)
		snprintf(why, LO_MSG, "%s", strerror(-fd));
	return fd;
}

int fsd_priv_reopen_logs(int fds[2], char msgs[2][LO_MSG])
{
	struct priv_req rq = { .op = PRIV_LOGS };
	struct priv_reply rep;
	int got[2], r, j = 0;

	pthread_mutex_lock(&priv_mu);
	r = priv_call(&rq, &rep, got);
	pthread_mutex_unlock(&priv_mu);
	for (int i = 0; i < 2; i++) {
		if (r < 0) {
			fds[i] = r;
			snprintf(msgs[i], LO_MSG, "root helper: %s", strerror(-r));
		} else if (rep.err[i] < 0) {
			fds[i] = rep.err[i];
			memcpy(msgs[i], rep.msg[i], LO_MSG);
			msgs[i][LO_MSG - 1] = 0;
		} else if (j < 2 && got[j] >= 0) {
			fds[i] = got[j++];
			msgs[i][0] = 0;
		} else {
			fds[i] = -EBADMSG;
			snprintf(msgs[i], LO_MSG, "root helper: no descriptor received");
		}
	}
	return r;
}

void fsd_priv_stop(void)
{
	if (priv_sock < 0)
		return;
	close(priv_sock);
	priv_sock = -1;
	while (waitpid(priv_pid, NULL, 0) < 0 && errno == EINTR)
		;
	priv_pid = -1;
}
