#include "first.h"

#include "daemon/fcache_int.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/mime.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <liburing.h>

#include <fibril/fibril.h>

/* A directory on an entry's path: a name appearing, going or changing
 * inode (create, delete, moves), and the directory's own attributes,
 * removal or move. Writes to files in it are the files' own watches'
 * business (any of their names, any directory). */
#define DIR_MASK  (IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE | \
                   IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
/* The cached file's inode, whatever name a change goes through: bytes,
 * size, mode, owner, link count, removal, rename. */
#define FILE_MASK (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | \
                   IN_MOVE_SELF)

/* A listed directory: its entries' writes and attribute changes too,
 * as reported through it (the name they change through is in it). */
#define LDIR_MASK (DIR_MASK | IN_MODIFY | IN_CLOSE_WRITE)
/* A listed entry's own inode: what FILE_MASK sees (through any name,
 * hard links elsewhere included), and for a directory its entries
 * coming and going, which change its mtime and size. A symlink is
 * watched itself. */
#define ENTRY_MASK (FILE_MASK | IN_CREATE | IN_DELETE | IN_MOVED_FROM | \
                    IN_MOVED_TO | IN_DONT_FOLLOW)

enum { TAG_INOTIFY = 1, TAG_MOUNTS = 2 };

/* Unused watches within the budget are removed at most this many per
 * FCW_REAP_GAP_NS: each costs the worker ~1 us, and as much again for
 * its IN_IGNORED event read back. Removed 1,024 per fcw_sync() instead,
 * the 100,000 a dropped listing leaves all went during the scan that
 * followed the change (its results come back over hundreds of loop
 * passes, each one syncing), which took 0.36 s against 0.18 s; paced
 * every 20 ms, 0.20 s; every 100 ms, 0.19 s (about 1% of the worker).
 * A fill soon after takes up those still held. */
#define FCW_REAP 1024u
#define FCW_REAP_GAP_NS 100000000u

struct fcw {
	struct fcw *hnext;
	int wd;
	bool unused;                    /* on the unused list */
	struct fcw *unext;
	struct fcw_dep *deps;           /* empty: on the unused list */
};

struct fcw_state {
	int ifd;                        /* inotify */
	int mfd;                        /* /proc/self/mountinfo: POLLPRI on a mount change */
	struct fcw **bucket;            /* by wd */
	size_t nbuckets;                /* power of two */
	unsigned n, budget;
	unsigned users;                 /* fcw_init() calls not yet finished */
	unsigned long epoch;            /* fcw_sync() returned 1 this many times */
	fcw_fire_fn fire;
	unsigned foreign;               /* fcw_foreign_begin() not yet ended */
	unsigned long foreign_events;   /* events on unknown descriptors meanwhile */
	struct fcw *unused;             /* without dependents, to remove (and
	                                 * those linked again since: skipped) */
	unsigned nunused;               /* listed and without dependents */
	uint64_t reaped_ns;             /* the last paced removal */
	bool ring_ok;                   /* ifd's and mfd's readiness is watched by ring */
	struct io_uring ring;           /* two multishot polls, nothing else */
};

static __thread struct fcw_state *ws;

static size_t slot_of(int wd)
{
	return ((unsigned)wd * 2654435761u) & (ws->nbuckets - 1);
}

static struct fcw *find(int wd)
{
	for (struct fcw *w = ws->bucket[slot_of(wd)]; w; w = w->hnext)
		if (w->wd == wd)
			return w;
	return NULL;
}

static void grow(void)
{
	size_t old = ws->nbuckets;
	struct fcw **ob = ws->bucket, **nb = calloc(old * 2, sizeof *nb);

	if (!nb)
		return;         /* longer chains, still right */
	ws->bucket = nb;
	ws->nbuckets = old * 2;
	for (size_t i = 0; i < old; i++)
		for (struct fcw *w = ob[i], *nx; w; w = nx) {
			nx = w->hnext;
			w->hnext = nb[slot_of(w->wd)];
			nb[slot_of(w->wd)] = w;
		}
	free(ob);
}

