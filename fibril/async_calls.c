/*
 * The async call table: which system calls may be submitted, with the
 * rules each follows (docs/DESIGN.md, "The async contract"), the
 * plain system calls behind each entry, and the inline fast paths.
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fibril/async_int.h"
#include "fibril/async_cred.h"
#include "fibril/async_mnt.h"

#define L(i) (1u << (i))

static const struct async_call_info async__table[ASYNC_CALL_MAX] = {
	[ASYNC_NOP]        = { "nop",        0, 0 },
	[ASYNC_OPENAT2]    = { "openat2",    4, L(1) | L(2) },
	[ASYNC_STATX]      = { "statx",      5, L(1) | L(4) },
	[ASYNC_CLOSE]      = { "close",      1, 0 },
	[ASYNC_READ]       = { "read",       3, L(1) },
	[ASYNC_PREAD]      = { "pread",      4, L(1) },
	[ASYNC_WRITE]      = { "write",      3, L(1) },
	[ASYNC_PWRITE]     = { "pwrite",     4, L(1) },
	[ASYNC_GETDENTS64] = { "getdents64", 3, L(1) },
	[ASYNC_READLINKAT] = { "readlinkat", 4, L(1) | L(2) },
	[ASYNC_FSYNC]      = { "fsync",      2, 0 },
	[ASYNC_FADVISE]    = { "fadvise",    4, 0 },
	[ASYNC_CALL]       = { "call",       2, L(1) },
};

FIBRIL_API const struct async_call_info *async_call_info(long call)
{
	if (call < 0 || call >= ASYNC_CALL_MAX)
		return NULL;
	return &async__table[call];
}

static long async__ret(long r)
{
	return r < 0 ? -errno : r;
}

long async__exec_plain(long call, const unsigned long *a)
{
	switch (call) {
	case ASYNC_NOP:
		return 0;
	case ASYNC_OPENAT2: {
		long fd = async__ret(syscall(SYS_openat2, (int)a[0],
		                             (const char *)a[1], (void *)a[2],
		                             (size_t)a[3]));
		async__fd_forget(fd);
		return fd;
	}
	case ASYNC_STATX:
		return async__ret(syscall(SYS_statx, (int)a[0], (const char *)a[1],
		                      (int)a[2], (unsigned)a[3], (void *)a[4]));
	case ASYNC_CLOSE:
		async__fd_forget((long)a[0]);
		return async__ret(close((int)a[0]));
	case ASYNC_READ:
		return async__ret(read((int)a[0], (void *)a[1], (size_t)a[2]));
	case ASYNC_PREAD:
		return async__ret(pread((int)a[0], (void *)a[1], (size_t)a[2],
		                    (off_t)a[3]));
	case ASYNC_WRITE:
		return async__ret(write((int)a[0], (const void *)a[1], (size_t)a[2]));
	case ASYNC_PWRITE:
		return async__ret(pwrite((int)a[0], (const void *)a[1], (size_t)a[2],
		                     (off_t)a[3]));
	case ASYNC_GETDENTS64:
		return async__ret(syscall(SYS_getdents64, (int)a[0], (void *)a[1],
		                      (size_t)a[2]));
	case ASYNC_READLINKAT:
		return async__ret(readlinkat((int)a[0], (const char *)a[1],
		                         (char *)a[2], (size_t)a[3]));
	case ASYNC_FSYNC:
		return async__ret(a[1] ? fdatasync((int)a[0]) : fsync((int)a[0]));
	case ASYNC_FADVISE:
		/* posix_fadvise returns the error number instead of setting errno */
		return -(long)posix_fadvise((int)a[0], (off_t)a[1], (off_t)a[2],
		                            (int)a[3]);
	case ASYNC_CALL:
	case ASYNC__CALL_BATCH:
		return ((long (*)(void *))a[0])((void *)a[1]);
	case ASYNC__CALL_DIR_AHEAD:
		return async__ahead_read((int)a[0]);
	default:
		return -ENOSYS;
	}
}

/* Calls that check permissions by path; the rest act on an open fd
 * (or are the engine's own) and run as they are. */
static bool async__cred_matters(long call)
{
	return call == ASYNC_OPENAT2 || call == ASYNC_STATX ||
	       call == ASYNC_READLINKAT || call == ASYNC_CALL;
}

long async__exec_as(const struct async__cred *c, long call, const unsigned long *args)
{
	if (!c || !async__cred_matters(call))
		return async__exec_plain(call, args);
	struct async__cred_saved s;
	int rc = async__cred_push(c, &s);
	if (rc < 0)
		return rc;
	long r = async__exec_plain(call, args);
	if (rc)
		async__cred_pop(&s);
	return r;
}

