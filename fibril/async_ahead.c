/*
 * The engine's one policy of its own on what callers submit: runs of
 * statx calls in one directory. A readdir-then-stat loop (ls -l, a
 * listing without the lookup engine) submits a statx relative to its
 * directory fd for each name it reads. Two things follow from seeing
 * such a run:
 *
 * Read-ahead. On a cold directory the loop's own readdir blocks on each
 * directory block (ext4 htree: ~540 disk reads for 100,000 names) while
 * the workers that stat run dry: measured, a CPU went idle after ~300
 * of these waits. A pool thread reading the same directory ahead,
 * through a descriptor of its own, takes those waits instead (the
 * loop's fell to ~23 per pass). async_own.c opens the descriptor and
 * queues the read (async__ahead_read, on a pool thread). The read never
 * touches the caller's descriptor or position, and the caller sees no
 * op of it (not even in async_engine_inflight()).
 *
 * Batches. On a local file system the rest of the run's stats go to a
 * pool thread in batches (async_batch.c) rather than one io_uring
 * request each: a cached statx costs ~1 us, and the ring charges the
 * submitting thread about as much again (perf: submitting, then running
 * each completion's task work and freeing its path name), which would
 * leave the loop no faster than plain statx calls on one CPU.
 *
 * This file only counts and decides.
 */
#include "first.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fibril/async_int.h"
#include "fibril/async_mnt.h"

/* A run this long of statx calls relative to one dirfd, all still
 * pending, is a readdir loop stat-ing every entry: short enough to help
 * a large directory early, long enough that a handful of stats in one
 * directory never pays a second open and read. */
#define ASYNC__AHEAD_RUN 256u
/* Batching starts sooner: it costs nothing when the run stops short. */
#define ASYNC__BATCH_RUN 32u

/* The run is over once nothing of it is pending: a next directory,
 * even one that gets the same descriptor number, starts afresh. */
void async__ahead_reset(struct async__owner *o)
{
	o->scan_dfd = -1;
	o->scan_run = 0;
	o->scan_ahead = false;
	o->scan_local = -1;
}

unsigned async__run_note(struct async__owner *o, long call,
			 const unsigned long *args)
{
	/* Only a path relative to a directory fd says "entry of that
	 * directory"; an absolute path or an fd of its own does not. */
	if (call != ASYNC_STATX || !o || (long)args[0] < 0 || !args[1] ||
	    ((const char *)args[1])[0] == '/')
		return 0;
	long dfd = (long)args[0];
	if (dfd != o->scan_dfd) {
		async__ahead_reset(o);
		o->scan_dfd = dfd;
	}
	unsigned todo = 0;
	o->scan_run++;
	if (o->scan_run >= ASYNC__BATCH_RUN && o->pending >= ASYNC__BATCH_RUN) {
		/* Asked once a run: a statx of the directory. FUSE, NFS and
		 * the unknown keep one ring request per stat, dozens of
		 * round trips at once (docs/DESIGN.md, "io-wq worker
		 * limits"). */
		if (o->scan_local < 0)
			o->scan_local = async__fd_local((int)dfd) == 1;
		if (o->scan_local)
			todo |= ASYNC__RUN_BATCH;
	}
	if (o->scan_run >= ASYNC__AHEAD_RUN && !o->scan_ahead &&
	    o->pending >= ASYNC__AHEAD_RUN) {
		o->scan_ahead = true;
		todo |= ASYNC__RUN_AHEAD;
	}
	return todo;
}

/* Stops as soon as one call read nothing from the disk (its own
 * ru_inblock did not move): the rest is cached, or the caller's readdir
 * has caught up. So a cached directory costs one getdents64 of 64 KiB. */
long async__ahead_read(int fd)
{
	enum { BUF = 64 * 1024 };
	char *buf = malloc(BUF);
	struct rusage before, after;
	long n = 0;

	while (buf) {
		if (getrusage(RUSAGE_THREAD, &before) != 0)
			break;
		long r = syscall(SYS_getdents64, fd, buf, (size_t)BUF);
		if (r <= 0 || getrusage(RUSAGE_THREAD, &after) != 0)
			break;
		n += r;
		if (after.ru_inblock == before.ru_inblock)
			break;
	}
	free(buf);
	close(fd);
	return n;
}