/* ---- readiness without a system call ----
 *
 * A multishot poll on the inotify fd, and one on /proc/self/mountinfo,
 * live in a small io_uring of our own, set up without
 * IORING_SETUP_DEFER_TASKRUN. When a change queues an inotify event, or
 * a mount or unmount changes the namespace's table, the system call
 * making it wakes the poll before it returns; the wake-up queues task
 * work on this worker thread (TIF_NOTIFY_SIGNAL), which the kernel runs,
 * posting the CQE, before this thread next returns to user space from
 * any system call. The recv() that read a request returned after the
 * change did (the client saw the change return before it sent the
 * request), so by the time the request is served the CQE is in the CQ:
 * reading the CQ tail from memory is enough. Without the ring (io_uring
 * off, or a poll error) every sync polls both fds.
 */
static bool ring_arm(int tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ws->ring);

	if (!sqe)
		return false;
	io_uring_prep_poll_multishot(sqe, tag == TAG_INOTIFY ? ws->ifd : ws->mfd,
	                             tag == TAG_INOTIFY ? POLLIN : POLLPRI);
	io_uring_sqe_set_data64(sqe, (uint64_t)tag);
	return io_uring_submit(&ws->ring) == 1;
}

static void ring_off(void)
{
	if (ws->ring_ok)
		io_uring_queue_exit(&ws->ring);
	ws->ring_ok = false;
}

static void ring_init(void)
{
	/* COOP_TASKRUN: no IPI for the wake-up; the task work still runs on
	 * this thread's next return from the kernel, which is all we need. */
	if (io_uring_queue_init(4, &ws->ring, IORING_SETUP_COOP_TASKRUN) < 0 &&
	    io_uring_queue_init(4, &ws->ring, 0) < 0)
		return;
	ws->ring_ok = true;
	if (!ring_arm(TAG_INOTIFY) || !ring_arm(TAG_MOUNTS))
		ring_off();
}

int fcw_init(unsigned budget, fcw_fire_fn fire)
{
	int e;

	if (ws) {
		ws->users++;
		if (!ws->fire)
			ws->fire = fire;
		return 0;
	}
	ws = calloc(1, sizeof *ws);
	if (!ws)
		return -ENOMEM;
	ws->budget = budget;
	ws->users = 1;
	ws->fire = fire;
	ws->nbuckets = 256;
	ws->bucket = calloc(ws->nbuckets, sizeof *ws->bucket);
	ws->ifd = ws->mfd = -1;
	if (!ws->bucket) {
		e = ENOMEM;
		goto fail;
	}
	ws->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ws->ifd < 0) {
		e = errno;
		goto fail;
	}
	/* A mount over a watched directory or file reports nothing to
	 * inotify: without the mount table's change events, no cache. */
	ws->mfd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (ws->mfd < 0) {
		e = errno;
		goto fail;
	}
	ring_init();
	return 0;
fail:
	if (ws->ifd >= 0)
		close(ws->ifd);
	free(ws->bucket);
	free(ws);
	ws = NULL;
	return -e;
}

void fcw_fini(void)
{
	if (!ws || --ws->users)
		return;
	ring_off();
	for (size_t i = 0; i < ws->nbuckets; i++)
		for (struct fcw *w = ws->bucket[i], *nx; w; w = nx) {
			nx = w->hnext;
			free(w);
		}
	close(ws->ifd);
	close(ws->mfd);
	free(ws->bucket);
	free(ws);
	ws = NULL;
}

unsigned fcw_count(void)
{
	return ws ? ws->n - ws->nunused : 0;
}

unsigned fcw_budget(void)
{
	return ws ? ws->budget : 0;
}

unsigned fcw_default_budget(void)
{
	unsigned long max = 8192;
	unsigned workers = fsd->conf.workers ? fsd->conf.workers : 1;
	FILE *f;

	if (fsd->conf.fcache_watches)
		return fsd->conf.fcache_watches;
	if ((f = fopen("/proc/sys/fs/inotify/max_user_watches", "re"))) {
		if (fscanf(f, "%lu", &max) != 1)
			max = 8192;
		fclose(f);
	}
	max = max / 2 / workers;
	return max < 1 ? 1 : max > (1u << 20) ? (1u << 20) : (unsigned)max;
}

