/*
 * Whether a file's bytes are in the page cache, asked without blocking:
 * the loop may then send them (sendfile, or a copy from a mapping)
 * without waiting for the disk.
 */
#include "first.h"

#include "daemon/resident.h"

#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451      /* Linux 6.5, same number on every arch */
#endif
struct fsd_cachestat_range { uint64_t off, len; };
struct fsd_cachestat { uint64_t nr_cache, nr_dirty, nr_writeback,
                       nr_evicted, nr_recently_evicted; };

bool fsd_resident(int fd, uint64_t off, uint64_t len)
{
	static _Atomic int have_cachestat = 1;
	struct fsd_cachestat_range r = { off, len };
	struct fsd_cachestat cs;

	if (!len)
		return true;
	if (have_cachestat) {
		/* Counts pages over the whole range without touching them. */
		uint64_t first = off / 4096, last = (off + len - 1) / 4096;
		if (syscall(__NR_cachestat, fd, &r, &cs, 0) == 0)
			return cs.nr_cache >= last - first + 1;
		if (errno == ENOSYS)
			have_cachestat = 0;
	}
	/* Older kernels: probe the first and last byte without blocking. */
	char b;
	struct iovec iov = { &b, 1 };
	return preadv2(fd, &iov, 1, (off_t)off, RWF_NOWAIT) == 1 &&
	       preadv2(fd, &iov, 1, (off_t)(off + len - 1), RWF_NOWAIT) == 1;
}
