#include "first.h"

#include "daemon/fcache.h"
#include "daemon/daemon.h"
#include "daemon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <fibril/lookup.h>
#include <liburing.h>
#include <poll.h>

#include "proto/cond.h"
#include "proto/etag.h"
#include "proto/httpdate.h"

/* Per worker, fsd.conf.fcache_entries and fcache_bytes at most. An
 * inotify event scans every entry (events are rare next to hits). */
#define MAX_DEPTH     32u
#define NWATCH_SLOTS  4096u           /* open addressing on wd */

#define WATCH_MASK (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | \
                    IN_MOVED_TO | IN_DELETE | IN_CREATE | IN_DELETE_SELF |  \
                    IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)

struct entry {
	struct entry *hnext;            /* bucket chain */
	struct entry *prev, *next;      /* LRU, most recent first */
	uint64_t hash;
	struct blob *body;              /* our reference */
	struct shared *ok;              /* the 200 response, made on the first hit */
	size_t len;
	const char *ctype;              /* static (mime table) */
	bool verified;
	bool no_sidecars;               /* FILE.br, .zst, .gz absent: serves Accept-Encoding too */
	uint64_t gen;                  /* second lookup done after the watches */
	time_t mtime;
	char etag[PROTO_ETAG_MAX];
	char lastmod[PROTO_HTTPDATE_LEN];
	unsigned depth;                 /* watched dirs: root .. file's dir */
	int wd[MAX_DEPTH];
	char key[];                     /* relative path, NUL-terminated */
};

/* A body shared by the entry and the responses still being sent; MHD
 * calls blob_unref from the worker's loop, so a plain counter will do. */
struct blob { unsigned refs; char data[]; };

static void blob_unref(void *cls)
{
	struct blob *b = cls;

	if (!--b->refs)
		free(b);
}

/* One complete 200 response per entry, queued as is for every hit (MHD
 * lets a response be queued on many connections; it keeps a reference
 * per connection): no allocation, header copy or formatting per hit.
 * refs: the entry's and those of requests not queued yet. */
struct shared { unsigned refs; struct MHD_Response *r; };

static void shared_put(void *arg)
{
	struct shared *sh = arg;

	if (!--sh->refs) {
		MHD_destroy_response(sh->r);
		free(sh);
	}
}

struct watch { int wd; unsigned refs; };

struct fcache {
	int ifd;
	struct entry **bucket;
	size_t nbuckets;                /* power of two, >= the entry limit */
	struct entry *lru_head, *lru_tail;
	unsigned n;
	size_t bytes;
	struct watch w[NWATCH_SLOTS];
	unsigned nwatch;
	uint64_t mnt_id;                /* the root's mount */
	uint64_t gen;                   /* entries made, to recognise ours after parking */
	bool ring_ok;                   /* ifd's readiness is watched by ring */
	struct io_uring ring;           /* one multishot poll on ifd, nothing else */
};

static __thread struct fcache *fc;
static atomic_flag logged = ATOMIC_FLAG_INIT;

static void log_once(const char *why, int err)
{
	if (!atomic_flag_test_and_set(&logged))
		fsd_log(LOG_WARNING, "small-file cache disabled: %s%s%s", why,
		        err ? ": " : "", err ? strerror(err) : "");
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* ---- watches: refcounted by wd (the kernel returns the same wd for the
 * same directory inode) ---- */

static struct watch *watch_slot(int wd, bool insert)
{
	unsigned i = (unsigned)wd * 2654435761u % NWATCH_SLOTS;

	for (unsigned k = 0; k < NWATCH_SLOTS; k++, i = (i + 1) % NWATCH_SLOTS) {
		if (fc->w[i].wd == wd)
			return &fc->w[i];
		if (fc->w[i].wd == -1)
			return insert ? &fc->w[i] : NULL;
	}
	return NULL;
}

/* Backward-shift deletion keeps the probe chains intact. */
static void watch_erase(struct watch *s)
{
	unsigned i = (unsigned)(s - fc->w);

	s->wd = -1;
	for (unsigned j = (i + 1) % NWATCH_SLOTS; fc->w[j].wd != -1; j = (j + 1) % NWATCH_SLOTS) {
		unsigned home = (unsigned)fc->w[j].wd * 2654435761u % NWATCH_SLOTS;
		/* can j's entry move to the hole at i? */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			fc->w[i] = fc->w[j];
			fc->w[j].wd = -1;
			i = j;
		}
	}
	fc->nwatch--;
}

static void watch_unref(int wd)
{
	struct watch *s = watch_slot(wd, false);

	if (!s || --s->refs)
		return;
	inotify_rm_watch(fc->ifd, wd);
	watch_erase(s);
}

