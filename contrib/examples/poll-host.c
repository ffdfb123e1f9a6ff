/*
 * Hosting libfibril in a plain poll() loop, without libevent: what an
 * embedder with its own event loop does. The engine contributes one fd
 * and a timeout; the loop polls it beside its own fds and then calls
 * async_engine_process() and fibril_sched_run().
 *
 *   poll-host [DIR]   runs 64 request fibrils over the regular files of
 *                     DIR (default: a scratch directory it makes), each
 *                     opening, stat-ing and reading one file; plus
 *                     callback-style stats (async_submit_cb) and a timed
 *                     park. Exit 0 when every result checks out.
 */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fibril/async.h"
#include "fibril/fibril.h"

#define NREQ 64

static int dfd;
static char names[NREQ][256];
static int nnames;
static int notify[2];      /* the loop's own fd: fibrils report here */
static int failures;
static int reports;

/* A request: plain linear code, asynchronous underneath. */
static void request(void *arg)
{
	long i = (long)arg;
	const char *name = names[i % nnames];
	struct open_how how = { .flags = O_RDONLY, .resolve = RESOLVE_BENEATH };
	struct statx sb, ref;
	char buf[512];

	long fd = fibril_openat2(dfd, name, &how);
	if (fd < 0) {
		fprintf(stderr, "%s: openat2: %s\n", name, strerror((int)-fd));
		failures++;
		return;
	}
	long rc = fibril_statx((int)fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sb);
	long got = rc == 0 ? fibril_pread((int)fd, buf, sizeof(buf), 0) : rc;
	fibril_close((int)fd);
	if (statx(dfd, name, 0, STATX_BASIC_STATS, &ref) != 0 || rc != 0 ||
	    sb.stx_ino != ref.stx_ino ||
	    got != (long)(ref.stx_size < sizeof(buf) ? ref.stx_size : sizeof(buf))) {
		fprintf(stderr, "%s: statx %ld read %ld\n", name, rc, got);
		failures++;
	}
	/* Report through the loop's own fd, asynchronously too. */
	char c = 'r';
	if (fibril_write(notify[1], &c, 1) != 1)
		failures++;
}

/* A timed park: the loop must honour fibril_sched_timeout_ms(). */
static void sleeper(void *arg)
{
	(void)arg;
	uint64_t t0 = fibril_now_ns();
	if (fibril_park_until(t0 + 20 * 1000000ull) != -ETIMEDOUT ||
	    fibril_now_ns() < t0 + 20 * 1000000ull) {
		fprintf(stderr, "sleeper: woke early\n");
		failures++;
	}
}

/* Callback style, for code that is not a fibril. */
static struct statx cb_buf[NREQ];
static long cb_res[NREQ];
static int cb_done;

static void on_stat(void *arg, long res)
{
	long i = (long)arg;
	if (res != 0 || cb_res[i] != res) {
		fprintf(stderr, "callback %ld: %ld\n", i, res);
		failures++;
	}
	cb_done++;
}

static int min_timeout(int a, int b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

static void scratch(char *dir, int make)
{
	char name[32];
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "file%02d", i);
		if (make) {
			int f = openat(fd, name, O_CREAT | O_WRONLY, 0644);
			for (int k = 0; k < i * 50; k++)
				if (write(f, "x", 1) != 1)
					break;
			close(f);
		} else {
			unlinkat(fd, name, 0);
		}
	}
	close(fd);
	if (!make)
		rmdir(dir);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/poll-host.XXXXXX";
	const char *path = argc > 1 ? argv[1] : dir;
	async_engine_t *e;
	int submitted_cb = 0;

	if (argc < 2) {
		if (!mkdtemp(dir))
			return 1;
		scratch(dir, 1);
	}
	dfd = open(path, O_RDONLY | O_DIRECTORY);
	DIR *d = fdopendir(dup(dfd));
	struct dirent *de;
	while (d && nnames < NREQ && (de = readdir(d)) != NULL)
		if (de->d_type == DT_REG)
			snprintf(names[nnames++], sizeof(names[0]), "%s", de->d_name);
	if (d)
		closedir(d);
	if (nnames == 0 || pipe(notify) != 0) {
		fprintf(stderr, "poll-host: no regular files in %s\n", path);
		return 1;
	}

	if (fibril_sched_init(NULL) < 0 || async_engine_create(NULL, &e) < 0)
		return 1;
	for (long i = 0; i < NREQ; i++)
		fibril_create(NULL, request, (void *)i, "request");
	fibril_create(NULL, sleeper, NULL, "sleeper");
	for (long i = 0; i < NREQ; i++) {
		unsigned long a[5] = { (unsigned long)(long)dfd,
		                       (unsigned long)names[i % nnames],
		                       AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS,
		                       (unsigned long)&cb_buf[i] };
		long c = async_submit_cb(0, &cb_res[i], ASYNC_STATX, a, on_stat,
		                         (void *)i);
		if (c < 0)
			failures++;
		else if (c == 0)
			cb_done++;  /* completed inline: no callback comes */
		submitted_cb++;
	}

	/* ---- the host loop ---- */
	while (fibril_sched_count() > 0 || async_engine_inflight(e) > 0 ||
	       cb_done < submitted_cb) {
		struct pollfd pfd[2] = {
			{ .fd = async_engine_fd(e), .events = POLLIN },
			{ .fd = notify[0], .events = POLLIN },
		};
		int t = min_timeout(async_engine_timeout_ms(e),
		                    fibril_sched_timeout_ms());
		if (poll(pfd, 2, t) < 0 && errno != EINTR)
			return 1;
		if (pfd[1].revents & POLLIN) {
			char buf[NREQ];
			ssize_t n = read(notify[0], buf, sizeof(buf));
			reports += n > 0 ? (int)n : 0;
		}
		async_engine_process(e, 64);
		fibril_sched_run();
	}
	char buf[NREQ];
	ssize_t n;
	fcntl(notify[0], F_SETFL, O_NONBLOCK);
	while ((n = read(notify[0], buf, sizeof(buf))) > 0)
		reports += (int)n;

	async_engine_destroy(e);
	fibril_sched_fini();
	close(dfd);
	if (argc < 2)
		scratch(dir, 0);
	printf("poll-host: %d requests reported, %d callbacks, %d failures\n",
	       reports, cb_done, failures);
	return failures || reports != NREQ || cb_done != NREQ ? 1 : 0;
}
