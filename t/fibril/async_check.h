/* Shared by t/fibril/test_async*.c: a scratch directory and small
 * helpers. Each test program runs once per backend (see async.mk). */
#ifndef T_FIBRIL_ASYNC_CHECK_H
#define T_FIBRIL_ASYNC_CHECK_H

#include <check.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fibril/async.h"
#include "t/tmain.h"

static char tdir[64];
static int tdfd = -1;

/* DIR/file ("hello\n"), DIR/link -> file, DIR/sub/ */
static inline void tdir_make(void)
{
	strcpy(tdir, "/tmp/test_async.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tdir));
	tdfd = open(tdir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(tdfd, 0);
	int fd = openat(tdfd, "file", O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "hello\n", 6), 6);
	close(fd);
	ck_assert_int_eq(symlinkat("file", tdfd, "link"), 0);
	ck_assert_int_eq(mkdirat(tdfd, "sub", 0755), 0);
}

static inline void tdir_remove(void)
{
	if (tdfd < 0)
		return;
	unlinkat(tdfd, "link", 0);
	unlinkat(tdfd, "file", 0);
	unlinkat(tdfd, "wfile", 0);
	unlinkat(tdfd, "sub", AT_REMOVEDIR);
	close(tdfd);
	tdfd = -1;
	rmdir(tdir);
}

/* The backend this run expects: the suite runs once per backend. */
static inline const char *want_backend(void)
{
	const char *b = getenv("FIBRIL_BACKEND");
	return b && strcmp(b, "threads") == 0 ? "threads" : "uring";
}

/* Drives @e outside any wait until *res no longer holds @cookie. */
static inline void drive_until(async_engine_t *e, const long *res, long cookie)
{
	for (int i = 0; i < 100000 && *res == cookie; i++) {
		struct pollfd p = { async_engine_fd(e), POLLIN, 0 };
		ck_assert_int_ge(async_engine_process(e, 0), 0);
		if (*res != cookie)
			break;
		int t = async_engine_timeout_ms(e);
		poll(&p, 1, t < 0 ? 100 : t);
	}
}

#endif
