#include "first.h"

#include "daemon/log.h"
#include "daemon/log_int.h"
#include "daemon/daemon.h"
#include "daemon/priv.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FSD_LOG_CHUNK   (16 * 1024)
#define FSD_LOG_BACKLOG (64u << 20)
#define FSD_LOG_MSG     1024                    /* a message before escaping */
#define FSD_LOG_LINE    (4 * FSD_LOG_MSG + 64)  /* ... after, with time and level */

enum { LOG_ACCESS = 0, LOG_ERROR = 1 };

struct chunk {
	struct chunk *next;
	int which;
	size_t len;
	char data[];
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool running, quit, reopen;
	struct chunk *head, *tail;
	size_t queued;
	unsigned long dropped;
	int fd[2];
	char *path[2];          /* NULL: stderr (error) / off (access) */
	/* What a reload asks for: NULL, "-" (standard error / output) or
	 * a file, taken by the writer at its next reopen. */
	bool want_set;
	char *want[2];
	atomic_int level;
	atomic_bool access_on;
	struct lo_trust trust;
} L = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.fd = { -1, 2 },
	.level = LOG_NOTICE,
};

/* Per-thread access-log buffer. */
static __thread struct chunk *tl_buf;

static const char *const level_names[] = {
	"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"
};

static const char *const log_names[2] = { "access_log", "error_log" };

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t r = write(fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere to report a failing log */
		}
		p += r;
		n -= (size_t)r;
	}
}

static size_t fmt_line(char *out, size_t room, int level, const char *fmt,
                       va_list ap);

/* A line straight to the error log, bypassing the queue: the writer
 * thread's own reports. Standard error gets it too, so that a failure
 * is seen even when the error log is what failed. */
static void writer_report(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void writer_report(int level, const char *fmt, ...)
{
	char line[FSD_LOG_LINE];
	va_list ap;

	if (level > L.level)
		return;
	va_start(ap, fmt);
	size_t n = fmt_line(line, sizeof line, level, fmt, ap);
	va_end(ap);
	if (L.fd[LOG_ERROR] >= 0)
		write_all(L.fd[LOG_ERROR], line, n);
	if (L.fd[LOG_ERROR] != 2 && level <= LOG_WARNING)
		write_all(2, line, n);
}

static bool is_file(const char *path)
{
	return path && strcmp(path, "-");
}

/* A reload changed where a log goes: to standard error or output
 * (@std), or off. Files are opened by do_reopen(). */
static void switch_std(int which, bool std)
{
	int fd = which == LOG_ERROR ? 2 : std ? dup(1) : -1;

	if (L.fd[which] > 2)
		close(L.fd[which]);
	L.fd[which] = fd;
}

/* The paths of a reload, if one asked: true when they changed. */
static bool take_wanted(void)
{
	char *want[2];
	bool changed = false;

	pthread_mutex_lock(&L.mu);
	if (!L.want_set) {
		pthread_mutex_unlock(&L.mu);
		return false;
	}
	L.want_set = false;
	want[0] = L.want[0];
	want[1] = L.want[1];
	L.want[0] = L.want[1] = NULL;
	pthread_mutex_unlock(&L.mu);
	for (int i = 0; i < 2; i++) {
		char *w = want[i];
		bool old_std = !L.path[i] && (i == LOG_ERROR || L.fd[i] >= 0);
		bool new_std = i == LOG_ERROR ? !is_file(w) : w && !strcmp(w, "-");

		if (!is_file(w)) {
			if (L.path[i] || old_std != new_std) {
				switch_std(i, new_std);
				changed = true;
			}
			free(L.path[i]);
			L.path[i] = NULL;
			free(w);
			continue;
		}
		if (!L.path[i] || strcmp(L.path[i], w))
			changed = true;
		free(L.path[i]);
		L.path[i] = w;
	}
	return changed;
}

/* Writer thread, without the lock: only the writer uses L.fd while it
 * runs. A log that cannot be opened again keeps its old descriptor (the
 * rotated file goes on growing) and says why. */
static void do_reopen(void)
{
	char msgs[2][LO_MSG];
	int fds[2], reopened = 0;
	bool changed = take_wanted();

	if (fsd_priv_running())
		fsd_priv_reopen_logs(fds, msgs);
	else
		for (int i = 0; i < 2; i++)
			fds[i] = L.path[i] ? lo_open(L.path[i], &L.trust, msgs[i]) : -ENOENT;
	for (int i = 0; i < 2; i++) {
		if (!L.path[i]) {
			if (fds[i] >= 0)
				close(fds[i]);
			continue;
		}
		if (fds[i] < 0) {
			writer_report(LOG_ERR, "%s %s %s: %s; still writing "
			              "to the file opened before", changed ?
			              "opening" : "reopening", log_names[i],
			              L.path[i], msgs[i]);
			continue;
		}
		if (L.fd[i] > 2)
			close(L.fd[i]);
		L.fd[i] = fds[i];
		reopened++;
	}
	/* The first line of a new error log says where it comes from. */
	if (reopened)
		writer_report(LOG_NOTICE, "logs reopened");
}

static void *writer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&L.mu);
	for (;;) {
		while (!L.head && !L.quit && !L.reopen)
			pthread_cond_wait(&L.cv, &L.mu);
		if (L.reopen) {
			L.reopen = false;
			pthread_mutex_unlock(&L.mu);
			do_reopen();
			pthread_mutex_lock(&L.mu);
			continue;
		}
		struct chunk *c = L.head;
		if (!c) {
			if (L.quit)
				break;
			continue;
		}
		L.head = c->next;
		if (!L.head)
			L.tail = NULL;
		L.queued -= c->len;
		pthread_mutex_unlock(&L.mu);
		if (L.fd[c->which] >= 0)
			write_all(L.fd[c->which], c->data, c->len);
		free(c);
		pthread_mutex_lock(&L.mu);
	}
	pthread_mutex_unlock(&L.mu);
	return NULL;
}

