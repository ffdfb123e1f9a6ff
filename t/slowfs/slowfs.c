/* slowfs: a read-only FUSE passthrough of a backing directory that adds a
 * fixed delay to every metadata operation (lookup, getattr, readlink,
 * open, opendir, readdir) and fails chosen names with EIO.
 *
 * It stands in for a network file system in tests and benchmarks: each
 * metadata op costs --delay-us of wall time (up to ~0.3 ms more when
 * many are in flight, never less), but many ops are served at once
 * (parallel dirops: dirops.c), as an NFS client pipelines requests: the
 * answers wait in a queue (delay.c), not in threads, and one thread
 * reads the requests and sends the answers.
 * Nothing is cached by the kernel (entry and attribute timeouts
 * are 0, readdirplus is off), so every stat reaches us and pays the delay.
 *
 * The low-level API is used because the high-level one resolves paths
 * itself and serialises them behind its own tree lock.
 *
 * A virtual file, MOUNT/.slowfs-stats (not listed by readdir, not
 * delayed, not counted), reads back the op counters, one "name value"
 * line each, so that tests can count instead of timing.
 *
 * Usage: slowfs [options] BACKING MOUNTPOINT
 *   --delay-us=N | --delay-ms=N | -o delay_us=N | -o delay_ms=N
 *   --readdir-delay-ms=N | -o readdir_delay_ms=N
 *                       readdir's own delay (default: the same), so
 *                       that reading names can outlast a lookup
 *   --eio=NAME          fail lookups of this file name (repeatable)
 *   --eio-suffix=SUF    fail lookups of names ending in SUF (default
 *                       ".eio"; empty disables)
 *   --slow-close        the flush that close(2) of a file sends waits the
 *                       delay too, as a network file system's close
 *                       waits for its server (without it, flush is
 *                       refused once and the kernel stops asking)
 *   -o max_threads=N    FUSE worker threads (default: one, the
 *                       single-threaded loop; handlers never sleep, the
 *                       delayed answers wait in a queue, so more threads
 *                       only add a wake-up and a context switch per op)
 *   plus libfuse's own: -f (foreground), -d (debug), -s, -o ...
 */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "t/slowfs/delay.h"
#include "t/slowfs/dirops.h"

#define STATS_NAME ".slowfs-stats"

/* One backing inode the kernel knows about; the FUSE node id is its
 * address. Keyed by (dev, ino) so hard links and repeated lookups share
 * one node, as the kernel expects. */
struct node {
	struct node *next;      /* hash chain */
	int fd;                 /* O_PATH, never followed */
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;       /* guarded by tab_lock */
};

struct dirh {
	DIR *dp;
	off_t pos;              /* offset the next entry sits at */
	struct dirent *pending; /* read but did not fit in the last reply */
};

enum { OP_LOOKUP, OP_GETATTR, OP_READLINK, OP_OPEN, OP_OPENDIR, OP_READDIR,
	OP_READ, OP_EIO, OP_FLUSH, OP_MAX };
static const char *const op_names[OP_MAX] = {
	"lookup", "getattr", "readlink", "open", "opendir", "readdir", "read", "eio",
	"flush",
};
static atomic_ulong op_count[OP_MAX];

static struct {
	char *backing;
	unsigned delay_us;
	unsigned delay_ms;
	unsigned readdir_delay_us;
	unsigned readdir_delay_ms;
	char **eio;             /* exact names */
	size_t neio;
	char *eio_suffix;
	int show_help;
	int threads_given;      /* -o max_threads=N on the command line */
	int slow_close;
} opt = { .eio_suffix = NULL, .delay_ms = UINT_MAX, .readdir_delay_ms = UINT_MAX };

static struct node root_node = { .fd = -1, .nlookup = 2 };
static struct node stats_node = { .fd = -1 };

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct node **tab;
static size_t tab_size, tab_used;

static struct node *node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &root_node : (struct node *)(uintptr_t)ino;
}