static int watch_ref(int wd)
{
	struct watch *s = watch_slot(wd, true);

	if (!s)
		return -ENOSPC;
	if (s->wd == -1) {
		if (fc->nwatch + 1 >= NWATCH_SLOTS * 3 / 4)
			return -ENOSPC;
		s->wd = wd;
		s->refs = 0;
		fc->nwatch++;
	}
	s->refs++;
	return 0;
}

/* ---- entries ---- */

static void lru_unlink(struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		fc->lru_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		fc->lru_tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_front(struct entry *e)
{
	e->next = fc->lru_head;
	e->prev = NULL;
	if (fc->lru_head)
		fc->lru_head->prev = e;
	fc->lru_head = e;
	if (!fc->lru_tail)
		fc->lru_tail = e;
}

static void entry_drop(struct entry *e)
{
	struct entry **pp = &fc->bucket[e->hash & (fc->nbuckets - 1)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_unlink(e);
	fc->n--;
	fc->bytes -= e->len;
	for (unsigned i = 0; i < e->depth; i++)
		watch_unref(e->wd[i]);
	/* Responses still being sent keep the body alive. */
	if (e->ok)
		shared_put(e->ok);
	blob_unref(e->body);
	free(e);
}

static void drop_all(void)
{
	while (fc->lru_head)
		entry_drop(fc->lru_head);
}

static struct entry *find(const char *key, uint64_t h)
{
	for (struct entry *e = fc->bucket[h & (fc->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == h && !strcmp(e->key, key))
			return e;
	return NULL;
}

/* Is @name the file @c (@cl bytes) or one of its sidecars? */
static bool names_file(const char *name, const char *c, size_t cl)
{
	size_t nl = strlen(name);

	if (nl < cl || memcmp(name, c, cl))
		return false;
	if (nl == cl)
		return true;
	for (size_t i = 0; i < FSD_NSIDECARS; i++)
		if (!strcmp(name + cl, fsd_sidecars[i].ext))
			return true;
	return false;
}

/* Does @e depend on @wd for the name @name (NULL: the directory itself)?
 * In the file's own directory its sidecars' names count too: an entry
 * that answers Accept-Encoding requests must go when one appears. */
static bool depends(const struct entry *e, int wd, const char *name)
{
	const char *c = e->key;

	for (unsigned i = 0; i < e->depth; i++) {
		const char *end = strchr(c, '/');
		size_t cl = end ? (size_t)(end - c) : strlen(c);
		if (e->wd[i] == wd &&
		    (!name || (end ? strlen(name) == cl && !memcmp(name, c, cl)
		                   : names_file(name, c, cl))))
			return true;
		if (!end)
			break;
		c = end + 1;
	}
	return false;
}

static void on_event(int wd, const char *name)
{
	for (struct entry *e = fc->lru_head, *nx; e; e = nx) {
		nx = e->next;
		if (depends(e, wd, name))
			entry_drop(e);
	}
}

/* Reads every queued event (one read returning EAGAIN when none). A
 * failed read leaves us unsure of what changed: drop everything. */
static void drain(void)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(fc->ifd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			drop_all();
			return;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;
			if (ev->mask & IN_Q_OVERFLOW)
				drop_all();
			else if (ev->len && !(ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)))
				on_event(ev->wd, ev->name);
			else
				on_event(ev->wd, NULL);
			p += sizeof *ev + ev->len;
		}
		if ((size_t)n < sizeof buf - sizeof(struct inotify_event) - NAME_MAX - 1)
			return;     /* short read: the queue is empty */
	}
}

/*
 * Knowing that the inotify queue is empty without a system call.
 *
 * A multishot poll on the inotify fd lives in a small io_uring of our
 * own, set up without IORING_SETUP_DEFER_TASKRUN. When a change queues an
 * event, the writer's system call wakes the poll before it returns; the
 * wake-up queues task work on this worker thread (TIF_NOTIFY_SIGNAL),
 * which the kernel runs, posting the CQE, before this thread next
 * returns to user space from any system call. The recv() that read the
 * request returned after the change did (the client saw the change
 * return before it sent the request), so by the time the request is
 * served the CQE is in the CQ: reading the CQ tail from memory replaces
 * the read of the inotify fd that each hit made before (one syscall of
 * three on a hit: recv, read, send). Without the ring (io_uring off, or
 * a poll error) every hit drains the fd as before.
 */
static void ring_arm(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&fc->ring);

	if (sqe) {
		io_uring_prep_poll_multishot(sqe, fc->ifd, POLLIN);
		if (io_uring_submit(&fc->ring) == 1)
			return;
	}
	/* Cannot watch: fall back to a read per hit. */
	io_uring_queue_exit(&fc->ring);
	fc->ring_ok = false;
}

