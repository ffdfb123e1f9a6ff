/* t/slowfs/dirops.c: make the kernel send slowfs parallel lookups.
 *
 * Without FUSE_PARALLEL_DIROPS in the INIT reply the kernel takes the
 * directory's mutex around every FUSE_LOOKUP (fs/fuse/dir.c
 * fuse_lookup -> fuse_lock_inode), so the first lookup of each name runs
 * one at a time whatever the caller's parallelism. libfuse before 3.16
 * (Debian 12 ships 3.14.0) never copies FUSE_CAP_PARALLEL_DIROPS from
 * conn->want into that reply (libfuse PR #861), so asking for it in
 * init() has no effect there. Measured here, 2,000 names at 1 ms per op
 * on a fresh mount, 64 concurrent stat(1): inflight_max 3 and 2.5 s;
 * revalidations of known names (no lock) reached 85 in flight.
 *
 * The fix sits in the transport: a custom io for the session that sees
 * the INIT request go by, and sets the flag in our INIT reply when the
 * kernel offered it. Newer libfuse sets it already; setting it twice is
 * harmless. slowfs serves every op from any thread (its node table is
 * locked), so parallel dirops are safe for it.
 */
#include "first.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/fuse.h>

#include "t/slowfs/dirops.h"

/* unique of the INIT request whose reply gets the flag (0: none). */
static _Atomic uint64_t init_unique;

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	ssize_t r = read(fd, buf, len);
	if (r >= (ssize_t)(sizeof(struct fuse_in_header) + sizeof(struct fuse_init_in))) {
		const struct fuse_in_header *h = buf;
		const struct fuse_init_in *in = (const void *)(h + 1);
		if (h->opcode == FUSE_INIT && (in->flags & FUSE_PARALLEL_DIROPS))
			atomic_store(&init_unique, h->unique);
	}
	return r;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	uint64_t u = atomic_load(&init_unique);
	if (u && count >= 2 && iov[0].iov_len == sizeof(struct fuse_out_header) &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
		const struct fuse_out_header *h = iov[0].iov_base;
		if (h->unique == u && h->error == 0) {
			struct fuse_init_out *out = iov[1].iov_base;
			out->flags |= FUSE_PARALLEL_DIROPS;
			atomic_store(&init_unique, 0);
		}
	}
	return writev(fd, iov, count);
}

int sfs_parallel_dirops(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = io_read,
		.writev = io_writev,
	};
	int fd = fuse_session_fd(se);
	if (fd < 0)
		return -EBADF;
	return fuse_session_custom_io(se, &io, fd);
}