static void enqueue(struct chunk *c)
{
	pthread_mutex_lock(&L.mu);
	if (!L.running) {
		pthread_mutex_unlock(&L.mu);
		if (L.fd[c->which] >= 0)
			write_all(L.fd[c->which], c->data, c->len);
		free(c);
		return;
	}
	if (L.queued + c->len > FSD_LOG_BACKLOG) {
		L.dropped++;
		pthread_mutex_unlock(&L.mu);
		free(c);
		return;
	}
	c->next = NULL;
	if (L.tail)
		L.tail->next = c;
	else
		L.head = c;
	L.tail = c;
	L.queued += c->len;
	pthread_cond_signal(&L.cv);
	pthread_mutex_unlock(&L.mu);
}

static int open_one(int which, const char *path)
{
	char msg[LO_MSG];
	int fd = lo_open(path, &L.trust, msg);

	if (fd < 0) {
		fprintf(stderr, "fileserverd: %s %s: %s\n", log_names[which], path, msg);
		return fd;
	}
	L.fd[which] = fd;
	L.path[which] = strdup(path);
	return L.path[which] ? 0 : -ENOMEM;
}

int fsd_log_open(const struct conf *c)
{
	char msg[LO_MSG];
	int r;

	L.level = c->log_level;
	r = lo_trust_for(&L.trust, c->user, c->group, msg);
	if (r < 0) {
		fprintf(stderr, "fileserverd: %s\n", msg);
		return r;
	}
	if (c->error_log && strcmp(c->error_log, "-")) {
		r = open_one(LOG_ERROR, c->error_log);
		if (r < 0)
			return r;
	}
	if (c->access_log) {
		if (!strcmp(c->access_log, "-")) {
			L.fd[LOG_ACCESS] = dup(1);
			if (L.fd[LOG_ACCESS] < 0)
				return -errno;
		} else {
			r = open_one(LOG_ACCESS, c->access_log);
			if (r < 0)
				return r;
		}
		L.access_on = true;
	}
	/* The writer must never take a signal meant for main()'s sigwait:
	 * a SIGUSR1 delivered to it would end the process. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&L.thread, NULL, writer, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return -r;
	L.running = true;
	return 0;
}

void fsd_log_close(void)
{
	fsd_log_flush_thread();
	pthread_mutex_lock(&L.mu);
	if (!L.running) {
		pthread_mutex_unlock(&L.mu);
		return;
	}
	L.quit = true;
	pthread_cond_signal(&L.cv);
	pthread_mutex_unlock(&L.mu);
	pthread_join(L.thread, NULL);
	L.running = false;
	fsd_priv_stop();
	if (L.dropped) {
		char msg[96];
		int n = snprintf(msg, sizeof msg,
		                 "fileserverd: %lu log chunks dropped (writer too slow)\n",
		                 L.dropped);
		write_all(L.fd[LOG_ERROR], msg, (size_t)n);
	}
	for (int i = 0; i < 2; i++) {
		if (L.fd[i] > 2)
			close(L.fd[i]);
		free(L.path[i]);
		L.path[i] = NULL;
		free(L.want[i]);
		L.want[i] = NULL;
	}
	L.fd[LOG_ACCESS] = -1;
	L.fd[LOG_ERROR] = 2;
	L.access_on = false;
}

void fsd_log_reopen(void)
{
	pthread_mutex_lock(&L.mu);
	L.reopen = true;
	pthread_cond_signal(&L.cv);
	pthread_mutex_unlock(&L.mu);
}

int fsd_log_reconfigure(const struct conf *c)
{
	char *want[2] = { NULL, NULL };

	if ((c->access_log && !(want[LOG_ACCESS] = strdup(c->access_log))) ||
	    (c->error_log && !(want[LOG_ERROR] = strdup(c->error_log)))) {
		free(want[LOG_ACCESS]);
		return -ENOMEM;
	}
	pthread_mutex_lock(&L.mu);
	L.level = c->log_level;
	for (int i = 0; i < 2; i++) {
		free(L.want[i]);
		L.want[i] = want[i];
	}
	L.want_set = true;
	L.reopen = true;
	/* Lines formatted before the writer opened the new access log
	 * still go out: to the old file, or nowhere if there was none. */
	L.access_on = c->access_log != NULL;
	pthread_cond_signal(&L.cv);
	pthread_mutex_unlock(&L.mu);
	return 0;
}