static fuse_ino_t id_of(struct node *n)
{
	return n == &root_node ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/* Counts the op; the answer waits --delay-us once filled in. NULL on
 * ENOMEM (already answered). */
static struct sfs_answer *delayed(fuse_req_t req, int op)
{
	atomic_fetch_add_explicit(&op_count[op], 1, memory_order_relaxed);
	return sfs_answer_new(req, op == OP_READDIR ? opt.readdir_delay_us : opt.delay_us);
}

static void node_forget(struct node *n, uint64_t count);
static void dirh_free(struct dirh *d);

/* The kernel did not take the answer (interrupted): it holds nothing. */
static void undo_lookup(struct sfs_answer *a)
{
	node_forget(node_of(a->e.ino), 1);
}

static void undo_open(struct sfs_answer *a)
{
	close((int)a->fi.fh);
}

static void undo_opendir(struct sfs_answer *a)
{
	dirh_free((struct dirh *)(uintptr_t)a->fi.fh);
}

static bool fails(const char *name)
{
	for (size_t i = 0; i < opt.neio; i++)
		if (strcmp(name, opt.eio[i]) == 0)
			return true;
	if (opt.eio_suffix && *opt.eio_suffix) {
		size_t n = strlen(name), s = strlen(opt.eio_suffix);
		if (n >= s && strcmp(name + n - s, opt.eio_suffix) == 0)
			return true;
	}
	return false;
}

static size_t hash(dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15u) ^ ((uint64_t)ino * 0xc2b2ae3d27d4eb4fu);
	return (size_t)(h ^ (h >> 29));
}

static int tab_grow(void)
{
	size_t nsize = tab_size ? tab_size * 2 : 1024;
	struct node **nt = calloc(nsize, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < tab_size; i++) {
		struct node *n = tab[i], *next;
		for (; n; n = next) {
			next = n->next;
			size_t b = hash(n->dev, n->ino) & (nsize - 1);
			n->next = nt[b];
			nt[b] = n;
		}
	}
	free(tab);
	tab = nt;
	tab_size = nsize;
	return 0;
}

/* The node of an inode the kernel already knows, or NULL; tab_lock held. */
static struct node *node_find_locked(const struct stat *st)
{
	if (st->st_dev == root_node.dev && st->st_ino == root_node.ino)
		return &root_node;
	if (tab_size)
		for (struct node *n = tab[hash(st->st_dev, st->st_ino) & (tab_size - 1)];
		     n; n = n->next)
			if (n->dev == st->st_dev && n->ino == st->st_ino)
				return n;
	return NULL;
}

/* Counts one more lookup of a known inode: its node, or NULL. */
static struct node *node_find(const struct stat *st)
{
	pthread_mutex_lock(&tab_lock);
	struct node *n = node_find_locked(st);
	if (n)
		n->nlookup++;
	pthread_mutex_unlock(&tab_lock);
	return n;
}

/* Takes ownership of fd: either it becomes a new node's, or it is closed
 * because the inode already has one. */
static struct node *node_get(int fd, const struct stat *st)
{
	struct node *n;
	pthread_mutex_lock(&tab_lock);
	if ((n = node_find_locked(st)))
		goto found;
	if (tab_used + 1 > tab_size / 2 && tab_grow() < 0) {
		pthread_mutex_unlock(&tab_lock);
		close(fd);
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		pthread_mutex_unlock(&tab_lock);
		close(fd);
		return NULL;
	}
	n->fd = fd;
	n->dev = st->st_dev;
	n->ino = st->st_ino;
	n->nlookup = 1;
	size_t b = hash(n->dev, n->ino) & (tab_size - 1);
	n->next = tab[b];
	tab[b] = n;
	tab_used++;
	pthread_mutex_unlock(&tab_lock);
	return n;
found:
	n->nlookup++;
	pthread_mutex_unlock(&tab_lock);
	close(fd);
	return n;
}

