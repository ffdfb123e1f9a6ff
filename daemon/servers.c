#include "first.h"

/*
 * Servers: a configuration with what it opened (root, MIME table,
 * listening sockets) and the workers serving it. main() has one at
 * start-up; a reload builds the next one beside it, and the old one
 * drains and is freed once its workers are joined.
 */

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/mime.h"
#include "daemon/paths.h"
#include "daemon/priv.h"
#include "daemon/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fibril/lookup.h>

/* Problems with a configuration: on standard error at start-up, in the
 * error log at a reload (@arg non-NULL), escaped the same way in both:
 * paths and values may hold any byte. */
static void srv_err(void *arg, const char *msg)
{
	char esc[4 * 1024];

	if (arg) {
		fsd_log(LOG_ERR, "%s", msg);
	} else {
		fsd_log_escape(esc, sizeof esc, msg);
		fprintf(stderr, "%s\n", esc);
	}
}

static void srv_report(bool reload, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void srv_report(bool reload, const char *fmt, ...)
{
	static int on;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	srv_err(reload ? &on : NULL, msg);
}

/* The configuration file and the command line over it. Returns the
 * number of errors (reported), or -1 when nothing more can be said. */
static int srv_conf(struct conf *c, const struct fsd_args *a, bool reload)
{
	void *arg = reload ? c : NULL;
	int errors = 0;

	if (conf_init(c) < 0)
		return -1;
	if (a->config) {
		int r = conf_load(c, a->config, srv_err, arg);
		if (r < 0)
			return -1;
		errors += r;
	}
	if (a->root) {
		if (conf_set_str(&c->root, a->root) < 0)
			return -1;
		c->root_line = 0;
	}
	if (a->nlisten) {
		size_t kept = 0;
		/* (status_listen is not a listen address: it stays) */
		for (size_t i = 0; i < c->nlisten; i++)
			if (c->listen[i].status_only)
				c->listen[kept++] = c->listen[i];
			else
				free(c->listen[i].text);
		c->nlisten = kept;
		c->ssl_line = 0;    /* (a status_listen is never ssl) */
		for (int i = 0; i < a->nlisten; i++)
			if (conf_add_listen(c, a->listen[i]) < 0) {
				srv_report(reload, "fileserverd: --listen: expected ADDR:PORT "
				           "[ssl] [status], got '%s'", a->listen[i]);
				errors++;
			}
	}
	if (a->workers)
		c->workers = (unsigned)a->workers;
	size_t served = 0;
	for (size_t i = 0; i < c->nlisten; i++)
		served += !c->listen[i].status_only;
	if (!served) {
		if (conf_add_listen(c, "127.0.0.1:8080") < 0)
			return -1;
		c->listen[c->nlisten - 1].line = -1;
	}
	return errors + conf_validate(c, srv_err, arg);
}

/* A log is made in its directory when it is opened (log_open.c, after
 * the sockets are bound); -t says now whether there is one. Only a
 * missing directory (or a file in its place) is reported: one that the
 * user running -t may not search may still be root's to open. Returns
 * the number of errors. */
static int srv_log_dir(const struct conf *c, const char *key, const char *path,
                       int line)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	char dir[PATH_MAX];
	struct stat st;
	int err;

	if (!slash || !strcmp(path, "-"))
		return 0;
	snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &st) == 0)
		err = S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	else
		err = errno;
	if (err != ENOENT && err != ENOTDIR)
		return 0;
	srv_report(false, "%s:%d: %s %s: directory %s: %s", c->file ? c->file : "fileserverd",
	           line, key, path, dir, strerror(err));
	return 1;
}

/* One `user` or `group` line whose name @found nothing (errno set by
 * the lookup, 0 or ENOENT/ESRCH for a name that is not there). */
static int srv_no_id(const struct conf *c, const char *key, const char *name,
                     int line, bool found)
{
	if (found)
		return 0;
	srv_report(false, "%s:%d: %s %s: %s%s", c->file ? c->file : "fileserverd", line,
	           key, name, errno && errno != ENOENT && errno != ESRCH ?
	           strerror(errno) : "no such ", errno && errno != ENOENT &&
	           errno != ESRCH ? "" : key);
	return 1;
}