unsigned long fcw_epoch(void)
{
	return ws ? ws->epoch : 0;
}

/* Names compare byte for byte here: a directory whose lookups fold case
 * would let a request name and an event name differ for the same file.
 * Such directories are not cached beneath. A directory can only be made
 * casefolded while empty, so the answer holds while we watch it (it
 * holds the next component of every entry that depends on it). */
static bool casefolded(int fd)
{
	int fl = 0;

	if (ioctl(fd, FS_IOC_GETFLAGS, &fl) < 0)
		return !(errno == ENOTTY || errno == EOPNOTSUPP || errno == EINVAL);
	return fl & FS_CASEFOLD_FL;
}

static void link_dep(struct fcw *w, struct fcw_dep *d)
{
	if (!w->deps && w->unused)
		ws->nunused--;          /* taken up again (stays listed) */
	d->w = w;
	d->prev = NULL;
	d->next = w->deps;
	if (w->deps)
		w->deps->prev = d;
	w->deps = d;
}

/* Links @d to the watch of @path (@mask added to what the inode is
 * watched for already: the caches watch the same inodes for different
 * events, and a watch is one per inode). */
static void reap(unsigned max);
static void add_unused(struct fcw *w);

/* A new watch @wd in the table, without dependents yet. NULL: out of
 * memory. */
static struct fcw *insert(int wd)
{
	struct fcw *w = calloc(1, sizeof *w);

	if (!w)
		return NULL;
	w->wd = wd;
	w->hnext = ws->bucket[slot_of(wd)];
	ws->bucket[slot_of(wd)] = w;
	if (++ws->n > ws->nbuckets)
		grow();
	return w;
}

static int watch_path(const char *path, uint32_t mask, int casefold_fd,
                      struct fcw_dep *d)
{
	struct fcw *w;
	int wd;

	wd = inotify_add_watch(ws->ifd, path, mask | IN_MASK_ADD);
	if (wd < 0 && errno == ENOSPC && ws->unused && !ws->foreign) {
		reap(FCW_REAP);         /* the kernel's watches held unused */
		wd = inotify_add_watch(ws->ifd, path, mask | IN_MASK_ADD);
	}
	if (wd < 0)
		return errno == ENOSPC || errno == ENOMEM ? -ENOSPC : -errno;
	w = find(wd);
	if (w && !w->deps && ws->n - ws->nunused >= ws->budget)
		return -ENOSPC;         /* an unused one counts again once linked */
	if (!w) {
		int r = 0;
		if (ws->n - ws->nunused >= ws->budget)
			r = -ENOSPC;
		else if (casefold_fd >= 0 && casefolded(casefold_fd))
			r = -EMEDIUMTYPE;
		w = insert(wd);
		if (!w && !r)
			r = -ENOMEM;
		if (r < 0) {
			/* (removed the way unused ones are: another thread
			 * may have been handed this descriptor) */
			if (w)
				add_unused(w);
			else if (!ws->foreign)
				inotify_rm_watch(ws->ifd, wd);
			return r;
		}
	}
	link_dep(w, d);
	return 0;
}

int fcw_watch(int fd, bool dir, struct fcw_dep *d)
{
	char path[40];

	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	/* the magic link is followed to the inode open as fd: no second
	 * lookup of the name, so no room for a swap in between */
	return watch_path(path, dir ? DIR_MASK : FILE_MASK, dir ? fd : -1, d);
}

int fcw_add_listing_watch(int ifd, int dirfd)
{
	char path[40];

	snprintf(path, sizeof path, "/proc/self/fd/%d", dirfd);
	int wd = inotify_add_watch(ifd, path, LDIR_MASK | IN_MASK_ADD);
	if (wd < 0)
		return errno == ENOSPC || errno == ENOMEM ? -ENOSPC : -errno;
	return wd;
}

