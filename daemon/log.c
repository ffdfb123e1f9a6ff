#include "first.h"

#include "daemon/log.h"
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FSD_LOG_CHUNK   (16 * 1024)
#define FSD_LOG_BACKLOG (64u << 20)

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
	int level;
	bool access_on;
} L = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.fd = { -1, 2 },
	.level = LOG_NOTICE,
};

/* Per-thread access-log buffer. */
static __thread struct chunk *tl_buf;

static int open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	return fd < 0 ? -errno : fd;
}

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

static void do_reopen(void)
{
	for (int i = 0; i < 2; i++) {
		if (!L.path[i])
			continue;
		int fd = open_log(L.path[i]);
		if (fd < 0)
			continue;       /* keep the old one */
		if (L.fd[i] > 2)
			close(L.fd[i]);
		L.fd[i] = fd;
	}
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
			do_reopen();
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

int fsd_log_open(const struct conf *c)
{
	int fd;

	L.level = c->log_level;
	if (c->error_log && strcmp(c->error_log, "-")) {
		fd = open_log(c->error_log);
		if (fd < 0) {
			fprintf(stderr, "fileserverd: error_log %s: %s\n",
			        c->error_log, strerror(-fd));
			return fd;
		}
		L.fd[LOG_ERROR] = fd;
		L.path[LOG_ERROR] = strdup(c->error_log);
	}
	if (c->access_log) {
		if (!strcmp(c->access_log, "-"))
			fd = dup(1);
		else
			fd = open_log(c->access_log);
		if (fd < 0) {
			fprintf(stderr, "fileserverd: access_log %s: %s\n",
			        c->access_log, strerror(-fd));
			return fd;
		}
		L.fd[LOG_ACCESS] = fd;
		if (strcmp(c->access_log, "-"))
			L.path[LOG_ACCESS] = strdup(c->access_log);
		L.access_on = true;
	}
	int r = pthread_create(&L.thread, NULL, writer, NULL);
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

int fsd_access_log_enabled(void)
{
	return L.access_on;
}

static const char *const level_names[] = {
	"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"
};

void fsd_vlog(int level, const char *fmt, va_list ap)
{
	char line[1024], ts[32];
	struct timespec now;
	struct tm tm;
	int n, m;

	if (level > L.level)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
	n = snprintf(line, sizeof line, "%s [%s] ", ts,
	             level_names[level < 0 ? 0 : level > 7 ? 7 : level]);
	m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';

	struct chunk *c = malloc(sizeof *c + (size_t)n);
	if (!c)
		return;
	c->which = LOG_ERROR;
	c->len = (size_t)n;
	memcpy(c->data, line, (size_t)n);
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

/* CLF quotes fields with "; escape quotes, backslashes and controls. */
static size_t put_quoted(char *o, size_t room, const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		s = "-";
	for (; *s && n + 4 < room; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			o[n++] = '\\';
			o[n++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			n += (size_t)snprintf(o + n, room - n, "\\x%02x", ch);
		} else
			o[n++] = (char)ch;
	}
	return n;
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
	n += put_quoted(line + n, room - n - 900, rq->method_str);
	line[n++] = ' ';
	n += put_quoted(line + n, room - n - 900, rq->uri);
	line[n++] = ' ';
	n += put_quoted(line + n, room - n - 900, rq->version);
	if (rq->body_len)
		n += (size_t)snprintf(line + n, room - n, "\" %u %llu \"",
		                      rq->status, (unsigned long long)rq->body_len);
	else
		n += (size_t)snprintf(line + n, room - n, "\" %u - \"", rq->status);
	n += put_quoted(line + n, room - n - 450, rq->h.referer);
	line[n++] = '"';
	line[n++] = ' ';
	line[n++] = '"';
	n += put_quoted(line + n, room - n - 4, rq->h.user_agent);
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