static void node_forget(struct node *n, uint64_t count)
{
	if (n == &root_node || n == &stats_node)
		return;
	pthread_mutex_lock(&tab_lock);
	n->nlookup -= count < n->nlookup ? count : n->nlookup;
	if (n->nlookup == 0) {
		struct node **pp = &tab[hash(n->dev, n->ino) & (tab_size - 1)];
		while (*pp != n)
			pp = &(*pp)->next;
		*pp = n->next;
		tab_used--;
		close(n->fd);
		free(n);
	}
	pthread_mutex_unlock(&tab_lock);
}

static int stats_text(char *buf, size_t size)
{
	size_t len = 0;
	for (int i = 0; i < OP_MAX && len < size; i++) {
		int r = snprintf(buf + len, size - len, "%s %lu\n", op_names[i],
				 atomic_load_explicit(&op_count[i], memory_order_relaxed));
		if (r < 0)
			return -EIO;
		len += (size_t)r;
	}
	if (len < size) {
		int r = snprintf(buf + len, size - len,
				 "inflight_max %lu\ndelay_us %u\nreaddir_delay_us %u\n",
				 sfs_delay_max_queued(), opt.delay_us, opt.readdir_delay_us);
		if (r < 0)
			return -EIO;
		len += (size_t)r;
	}
	return len < size ? (int)len : (int)size - 1;
}

static void stats_attr(struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = 1;  /* shown to stat(1) only; the node id is separate */
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = 4096;  /* direct_io: reads end at the real text's end */
}

static void sfs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* readdirplus would hand the kernel attributes with the names and
	 * spare the per-entry lookups we exist to make slow. */
	conn->want &= ~(unsigned)(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	/* Lookups and readdirs in one directory must run in parallel
	 * (libfuse < 3.16 ignores this: dirops.c sets the reply flag). */
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
}

/* The node of @name in @p for an inode the kernel does not know yet:
 * opens it and fills *st. 0, or an errno value. */
static int node_open(struct node *p, const char *name, struct stat *st,
		     struct node **out)
{
	int fd = openat(p->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		int err = errno;
		close(fd);
		return err;
	}
	*out = node_get(fd, st);
	return *out ? 0 : ENOMEM;
}

static void sfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = node_of(parent);
	if (p == &root_node && strcmp(name, STATS_NAME) == 0) {
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.ino = id_of(&stats_node);
		stats_attr(&e.attr);
		fuse_reply_entry(req, &e);
		return;
	}
	struct sfs_answer *a = delayed(req, OP_LOOKUP);
	if (!a)
		return;
	if (fails(name)) {
		atomic_fetch_add_explicit(&op_count[OP_EIO], 1, memory_order_relaxed);
		sfs_answer_err(a, EIO);
		return;
	}
	/* A name the kernel looked up before costs one system call, not
	 * three: the (dev, ino) finds its node, whose descriptor stays.
	 * This fs stands in for a remote one, so its own CPU time per op
	 * (on the cores of the server under test) is kept small. */
	struct node *n = NULL;
	if (fstatat(p->fd, name, &a->e.attr, AT_SYMLINK_NOFOLLOW) == 0)
		n = node_find(&a->e.attr);
	int err = n ? 0 : node_open(p, name, &a->e.attr, &n);
	if (err == ENOENT) {
		/* ino 0 with timeout 0: a negative entry the kernel won't keep */
		memset(&a->e, 0, sizeof(a->e));
		a->kind = SFS_ENTRY;
		sfs_answer(a);
		return;
	}
	if (err) {
		sfs_answer_err(a, err);
		return;
	}
	a->e.ino = id_of(n);
	a->kind = SFS_ENTRY;
	a->undo = undo_lookup;
	sfs_answer(a);
}

static void sfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(node_of(ino), nlookup);
	fuse_reply_none(req);
}

static void sfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	for (size_t i = 0; i < count; i++)
		node_forget(node_of(f[i].ino), f[i].nlookup);
	fuse_reply_none(req);
}