long async__exec(long call, const unsigned long *a)
{
	return async__exec_as(async__cred_current(), call, a);
}

long async__exec_op(const struct async__op *op)
{
	return async__exec_as(op->cred, op->call, op->args);
}

/* openat2 with RESOLVE_CACHED: the kernel walks the path from the
 * dcache only and answers -EAGAIN instead of blocking. It always says
 * -EAGAIN for O_CREAT/O_TRUNC/O_TMPFILE (fs/open.c, build_open_flags),
 * so those skip the attempt. A cached walk does not make the open
 * itself cheap: it still calls the file system's ->open, a round trip
 * on FUSE or NFS. So, but for O_PATH (which calls no ->open), the try
 * is made only from a directory on a local mount and with
 * RESOLVE_NO_XDEV, which fails a walk that would cross into another
 * mount (-EXDEV: that one goes to a backend). Whether the directory is
 * local is asked once per descriptor (a statx, async_mnt.c); the file
 * opened is then known local too, so that its close asks nothing. */
static bool async__try_open_cached(const unsigned long *a, long *res)
{
	const struct open_how *how = (const struct open_how *)a[2];
	const char *path = (const char *)a[1];
	struct open_how h;

	if (a[3] != sizeof(h) || how == NULL || path == NULL)
		return false;
	memcpy(&h, how, sizeof(h));
	if (h.flags & (O_CREAT | O_TRUNC | __O_TMPFILE))
		return false;
	bool xdev_own = false;
	if (!(h.flags & O_PATH)) {
		if (path[0] == '/' || async__fd_local_remembered((int)a[0]) <= 0)
			return false;
		xdev_own = !(h.resolve & RESOLVE_NO_XDEV);
		h.resolve |= RESOLVE_NO_XDEV;
	}
	bool cached_own = !(h.resolve & RESOLVE_CACHED);
	h.resolve |= RESOLVE_CACHED;
	unsigned long long asked = h.flags;
	h.flags = async__open_nowait_flags(h.flags);
	long r = async__ret(syscall(SYS_openat2, (int)a[0], path, &h, sizeof(h)));
	if ((r == -EAGAIN && cached_own) || (r == -EXDEV && xdev_own))
		return false;
	if (async__open_nowait_refused(r, asked))
		return false;
	if (r >= 0 && async__open_nowait_keep((int)r, asked, 0)) {
		async__fd_forget(r);
		return false;
	}
	if (h.flags & O_PATH)
		async__fd_forget(r);     /* may be on another mount */
	else if (r >= 0)
		async__fd_note_local(r);
	*res = r;
	return true;
}

/* RWF_NOWAIT: served from the page cache or -EAGAIN, never blocks on
 * I/O; -EOPNOTSUPP where the file system cannot promise that. */
static bool async__try_read_nowait(const unsigned long *a, bool positional,
                               long *res)
{
	struct iovec iov = { (void *)a[1], (size_t)a[2] };
	off_t off = positional ? (off_t)a[3] : -1;
	long r = async__ret(preadv2((int)a[0], &iov, 1, off, RWF_NOWAIT));

	if (r == -EAGAIN || r == -EOPNOTSUPP)
		return false;
	*res = r;
	return true;
}

bool async__try_inline(long call, const unsigned long *a, long *res)
{
	switch (call) {
	case ASYNC_OPENAT2:
		/* Another user's open goes to a backend that runs it as that
		 * user, rather than switching this thread's ids for a try. */
		if (async__cred_current() && !async__cred_switched())
			return false;
		return async__try_open_cached(a, res);
	case ASYNC_STATX: {
		/* statx of an open fd: no path walk, and the open already
		 * revalidated the attributes on network file systems
		 * (close-to-open), so it is answered from the inode. */
		const char *p = (const char *)a[1];
		int fl = (int)a[2];
		if ((fl & AT_EMPTY_PATH) && (p == NULL || p[0] == '\0') &&
		    (fl & AT_STATX_SYNC_TYPE) != AT_STATX_FORCE_SYNC) {
			*res = async__exec(call, a);
			return true;
		}
		return false;
	}
	case ASYNC_CLOSE:
		/* Through the ring a local close would cost a round trip and
		 * a park for nothing; on FUSE, NFS or CIFS ->flush and
		 * ->release ask the server and go to a backend. */
		if (!async__fd_known_local((long)a[0]) &&
		    async__fd_local((int)a[0]) == 0)
			return false;
		*res = async__exec(call, a);
		return true;
	case ASYNC_READ:
		return async__try_read_nowait(a, false, res);
	case ASYNC_PREAD:
		return async__try_read_nowait(a, true, res);
	default:
		return false;
	}
}