/* What start-up would refuse only after binding the sockets: a user or
 * group that does not exist, a log without a directory. Not at a reload,
 * which keeps the user and the logs it cannot open. */
static int srv_check_start(const struct conf *c)
{
	int errors = 0;

	if (c->user) {
		errno = 0;
		errors += srv_no_id(c, "user", c->user, c->user_line, getpwnam(c->user));
	}
	if (c->group) {
		errno = 0;
		errors += srv_no_id(c, "group", c->group, c->group_line, getgrnam(c->group));
	}
	errors += srv_log_dir(c, "error_log", c->error_log, c->error_log_line);
	errors += srv_log_dir(c, "access_log", c->access_log, c->access_log_line);
	return errors;
}

struct fsd_server *fsd_server_new(const struct fsd_args *a, bool reload,
                                  int *errors)
{
	struct fsd_server *s = calloc(1, sizeof *s);
	const char *config = a->config;
	struct conf *c;
	int r;

	*errors = -1;
	if (!s)
		return NULL;
	s->rootfd = -1;
	c = &s->conf;
	*errors = srv_conf(c, a, reload);
	if (*errors < 0)
		goto fail;
	if (!reload)
		*errors += srv_check_start(c);
	/* Keys are usually readable by root only: read while we are, or
	 * at a reload through the root helper (priv.h). */
	*errors += fsd_tls_load(s, srv_err, reload ? c : NULL);
	r = lk_root_open(c->root, NULL, &s->lkroot);
	if (r < 0) {
		if (c->root_line > 0)
			srv_report(reload, "%s:%d: root %s: %s", config, c->root_line,
			           c->root, strerror(-r));
		else if (a->root)
			srv_report(reload, "fileserverd: --root %s: %s", c->root, strerror(-r));
		else
			srv_report(reload, "fileserverd: root %s (the default, the current "
			           "directory): %s", c->root, strerror(-r));
		++*errors;
	} else {
		/* static.c opens through a root that refuses every symlink
		 * first, and through the real one only when that fails. */
		struct lk_root_opts o = { .symlinks = LK_SYMLINKS_NEVER };
		int fd = fcntl(lk_root_fd(s->lkroot), F_DUPFD_CLOEXEC, 3);
		s->rootfd = lk_root_fd(s->lkroot);
		if (fd >= 0 && lk_root_from_fd(fd, &o, &s->lknolinks) < 0) {
			close(fd);
			s->lknolinks = NULL;
		}
	}
	*errors += fsd_paths_open(s, srv_err, reload ? c : NULL);
	r = fsd_mime_load(s, c->mime_types);
	if (r == -ENOMEM)
		goto fail;
	/* (a missing /etc/mime.types leaves the built-in table) */
	if (r < 0 && c->mime_types_line > 0 && strcmp(c->mime_types, "/etc/mime.types")) {
		srv_report(reload, "%s:%d: mime_types %s: %s", config, c->mime_types_line,
		           c->mime_types, r == -EINVAL ? "not a regular file" : strerror(-r));
		++*errors;
	}
	return s;
fail:
	fsd_server_free(s);
	return NULL;
}

static bool srv_same(const struct conf_listen *a, const struct conf_listen *b)
{
	return a->addrlen == b->addrlen && !memcmp(&a->addr, &b->addr, a->addrlen);
}