static void sfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct node *n = node_of(ino);
	if (n == &stats_node) {
		struct stat st;
		stats_attr(&st);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	struct sfs_answer *a = delayed(req, OP_GETATTR);
	if (!a)
		return;
	if (fstatat(n->fd, "", &a->st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		sfs_answer_err(a, errno);
		return;
	}
	a->kind = SFS_ATTR;
	sfs_answer(a);
}

static void sfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct sfs_answer *a = delayed(req, OP_READLINK);
	if (!a)
		return;
	if (!(a->buf = malloc(PATH_MAX + 1))) {
		sfs_answer_err(a, ENOMEM);
		return;
	}
	ssize_t r = readlinkat(node_of(ino)->fd, "", a->buf, PATH_MAX);
	if (r < 0) {
		sfs_answer_err(a, errno);
		return;
	}
	a->buf[r] = 0;
	a->kind = SFS_LINK;
	sfs_answer(a);
}

/* An O_PATH fd can't be read; reopen it through /proc. */
static int reopen(struct node *n, int flags)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", n->fd);
	return open(path, (flags & ~(O_NOFOLLOW | O_CREAT | O_TRUNC | O_EXCL)) | O_CLOEXEC);
}

static void sfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (n == &stats_node) {
		fi->direct_io = 1;
		fi->fh = (uint64_t)-1;
		fuse_reply_open(req, fi);
		return;
	}
	struct sfs_answer *a = delayed(req, OP_OPEN);
	if (!a)
		return;
	int fd = reopen(n, fi->flags);
	if (fd < 0) {
		sfs_answer_err(a, errno);
		return;
	}
	a->fi = *fi;
	a->fi.fh = (uint64_t)fd;
	a->kind = SFS_OPEN;
	a->undo = undo_open;
	sfs_answer(a);
}

static void sfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	if (node_of(ino) == &stats_node) {
		char text[1024];
		int len = stats_text(text, sizeof(text));
		if (len < 0 || off >= len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, text + off,
				       (size_t)(len - off) < size ? (size_t)(len - off) : size);
		return;
	}
	atomic_fetch_add_explicit(&op_count[OP_READ], 1, memory_order_relaxed);
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = (int)fi->fh;
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void sfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (node_of(ino) != &stats_node)
		close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static void sfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	if (!opt.slow_close) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (node_of(ino) == &stats_node) {
		fuse_reply_err(req, 0);
		return;
	}
	struct sfs_answer *a = delayed(req, OP_FLUSH);
	if (a)
		sfs_answer_err(a, 0);
}

static void dirh_free(struct dirh *d)
{
	closedir(d->dp);
	free(d);
}

static void sfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);
	if (n == &stats_node) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	struct sfs_answer *a = delayed(req, OP_OPENDIR);
	if (!a)
		return;
	struct dirh *d = calloc(1, sizeof(*d));
	if (!d) {
		sfs_answer_err(a, ENOMEM);
		return;
	}
	int fd = reopen(n, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || !(d->dp = fdopendir(fd))) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		free(d);
		sfs_answer_err(a, err);
		return;
	}
	a->fi = *fi;
	a->fi.fh = (uint64_t)(uintptr_t)d;
	a->kind = SFS_OPEN;
	a->undo = undo_opendir;
	sfs_answer(a);
}

/* The kernel sends one readdir at a time per open directory (f_pos
 * lock), and the next only after our delayed answer to this one. */