int fcw_ifd(void)
{
	return ws ? ws->ifd : -EBADF;
}

int fcw_add_entry_watch(int ifd, int dirfd, const char *name)
{
	char path[40 + 256];

	if (dirfd != AT_FDCWD &&
	    snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dirfd, name) >= (int)sizeof path)
		return -ENAMETOOLONG;
	int wd = inotify_add_watch(ifd, dirfd == AT_FDCWD ? name : path, ENTRY_MASK | IN_MASK_ADD);
	if (wd < 0)
		return errno == ENOSPC || errno == ENOMEM ? -ENOSPC : -errno;
	return wd;
}

/* ---- watches added on another thread ----
 *
 * inotify_add_watch() hands out the descriptor of the watch the inode
 * has already, if any. Were a watch removed here while another thread
 * adds watches, that thread could be handed the descriptor just before
 * the removal and link to a watch that no longer reports anything:
 * removals wait. And an event read here before the new descriptor is
 * linked finds no watch: it is counted, so that whoever is adding
 * watches learns that something happened to one of them.
 */
void fcw_foreign_begin(void)
{
	if (ws)
		ws->foreign++;
}

static void rm_watch(struct fcw *w)
{
	inotify_rm_watch(ws->ifd, w->wd);
	for (struct fcw **pp = &ws->bucket[slot_of(w->wd)]; *pp; pp = &(*pp)->hnext)
		if (*pp == w) {
			*pp = w->hnext;
			break;
		}
	ws->n--;
	free(w);
}

void fcw_foreign_end(void)
{
	if (ws && ws->foreign)
		ws->foreign--;
}

/* Removes up to @max watches left without dependents (none while
 * foreign watches are added). A cached listing of 100,000 entries that
 * goes leaves as many watches: removed at once they would hold up the
 * worker for 0.1 s, and their 100,000 IN_IGNORED events would overflow
 * the queue (16,384 events by default), which empties every cache. */
/* Removed by fcw_sync(), a few at a time; linked again if its inode
 * is watched again meanwhile. */
static void add_unused(struct fcw *w)
{
	if (w->unused) {
		ws->nunused++;          /* still listed: unused again */
		return;
	}
	w->unused = true;
	w->unext = ws->unused;
	ws->unused = w;
	ws->nunused++;
}

static void reap(unsigned max)
{
	struct fcw *w;

	while (!ws->foreign && max && (w = ws->unused)) {
		ws->unused = w->unext;
		w->unused = false;
		if (!w->deps) {
			ws->nunused--;
			rm_watch(w);
			max--;
		}
	}
}

unsigned fcw_unused(void)
{
	return ws ? ws->nunused : 0;
}

unsigned long fcw_foreign_events(void)
{
	return ws ? ws->foreign_events : 0;
}

int fcw_link(int wd, struct fcw_dep *d)
{
	struct fcw *w = find(wd);

	if (!w && !(w = insert(wd)))
		return -ENOMEM;
	link_dep(w, d);
	return 0;
}

void fcw_unwatch(struct fcw_dep *d)
{
	struct fcw *w = d->w;

	if (!w)
		return;
	if (d->prev)
		d->prev->next = d->next;
	else
		w->deps = d->next;
	if (d->next)
		d->next->prev = d->prev;
	d->w = NULL;
	if (!w->deps)
		add_unused(w);
}

/* Is @name the component @d depends on (or, in the file's directory,
 * one of its sidecars: an entry that answers Accept-Encoding requests
 * must go when one appears)? */
static bool names(const struct fcw_dep *d, const char *name)
{
	size_t nl = strlen(name);

	if (nl < d->len || memcmp(name, d->name, d->len))
		return false;
	if (nl == d->len)
		return true;
	if (!d->sidecars)
		return false;
	for (size_t i = 0; i < FSD_NSIDECARS; i++)
		if (!strcmp(name + d->len, fsd_sidecars[i].ext))
			return true;
	return false;
}