static void ring_init(void)
{
	/* COOP_TASKRUN: no IPI for the wake-up; the task work still runs on
	 * this thread's next return from the kernel, which is all we need. */
	if (io_uring_queue_init(4, &fc->ring, IORING_SETUP_COOP_TASKRUN) < 0 &&
	    io_uring_queue_init(4, &fc->ring, 0) < 0)
		return;
	fc->ring_ok = true;
	ring_arm();
}

/* Drains the inotify fd if the ring says it became readable (or always,
 * without the ring). */
static void sync_events(void)
{
	struct io_uring_cqe *cqe;
	bool rearm = false, seen = false;

	if (fc->ring_ok) {
		if (!io_uring_cq_ready(&fc->ring))
			return;
		while (io_uring_peek_cqe(&fc->ring, &cqe) == 0) {
			if (cqe->res < 0 && cqe->res != -ECANCELED) {
				/* The poll cannot be trusted: a read per hit. */
				io_uring_queue_exit(&fc->ring);
				fc->ring_ok = false;
				drain();
				return;
			}
			if (!(cqe->flags & IORING_CQE_F_MORE))
				rearm = true;
			io_uring_cqe_seen(&fc->ring, cqe);
			seen = true;
		}
		if (rearm)
			ring_arm();
		if (!seen)
			return;
	}
	drain();
}

/* Filesystems where every change to a file goes through this kernel's
 * VFS, so inotify sees it (not NFS, CIFS, FUSE, 9p, ceph...). */
static bool local_fs(long type)
{
	switch ((unsigned long)type) {
	case 0xEF53:        /* ext2/3/4 */
	case 0x58465342:    /* xfs */
	case 0x9123683E:    /* btrfs */
	case 0x01021994:    /* tmpfs */
	case 0xF2F52010:    /* f2fs */
	case 0x794c7630:    /* overlayfs */
	case 0x858458f6:    /* ramfs */
		return true;
	}
	return false;
}

int fsd_fcache_init(void)
{
	struct statfs sf;
	struct statx sx;
	const char *env = getenv("FSD_FCACHE");

	if (fc)
		return 0;
	if ((env && !strcmp(env, "0")) || !fsd.conf.fcache_entries || !fsd.conf.fcache_bytes)
		return -ECANCELED;
	if (!fsd.lkroot)
		return -EOPNOTSUPP;
	if (fstatfs(fsd.rootfd, &sf) < 0) {
		log_once("fstatfs of the root", errno);
		return -errno;
	}
	if (!local_fs(sf.f_type)) {
		log_once("the root's filesystem does not report remote changes to inotify", 0);
		return -EOPNOTSUPP;
	}
	if (statx(fsd.rootfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 ||
	    !(sx.stx_mask & STATX_MNT_ID)) {
		log_once("no mount id for the root", errno);
		return -EOPNOTSUPP;
	}
	fc = calloc(1, sizeof *fc);
	if (!fc)
		return -ENOMEM;
	fc->nbuckets = 64;
	while (fc->nbuckets < fsd.conf.fcache_entries)
		fc->nbuckets *= 2;
	fc->bucket = calloc(fc->nbuckets, sizeof *fc->bucket);
	if (!fc->bucket) {
		free(fc);
		fc = NULL;
		return -ENOMEM;
	}
	fc->mnt_id = sx.stx_mnt_id;
	for (unsigned i = 0; i < NWATCH_SLOTS; i++)
		fc->w[i].wd = -1;
	fc->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fc->ifd < 0) {
		int e = errno;
		log_once("inotify_init1", e);
		free(fc->bucket);
		free(fc);
		fc = NULL;
		return -e;
	}
	ring_init();
	return 0;
}

void fsd_fcache_fini(void)
{
	if (!fc)
		return;
	drop_all();
	if (fc->ring_ok)
		io_uring_queue_exit(&fc->ring);
	close(fc->ifd);
	free(fc->bucket);
	free(fc);
	fc = NULL;
}

/* Watches running out (or any other failure) disables the cache for
 * this worker: a cache that cannot watch cannot be trusted. */
static void disable(const char *why, int err)
{
	log_once(why, err);
	fsd_fcache_fini();
}

bool fsd_fcache_active(void)
{
	return fc && fc->n;
}

/* What both the 200 and the 304 of an entry carry. */
static void add_validators(struct MHD_Response *resp, const struct entry *e)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, e->lastmod);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, e->etag);
	if (fsd.conf.sidecars)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
}