static void sfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	(void)ino;
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	struct sfs_answer *a = delayed(req, OP_READDIR);
	if (!a)
		return;
	char *buf = a->buf = malloc(size);
	if (!buf) {
		sfs_answer_err(a, ENOMEM);
		return;
	}
	if (off != d->pos) {
		seekdir(d->dp, off);
		d->pending = NULL;
		d->pos = off;
	}
	size_t len = 0;
	int err = 0;
	for (;;) {
		struct dirent *de = d->pending;
		if (!de) {
			errno = 0;
			de = readdir(d->dp);
			if (!de) {
				err = errno;
				break;
			}
		}
		struct stat st = { .st_ino = de->d_ino, .st_mode = (mode_t)DTTOIF(de->d_type) };
		size_t need = fuse_add_direntry(req, buf + len, size - len, de->d_name, &st, de->d_off);
		if (need > size - len) {
			d->pending = de;   /* stays valid until the next readdir() */
			break;
		}
		d->pending = NULL;
		d->pos = de->d_off;
		len += need;
	}
	if (err && len == 0) {
		sfs_answer_err(a, err);
		return;
	}
	a->len = len;
	a->kind = SFS_BUF;
	sfs_answer(a);
}

static void sfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dirh_free((struct dirh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void sfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	(void)ino;
	if (fstatvfs(root_node.fd, &sv) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ops = {
	.init = sfs_init,
	.lookup = sfs_lookup,
	.forget = sfs_forget,
	.forget_multi = sfs_forget_multi,
	.getattr = sfs_getattr,
	.readlink = sfs_readlink,
	.open = sfs_open,
	.read = sfs_read,
	.flush = sfs_flush,
	.release = sfs_release,
	.opendir = sfs_opendir,
	.readdir = sfs_readdir,
	.releasedir = sfs_releasedir,
	.statfs = sfs_statfs,
};

enum { KEY_EIO, KEY_HELP, KEY_THREADS };

#define SFS_OPT(t, f) { t, offsetof(typeof(opt), f), 1 }
static const struct fuse_opt sfs_opts[] = {
	SFS_OPT("--delay-us=%u", delay_us),
	SFS_OPT("delay_us=%u", delay_us),
	SFS_OPT("--delay-ms=%u", delay_ms),
	SFS_OPT("delay_ms=%u", delay_ms),
	SFS_OPT("--readdir-delay-ms=%u", readdir_delay_ms),
	SFS_OPT("readdir_delay_ms=%u", readdir_delay_ms),
	SFS_OPT("--eio-suffix=%s", eio_suffix),
	SFS_OPT("--slow-close", slow_close),
	FUSE_OPT_KEY("--eio=", KEY_EIO),
	FUSE_OPT_KEY("eio=", KEY_EIO),
	FUSE_OPT_KEY("max_threads=", KEY_THREADS),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_END
};

static int sfs_opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	(void)data;
	(void)outargs;
	switch (key) {
	case KEY_EIO: {
		const char *v = strchr(arg, '=') + 1;
		char **ne = realloc(opt.eio, (opt.neio + 1) * sizeof(*ne));
		if (!ne || !(ne[opt.neio] = strdup(v)))
			return -1;
		opt.eio = ne;
		opt.neio++;
		return 0;
	}
	case KEY_THREADS:
		opt.threads_given = 1;
		return 1;       /* for fuse_parse_cmdline */
	case KEY_HELP:
		opt.show_help = 1;
		return 1;       /* libfuse prints its own options too */
	case FUSE_OPT_KEY_NONOPT:
		if (!opt.backing) {
			opt.backing = strdup(arg);
			return opt.backing ? 0 : -1;
		}
		return 1;       /* the mount point, for fuse_parse_cmdline */
	default:
		return 1;
	}
}

static void usage(const char *prog)
{
	printf("usage: %s [options] BACKING MOUNTPOINT\n"
	       "  --delay-us=N, --delay-ms=N, -o delay_us=N, -o delay_ms=N\n"
	       "                      delay of each lookup, getattr, readlink, open,\n"
	       "                      opendir and readdir (default 0)\n"
	       "  --readdir-delay-ms=N, -o readdir_delay_ms=N\n"
	       "                      readdir's own delay (default: the one above)\n"
	       "  --eio=NAME, -o eio=NAME\n"
	       "                      lookups of this file name fail with EIO (repeatable)\n"
	       "  --eio-suffix=SUF    ... and of names ending in SUF (default .eio)\n"
	       "  --slow-close        close(2) of a file (its flush) waits the delay too\n"
	       "  -o max_threads=N    worker threads (default: one, single-threaded loop)\n"
	       "Read MOUNTPOINT/" STATS_NAME " for the op counters.\n", prog);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co = { 0 };
	struct fuse_session *se = NULL;
	struct fuse_loop_config *lc = NULL;
	int ret = 1;

	if (fuse_opt_parse(&args, &opt, sfs_opts, sfs_opt_proc) != 0)
		return 1;
	if (!opt.eio_suffix)
		opt.eio_suffix = strdup(".eio");
	if (opt.delay_ms != UINT_MAX)
		opt.delay_us = opt.delay_ms * 1000u;
	opt.readdir_delay_us = opt.readdir_delay_ms != UINT_MAX ? opt.readdir_delay_ms * 1000u
	                                                         : opt.delay_us;
	bool delays = opt.delay_us || opt.readdir_delay_us;
	if (fuse_parse_cmdline(&args, &co) != 0)
		return 1;
	if (opt.show_help || co.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out;
	}
	if (co.show_version) {
		fuse_lowlevel_version();
		ret = 0;
		goto out;
	}
	if (!opt.backing || !co.mountpoint) {
		usage(argv[0]);
		goto out;
	}
	root_node.fd = open(opt.backing, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (root_node.fd < 0 || fstat(root_node.fd, &st) < 0) {
		fprintf(stderr, "slowfs: %s: %s\n", opt.backing, strerror(errno));
		goto out;
	}
	root_node.dev = st.st_dev;
	root_node.ino = st.st_ino;

	/* Mount options of every slowfs: others may read it (root mounts it
	 * for daemons that may drop privileges); the name shows in mounts. */
	if (fuse_opt_add_arg(&args, "-oallow_other,fsname=slowfs,subtype=slowfs") != 0)
		goto out;
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, co.mountpoint) != 0) {
		ret = 3;   /* environment (no permission, no /dev/fuse): callers skip */
		goto out_sig;
	}
	/* Without it the kernel serialises first lookups (see dirops.c). */
	if (sfs_parallel_dirops(se) < 0)
		fprintf(stderr, "slowfs: cannot ask for parallel dirops; lookups of new names run one at a time\n");
	fuse_daemonize(co.foreground);
	bool one_thread = co.singlethread || !opt.threads_given;
	if (delays && !one_thread && sfs_delay_start() < 0) {
		fprintf(stderr, "slowfs: cannot start the delay thread\n");
		goto out_unmount;
	}
	/* One thread by default: every handler returns at once (the waits
	 * are in the delay queue), so a single reader of /dev/fuse finds the
	 * next request already queued instead of a pool of threads each
	 * being woken for one op. Measured with back-to-back listings of
	 * 2,000 names at 1 ms: slowfs CPU per listing 0.108 -> 0.064 s, as
	 * many listings per second. This CPU is the test tool's (a real
	 * remote fs spends none waiting), taken from the server under test
	 * on a small machine. */
	if (one_thread && delays) {
		ret = sfs_delay_loop(se);
	} else if (one_thread) {
		ret = fuse_session_loop(se);
	} else {
		lc = fuse_loop_cfg_create();
		if (!lc)
			goto out_unmount;
		unsigned max = co.max_threads ? co.max_threads : 10;
		fuse_loop_cfg_set_max_threads(lc, max);
		fuse_loop_cfg_set_idle_threads(lc, co.max_idle_threads != UINT_MAX &&
					       co.max_idle_threads ? co.max_idle_threads : max);
		fuse_loop_cfg_set_clone_fd(lc, (unsigned)co.clone_fd);
		ret = fuse_session_loop_mt(se, lc);
	}
	ret = ret ? 1 : 0;
out_unmount:
	sfs_delay_stop();
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	if (lc)
		fuse_loop_cfg_destroy(lc);
	free(co.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