int fsd_access_log_enabled(void)
{
	return L.access_on;
}

/* Every byte a client may have sent must reach the log as text that
 * cannot pass for a line of ours or drive a terminal: controls, DEL,
 * bytes >= 0x80 become \xNN and a backslash doubles (nginx's escaping),
 * the same in both logs. */
static size_t put_escaped(char *o, size_t room, const char *s, bool quote)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (; *s && n + 4 < room; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '\\' || (quote && ch == '"')) {
			o[n++] = '\\';
			o[n++] = (char)ch;
		} else if (ch < 0x20 || ch >= 0x7f) {
			o[n++] = '\\';
			o[n++] = 'x';
			o[n++] = hex[ch >> 4];
			o[n++] = hex[ch & 15];
		} else
			o[n++] = (char)ch;
	}
	return n;
}

size_t fsd_log_escape(char *out, size_t room, const char *s)
{
	size_t n;

	if (!room)
		return 0;
	n = put_escaped(out, room, s, false);
	out[n] = 0;
	return n;
}

/* One error log line, newline included, into @out (FSD_LOG_LINE). The
 * whole message is escaped, so no caller can forget to. */
static size_t fmt_line(char *out, size_t room, int level, const char *fmt,
                       va_list ap)
{
	char msg[FSD_LOG_MSG];
	struct timespec now;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	n = strftime(out, room, "%Y-%m-%dT%H:%M:%SZ", &tm);
	n += (size_t)snprintf(out + n, room - n, " [%s] ",
	                      level_names[level < 0 ? 0 : level > 7 ? 7 : level]);
	if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
		msg[0] = 0;
	n += put_escaped(out + n, room - n - 1, msg, false);
	out[n++] = '\n';
	return n;
}