/* The entry's shared 200 response, made on its first hit. */
static struct shared *entry_ok(struct entry *e)
{
	struct shared *sh;
	struct MHD_Response *resp;

	if (e->ok)
		return e->ok;
	sh = malloc(sizeof *sh);
	resp = MHD_create_response_from_buffer_with_free_callback_cls(
		e->len, e->body->data, blob_unref, e->body);
	if (!sh || !resp) {
		free(sh);
		if (resp)
			MHD_destroy_response(resp);
		return NULL;
	}
	e->body->refs++;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, e->ctype);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	add_validators(resp, e);
	fsd_resp_common(resp);
	sh->refs = 1;
	sh->r = resp;
	e->ok = sh;
	return sh;
}

/* The entry that may answer a request (@ae: one with Accept-Encoding
 * while sidecars are on), or NULL. */
static struct entry *find_usable(const char *rel, uint64_t h, bool ae)
{
	struct entry *e = find(rel, h);

	return e && e->verified && (!ae || e->no_sidecars) ? e : NULL;
}

int fsd_fcache_serve(struct fsd_req *rq, const char *rel)
{
	struct entry *e;
	bool ae = fsd.conf.sidecars && rq->h.accept_encoding;

	if (!fc || rq->h.range || rq->close ||
	    (rq->method != FSD_M_GET && rq->method != FSD_M_HEAD))
		return 1;
	uint64_t h = hash_str(rel);
	if (!find_usable(rel, h, ae))
		return 1;
	sync_events();
	if (!fc || !(e = find_usable(rel, h, ae)))
		return 1;
	lru_unlink(e);
	lru_front(e);

	struct MHD_Response *resp;
	switch (fsd_req_cond(rq, e->etag, e->mtime)) {
	case PROTO_COND_NOT_MODIFIED:
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		if (resp)
			add_validators(resp, e);
		fsd_req_respond(rq, MHD_HTTP_NOT_MODIFIED, resp, 0);
		return 0;
	case PROTO_COND_PRECONDITION_FAILED:
		fsd_req_error(rq, 412);
		return 0;
	case PROTO_COND_PROCEED:
		break;
	}
	struct shared *sh = entry_ok(e);
	if (!sh)
		return 1;
	sh->refs++;
	fsd_req_respond_shared(rq, MHD_HTTP_OK, sh->r, e->len, shared_put, sh);
	return 0;
}

/* Does any sidecar name of @rel exist (or can't we tell)? Asked once
 * the watches exist, so one created later is an event that drops the
 * entry (depends()). */
static bool sidecars_exist(struct fsd_req *rq, const char *rel)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < FSD_NSIDECARS; i++) {
		struct lk_file f;
		if ((size_t)snprintf(path, sizeof path, "%s%s", rel, fsd_sidecars[i].ext) >= sizeof path)
			return true;
		int r = lk_open(fsd.lkroot, path, O_PATH | O_NOFOLLOW, rq->group, &f);
		if (r == 0)
			close(f.fd);
		if (r != -ENOENT)
			return true;
	}
	return false;
}

static bool same_file(const struct statx *a, const struct statx *b)
{
	return a->stx_ino == b->stx_ino && a->stx_dev_major == b->stx_dev_major &&
	       a->stx_dev_minor == b->stx_dev_minor && a->stx_size == b->stx_size &&
	       a->stx_mode == b->stx_mode &&
	       a->stx_mtime.tv_sec == b->stx_mtime.tv_sec &&
	       a->stx_mtime.tv_nsec == b->stx_mtime.tv_nsec &&
	       a->stx_ctime.tv_sec == b->stx_ctime.tv_sec &&
	       a->stx_ctime.tv_nsec == b->stx_ctime.tv_nsec;
}

/* Watches root .. the file's directory; intermediate symlinks fail
 * (IN_DONT_FOLLOW | IN_ONLYDIR), so a cached path has none. Returns the
 * depth, 0 if the path is not cacheable, or -errno when watching itself
 * failed (the cache then turns off). */
