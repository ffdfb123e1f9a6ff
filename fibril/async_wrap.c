/*
 * Blocking-style calls for fibril code: request code reads linearly and
 * parks only when a call is really pending.
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>

#include "fibril/async_int.h"

#define A(x) ((unsigned long)(x))

static long async__call(long call, const unsigned long *args)
{
	async_engine_t *e = async__cur;
	long res;
	long c;

	if (!e)
		return async__exec(call, args);
	/* Most calls of a fibril on a local file system end here: no op,
	 * no submit (an open+fstat+close costs its three system calls and
	 * little more). */
	if (async__run_inline(e, call, args, &res))
		return res;
	c = async_submit(ASYNC_F_NOINLINE, &res, call, args);
	if (c == -ENXIO)  /* engine being torn down */
		return async__exec(call, args);
	if (c < 0)
		return c;
	if (c == 0)
		return res;
	return wait_for_async(c);
}

FIBRIL_API long fibril_openat2(int dirfd, const char *path,
                               const struct open_how *how)
{
	const unsigned long a[] = { A((long)dirfd), A(path), A(how), sizeof(*how) };
	return async__call(ASYNC_OPENAT2, a);
}

FIBRIL_API long fibril_statx(int dirfd, const char *path, int flags,
                             unsigned mask, struct statx *buf)
{
	const unsigned long a[] = { A((long)dirfd), A(path), A((long)flags),
	                            A(mask), A(buf) };
	return async__call(ASYNC_STATX, a);
}

FIBRIL_API long fibril_close(int fd)
{
	const unsigned long a[] = { A((long)fd) };
	return async__call(ASYNC_CLOSE, a);
}

FIBRIL_API long fibril_read(int fd, void *buf, size_t count)
{
	const unsigned long a[] = { A((long)fd), A(buf), A(count) };
	return async__call(ASYNC_READ, a);
}

FIBRIL_API long fibril_pread(int fd, void *buf, size_t count, int64_t offset)
{
	const unsigned long a[] = { A((long)fd), A(buf), A(count), A(offset) };
	return async__call(ASYNC_PREAD, a);
}

FIBRIL_API long fibril_write(int fd, const void *buf, size_t count)
{
	const unsigned long a[] = { A((long)fd), A(buf), A(count) };
	return async__call(ASYNC_WRITE, a);
}

FIBRIL_API long fibril_pwrite(int fd, const void *buf, size_t count,
                              int64_t offset)
{
	const unsigned long a[] = { A((long)fd), A(buf), A(count), A(offset) };
	return async__call(ASYNC_PWRITE, a);
}

FIBRIL_API long fibril_getdents64(int fd, void *buf, size_t count)
{
	const unsigned long a[] = { A((long)fd), A(buf), A(count) };
	return async__call(ASYNC_GETDENTS64, a);
}

FIBRIL_API long fibril_readlinkat(int dirfd, const char *path, char *buf,
                                  size_t bufsiz)
{
	const unsigned long a[] = { A((long)dirfd), A(path), A(buf), A(bufsiz) };
	return async__call(ASYNC_READLINKAT, a);
}

FIBRIL_API long fibril_fsync(int fd, int datasync)
{
	const unsigned long a[] = { A((long)fd), A(datasync ? 1 : 0) };
	return async__call(ASYNC_FSYNC, a);
}

FIBRIL_API long fibril_fadvise(int fd, int64_t offset, int64_t len, int advice)
{
	const unsigned long a[] = { A((long)fd), A(offset), A(len), A((long)advice) };
	return async__call(ASYNC_FADVISE, a);
}

FIBRIL_API long fibril_call(long (*fn)(void *arg), void *arg)
{
	const unsigned long a[] = { A(fn), A(arg) };
	return async__call(ASYNC_CALL, a);
}

FIBRIL_API long async_stat(int dirfd, const char *path, struct statx *buf,
                           long *result)
{
	const unsigned long a[] = { A((long)dirfd), A(path),
	                            A(AT_SYMLINK_NOFOLLOW), A(STATX_BASIC_STATS),
	                            A(buf) };
	return async_submit(0, result, ASYNC_STATX, a);
}