/* The event being handed to fire() (fcw_event()). */
static __thread uint32_t ev_mask;
static __thread const char *ev_name;

void fcw_event(uint32_t *mask, const char **name)
{
	*mask = ev_mask;
	*name = ev_name;
}

/* @name NULL: an event on the watched inode itself (a file's watch
 * reports only those), which every dependent cares about. */
static void on_event(int wd, uint32_t mask, const char *name)
{
	struct fcw *w = find(wd);

	if (!w) {
		/* A watch we already let go (IN_IGNORED once removed), or
		 * one added on another thread and not linked yet: a change
		 * to its inode comes as an event of its own before any
		 * IN_IGNORED. */
		if (ws->foreign && !(mask & IN_IGNORED))
			ws->foreign_events++;
		return;
	}
	ev_mask = mask;
	ev_name = name;
	for (struct fcw_dep *d = w->deps; d; d = d->next)
		if (!name || !d->name || names(d, name))
			(d->fire ? d->fire : ws->fire)(d);
	ev_name = NULL;
}

/* Reads every queued event (one read returning EAGAIN when none).
 * Returns 1 when everything must go: an overflow, or a failed read. */
static int drain(void)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	int all = 0;

	for (;;) {
		ssize_t n = read(ws->ifd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return all;
		if (n <= 0)
			return 1;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;
			if (ev->mask & IN_Q_OVERFLOW)
				all = 1;
			else
				on_event(ev->wd, ev->mask,
				         ev->len && !(ev->mask & IN_IGNORED) ? ev->name : NULL);
			p += sizeof *ev + ev->len;
		}
		if ((size_t)n < sizeof buf - sizeof(struct inotify_event) - NAME_MAX - 1)
			return all;     /* short read: the queue is empty */
	}
}

int fcw_sync(bool force)
{
	bool in = force, mnt = false;

	if (!ws)
		return 1;
	if (ws->ring_ok) {
		struct io_uring_cqe *cqe;
		bool rearm[3] = { false, false, false };

		while (io_uring_peek_cqe(&ws->ring, &cqe) == 0) {
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			if (cqe->res < 0 && cqe->res != -ECANCELED) {
				/* the polls cannot be trusted: poll each time, and
				 * assume the worst about what they missed */
				ring_off();
				drain();
				ws->epoch++;
				return 1;
			}
			if (tag == TAG_MOUNTS)
				mnt = true;
			else
				in = true;
			if (!(cqe->flags & IORING_CQE_F_MORE) && tag <= TAG_MOUNTS)
				rearm[tag] = true;
			io_uring_cqe_seen(&ws->ring, cqe);
		}
		if ((rearm[TAG_INOTIFY] && !ring_arm(TAG_INOTIFY)) ||
		    (rearm[TAG_MOUNTS] && !ring_arm(TAG_MOUNTS))) {
			ring_off();
			in = mnt = true;
		}
	} else {
		struct pollfd p[2] = { { ws->ifd, POLLIN, 0 }, { ws->mfd, POLLPRI, 0 } };
		int r = poll(p, 2, 0);
		if (r < 0)
			return 1;
		in = in || p[0].revents;
		mnt = p[1].revents != 0;
	}
	int all = in ? drain() : 0;
	if (all || mnt)
		ws->epoch++;
	/* Says why every cache went, for the operator and the tests. */
	if (mnt)
		fsd_log(LOG_DEBUG, "caches emptied: the mount table changed");
	else if (all)
		fsd_log(LOG_DEBUG, "caches emptied: inotify's queue overflowed, "
		        "or its read failed");
	/* Past the budget, the unused go at once: it bounds the kernel's
	 * watches too. Within it, paced. */
	if (ws->n > ws->budget)
		reap(ws->n - ws->budget < FCW_REAP ? ws->n - ws->budget : FCW_REAP);
	else if (ws->nunused) {
		uint64_t now = fibril_now_ns();
		if (now - ws->reaped_ns >= FCW_REAP_GAP_NS) {
			ws->reaped_ns = now;
			reap(FCW_REAP);
		}
	}
	return all || mnt;
}