static int add_watches(const char *rel, int *wd)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof path, "/proc/self/fd/%d", fsd.rootfd);
	unsigned depth = 0;
	const char *c = rel;

	for (;;) {
		/* level 0 is the root through its magic link, which must be followed */
		int w = inotify_add_watch(fc->ifd, path,
		                          depth ? WATCH_MASK : WATCH_MASK & ~IN_DONT_FOLLOW);
		int err = errno;
		if (w < 0 || watch_ref(w) < 0) {
			for (unsigned i = 0; i < depth; i++)
				watch_unref(wd[i]);
			if (w >= 0) {
				if (!watch_slot(w, false))
					inotify_rm_watch(fc->ifd, w);
				return -ENOSPC;
			}
			return err == ENOSPC || err == ENOMEM || err == EMFILE ? -err : 0;
		}
		wd[depth++] = w;
		const char *end = strchr(c, '/');
		if (!end)
			return (int)depth;
		if (depth == MAX_DEPTH || n + 1 + (end - c) >= (int)sizeof path) {
			for (unsigned i = 0; i < depth; i++)
				watch_unref(wd[i]);
			return 0;
		}
		n += snprintf(path + n, sizeof path - (size_t)n, "/%.*s", (int)(end - c), c);
		c = end + 1;
	}
}

void fsd_fcache_put(struct fsd_req *rq, const char *rel, const struct statx *stx,
                    const void *buf, size_t len)
{
	struct entry *e;
	int wd[MAX_DEPTH];
	char lastmod[PROTO_HTTPDATE_LEN];

	if (!fc || rq->method != FSD_M_GET || !*rel || len != stx->stx_size ||
	    len > fsd.conf.small_file_max || len > fsd.conf.fcache_bytes / 4 ||
	    !S_ISREG(stx->stx_mode) || stx->stx_nlink != 1 ||
	    proto_httpdate_format((time_t)stx->stx_mtime.tv_sec, lastmod) < 0)
		return;
	drain();
	if (!fc)
		return;
	uint64_t h = hash_str(rel);
	/* A file with a sidecar the client did not get (older than FILE, or
	 * a coding it does not accept): its entry, good for requests without
	 * Accept-Encoding, stays as it is instead of being made again for
	 * every such request. */
	if ((e = find(rel, h)) && e->verified && !e->no_sidecars &&
	    fsd.conf.sidecars && rq->h.accept_encoding)
		return;
	if (e)
		entry_drop(e);
	int depth = add_watches(rel, wd);
	if (depth < 0) {
		disable("inotify_add_watch", -depth);
		return;
	}
	if (!depth)
		return;
	size_t kl = strlen(rel);
	e = malloc(sizeof *e + kl + 1);
	struct blob *b = malloc(sizeof *b + (len ? len : 1));
	if (!e || !b) {
		free(e);
		free(b);
		for (int i = 0; i < depth; i++)
			watch_unref(wd[i]);
		return;
	}
	b->refs = 1;
	memcpy(b->data, buf, len);
	memset(e, 0, sizeof *e);
	memcpy(e->key, rel, kl + 1);
	e->hash = h;
	e->body = b;
	e->len = len;
	e->gen = ++fc->gen;
	e->mtime = (time_t)stx->stx_mtime.tv_sec;
	memcpy(e->lastmod, lastmod, sizeof lastmod);
	proto_etag_make(stx->stx_ino, stx->stx_size, stx->stx_mtime.tv_sec,
	                stx->stx_mtime.tv_nsec, NULL, e->etag);
	const char *slash = strrchr(rel, '/');
	e->ctype = fsd_mime_type(slash ? slash + 1 : rel);
	e->depth = (unsigned)depth;
	memcpy(e->wd, wd, (size_t)depth * sizeof *wd);
	while (fc->n && (fc->n >= fsd.conf.fcache_entries ||
	                 fc->bytes + len > fsd.conf.fcache_bytes))
		entry_drop(fc->lru_tail);
	e->hnext = fc->bucket[h & (fc->nbuckets - 1)];
	fc->bucket[h & (fc->nbuckets - 1)] = e;
	lru_front(e);
	fc->n++;
	fc->bytes += len;

	/* The body was read before the watches existed: look again now that
	 * they do. Same inode, size, mtime and ctime and no symlink at the
	 * end: nothing changed in between (a write sets ctime). */
	uint64_t gen = e->gen;
	struct lk_file f;
	int r = lk_open(fsd.lkroot, rel, O_PATH | O_NOFOLLOW, rq->group, &f);
	if (r == 0)
		close(f.fd);
	if (!fc || !(e = find(rel, h)) || e->gen != gen)
		return;
	if (r < 0 || !same_file(stx, &f.stx) || f.stx.stx_nlink != 1 ||
	    !(f.stx.stx_mask & STATX_MNT_ID) || f.stx.stx_mnt_id != fc->mnt_id) {
		entry_drop(e);
		return;
	}
	bool none = fsd.conf.sidecars && !sidecars_exist(rq, rel);
	if (!fc)	/* turned off while those lookups were parked */
		return;
	drain();
	if (fc && (e = find(rel, h)) && e->gen == gen) {
		e->verified = true;
		e->no_sidecars = none;
	}
}