void fsd_vlog(int level, const char *fmt, va_list ap)
{
	char line[FSD_LOG_LINE];
	size_t n;

	if (level > L.level)
		return;
	n = fmt_line(line, sizeof line, level, fmt, ap);
	struct chunk *c = malloc(sizeof *c + n);
	if (!c)
		return;
	c->which = LOG_ERROR;
	c->len = n;
	memcpy(c->data, line, n);
	enqueue(c);
}

void fsd_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fsd_vlog(level, fmt, ap);
	va_end(ap);
}

void fsd_log_fs(int level, const char *what, const char *path, int err)
{
	fsd_log(level, "%s %s: %s", what, path, strerror(err < 0 ? -err : err));
}

void fsd_log_flush_thread(void)
{
	struct chunk *c = tl_buf;

	if (!c || !c->len)
		return;
	tl_buf = NULL;
	enqueue(c);
}

/* CLF quotes fields with "; they are escaped like the error log, with
 * the quote too. */
static size_t put_quoted(char *o, size_t room, const char *s)
{
	return put_escaped(o, room, s && *s ? s : "-", true);
}

/* Room for a field that must leave @reserve bytes for those after it;
 * never wraps below zero, whatever the fields before took. */
static size_t room_for(size_t room, size_t n, size_t reserve)
{
	return n + reserve < room ? room - n - reserve : 0;
}

void fsd_access_log(const struct fsd_req *rq)
{
	static __thread time_t cached_sec = -1;
	static __thread char cached_ts[40];
	char line[4096];
	size_t n, room = sizeof line - 1;
	time_t now = time(NULL);

	if (!L.access_on)
		return;
	if (now != cached_sec) {
		struct tm tm;
		localtime_r(&now, &tm);
		strftime(cached_ts, sizeof cached_ts, "%d/%b/%Y:%H:%M:%S %z", &tm);
		cached_sec = now;
	}
	n = (size_t)snprintf(line, room, "%s - - [%s] \"",
	                     rq->addr[0] ? rq->addr : "-", cached_ts);
	n += put_quoted(line + n, room_for(room, n, 900), rq->method_str);
	line[n++] = ' ';
	n += put_quoted(line + n, room_for(room, n, 900), rq->uri);
	line[n++] = ' ';
	n += put_quoted(line + n, room_for(room, n, 900), rq->version);
	uint64_t bytes = rq->body_len + rq->page_len + rq->stream_bytes;
	if (bytes)
		n += (size_t)snprintf(line + n, room - n, "\" %u %llu \"",
		                      rq->status, (unsigned long long)bytes);
	else
		n += (size_t)snprintf(line + n, room - n, "\" %u - \"", rq->status);
	n += put_quoted(line + n, room_for(room, n, 450), rq->h.referer);
	line[n++] = '"';
	line[n++] = ' ';
	line[n++] = '"';
	n += put_quoted(line + n, room_for(room, n, 4), rq->h.user_agent);
	line[n++] = '"';
	line[n++] = '\n';

	struct chunk *c = tl_buf;
	if (c && c->len + n > FSD_LOG_CHUNK) {
		fsd_log_flush_thread();
		c = NULL;
	}
	if (!c) {
		c = malloc(sizeof *c + FSD_LOG_CHUNK);
		if (!c)
			return;
		c->which = LOG_ACCESS;
		c->len = 0;
		tl_buf = c;
	}
	memcpy(c->data + c->len, line, n);
	c->len += n;
}