int fsd_server_bind(struct fsd_server *s, const struct fsd_server *old)
{
	const struct conf *c = &s->conf;

	s->listen_fds = malloc(c->nlisten * sizeof *s->listen_fds);
	if (!s->listen_fds)
		return -ENOMEM;
	for (size_t l = 0; l < c->nlisten; l++)
		s->listen_fds[l] = -1;
	for (size_t l = 0; l < c->nlisten; l++) {
		char why[LO_MSG] = "";
		int fd = -ENOENT;
		/* An address kept keeps its socket: the new workers accept
		 * from the same queue, so no connection is refused. */
		for (size_t k = 0; old && k < old->conf.nlisten; k++)
			if (srv_same(&c->listen[l], &old->conf.listen[k]) &&
			    old->listen_fds[k] >= 0) {
				fd = fcntl(old->listen_fds[k], F_DUPFD_CLOEXEC, 3);
				if (fd < 0) {
					fd = -errno;
					snprintf(why, sizeof why, "%s", strerror(-fd));
				}
				break;
			}
		if (fd == -ENOENT) {
			fd = fsd_priv_bind(&c->listen[l], why);
			if (fd >= 0 && old)
				fsd_log(LOG_NOTICE, "listening on %s", c->listen[l].text);
		}
		if (fd < 0) {
			const struct conf_listen *cl = &c->listen[l];
			char at[32] = "";
			/* the line of the file that gives the address, if any */
			if (cl->line > 0)
				snprintf(at, sizeof at, ":%d", cl->line);
			srv_report(old != NULL, "%s%s: %s %s: %s%s",
			           cl->line > 0 && c->file ? c->file : "fileserverd", at,
			           cl->status_only ? "status_listen" : "listen", cl->text,
			           why, fd == -EADDRINUSE ?
			           " (another process is listening there)" : "");
			return fd;
		}
		s->listen_fds[l] = fd;
	}
	return 0;
}

int fsd_server_start(struct fsd_server *s)
{
	unsigned nw = s->conf.workers;
	int r = 0;

	s->workers = calloc(nw, sizeof *s->workers);
	if (!s->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < nw; i++) {
		struct fsd_worker *w = &s->workers[i];
		w->id = i;
		w->srv = s;
		w->nmhd = s->conf.nlisten;
		w->listen_fds = s->listen_fds;
		w->stop_efd = -1;
		r = fsd_worker_start(w);
		if (r < 0) {
			fsd_log(LOG_ERR, "worker %u failed to start: %s", i, strerror(-r));
			break;
		}
		s->nstarted++;
	}
	/* A server takes over only once every worker is ready to serve. */
	for (unsigned i = 0; r == 0 && i < s->nstarted; i++) {
		int st;
		while (!(st = atomic_load(&s->workers[i].started)))
			usleep(1000);
		if (st < 0)
			r = -EINVAL;
	}
	if (r < 0) {
		fsd_server_stop(s, true);
		while (!fsd_server_reap(s))
			usleep(1000);
	}
	return r;
}

void fsd_server_stop(struct fsd_server *s, bool now)
{
	for (unsigned i = 0; i < s->nstarted; i++)
		fsd_worker_stop(&s->workers[i], now);
}

bool fsd_server_reap(struct fsd_server *s)
{
	bool accepting = false, running = false;

	for (unsigned i = 0; i < s->nstarted; i++) {
		accepting |= !atomic_load(&s->workers[i].accept_stopped);
		running |= !atomic_load(&s->workers[i].exited);
	}
	/* The sockets of addresses a reload dropped close now, not when
	 * the last download on them ends; those it kept live on in the
	 * next server's own descriptors. */
	if (!accepting && s->listen_fds)
		for (size_t l = 0; l < s->conf.nlisten; l++)
			if (s->listen_fds[l] >= 0) {
				close(s->listen_fds[l]);
				s->listen_fds[l] = -1;
			}
	if (running)
		return false;
	for (unsigned i = 0; i < s->nstarted; i++)
		fsd_worker_join(&s->workers[i]);
	s->nstarted = 0;
	return true;
}

void fsd_server_free(struct fsd_server *s)
{
	if (!s)
		return;
	for (size_t l = 0; s->listen_fds && l < s->conf.nlisten; l++)
		if (s->listen_fds[l] >= 0)
			close(s->listen_fds[l]);
	free(s->listen_fds);
	free(s->workers);
	fsd_paths_close(s);
	if (s->lknolinks)
		lk_root_close(s->lknolinks);
	if (s->lkroot)
		lk_root_close(s->lkroot);
	fsd_mime_free(s);
	fsd_tls_free(s);
	conf_free(&s->conf);
	free(s);
}
