#include "first.h"

#include "daemon/fcache.h"
#include "daemon/fcache_body.h"
#include "daemon/fcache_int.h"
#include "daemon/resident.h"
#include "daemon/daemon.h"
#include "daemon/mime.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/sent.h"
#include "daemon/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <fibril/async.h>
#include <fibril/lookup.h>

#include "proto/cond.h"
#include "proto/etag.h"
#include "proto/httpdate.h"
#include "proto/range.h"

/* Directories on a cached path, the root included, at most. */
#define MAX_DEPTH     32u
/* Entries a fill may evict when the kernel (not our budget) refuses a
 * watch: other processes of the user may hold the rest, and emptying
 * the whole cache for one file would not help them or us. */
#define MAX_KERNEL_EVICT 16u
struct entry {
	struct entry *hnext;            /* bucket chain */
	struct entry *prev, *next;      /* LRU, most recent first */
	struct entry *doomed_next;      /* hit by an event, dropped after the sync */
	bool doomed;
	bool verified;                  /* filled, and no event since its watches */
	bool no_sidecars;               /* FILE.br, .zst, .gz absent: serves Accept-Encoding too */
	bool fdbody;                    /* above small_file_max: ok holds the open file */
	int fd;                         /* ... which is this one (ok's, not ours to close) */
	const char *data;               /* the body in memory (blob or mapping); NULL: none */
	uint64_t hash;
	uint64_t gen;                   /* to recognise ours after parking */
	struct fcb_blob *body;          /* our reference; NULL until filled */
	struct shared *ok;              /* the 200 response, made on the first hit */
	struct shared *part;            /* the 206 of the last range asked; NULL: none */
	struct proto_range part_range;  /* ... which is this one */
	size_t len;
	const char *ctype;              /* static (mime table) */
	time_t mtime;
	char etag[PROTO_ETAG_MAX];
	char lastmod[PROTO_HTTPDATE_LEN];
	unsigned ndeps;                 /* directories root .. file's, then the file */
	struct fcw_dep *dep;            /* in the same allocation */
	char *key;                      /* relative path, likewise */
};

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

struct fcache {
	struct entry **bucket;
	size_t nbuckets;                /* power of two, >= the entry limit */
	struct entry *lru_head, *lru_tail;
	struct entry *doomed;
	unsigned n;
	unsigned nfd, max_fd;           /* entries with an open file; their bound */
	size_t bytes;
	unsigned budget;                /* inotify watches */
	unsigned long epoch;            /* fcw_epoch() when last synced */
	uint64_t gen;                   /* entries made */
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
	if (e->body)
		fc->bytes -= e->len;
	if (e->fdbody)
		fc->nfd--;
	for (unsigned i = 0; i < e->ndeps; i++)
		fcw_unwatch(&e->dep[i]);
	/* Responses still being sent keep the body alive. */
	if (e->part)
		shared_put(e->part);
	if (e->ok)
		shared_put(e->ok);
	if (e->body)
		fcb_blob_unref(e->body);
	free(e);
}

static void drop_all(void)
{
	while (fc->lru_head)
		entry_drop(fc->lru_head);
}

/* Drops the least recently used entry other than @keep; false if none. */
static bool evict(const struct entry *keep)
{
	struct entry *e = fc->lru_tail;

	while (e && e == keep)
		e = e->prev;
	if (!e)
		return false;
	entry_drop(e);
	return true;
}

/* Drops the least recently used entry holding an open file other than
 * @keep; false if none. */
static bool evict_fd(const struct entry *keep)
{
	struct entry *e = fc->lru_tail;

	while (e && (e == keep || !e->fdbody))
		e = e->prev;
	if (!e)
		return false;
	entry_drop(e);
	return true;
}

static struct entry *find(const char *key, uint64_t h)
{
	for (struct entry *e = fc->bucket[h & (fc->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == h && !strcmp(e->key, key))
			return e;
	return NULL;
}

/* fcw_sync()'s callback: only marks, the dependency lists are being
 * walked. */
static void fire(struct fcw_dep *d)
{
	struct entry *e = d->owner;

	if (!e->doomed) {
		e->doomed = true;
		e->doomed_next = fc->doomed;
		fc->doomed = e;
	}
}

/* Applies every change reported since the last sync (@force: read the
 * inotify queue even if the ring has posted nothing). */
static void sync_events(bool force)
{
	int all = fcw_sync(force);
	struct entry *e;

	while ((e = fc->doomed)) {
		fc->doomed = e->doomed_next;
		entry_drop(e);
		FSD_M_INC(fc_invalidations);
	}
	/* (the listing cache's fcw_sync() may have seen it first) */
	if (all || fc->epoch != fcw_epoch()) {
		fsd_ctr_add(&fsd_m.c.fc_invalidations, fc->n);
		drop_all();
	}
	fc->epoch = fcw_epoch();
}

int fsd_fcache_init(void)
{
	const char *env = getenv("FSD_FCACHE");

	if (fc)
		return 0;
	if ((env && !strcmp(env, "0")) || !fsd->conf.fcache_entries || !fsd->conf.fcache_bytes)
		return -ECANCELED;
	if (!fsd->lkroot)
		return -EOPNOTSUPP;
	/* inotify must see every change: only on a local file system. */
	int local = lk_fs_local(fsd->rootfd);
	if (local < 0) {
		log_once("fstatfs of the root", -local);
		return local;
	}
	if (!local) {
		log_once("the root's filesystem does not report remote changes to inotify", 0);
		return -EOPNOTSUPP;
	}
	fc = calloc(1, sizeof *fc);
	if (!fc)
		return -ENOMEM;
	fc->nbuckets = 64;
	while (fc->nbuckets < fsd->conf.fcache_entries)
		fc->nbuckets *= 2;
	fc->bucket = calloc(fc->nbuckets, sizeof *fc->bucket);
	fc->budget = fcw_default_budget();
	fc->max_fd = fsd->conf.fcache_open_files;
	int r = fc->bucket ? fcw_init(fc->budget, fire) : -ENOMEM;
	if (r < 0) {
		log_once("inotify or the mount table", -r);
		free(fc->bucket);
		free(fc);
		fc = NULL;
		return r;
	}
	return 0;
}

void fsd_fcache_fini(void)
{
	if (!fc)
		return;
	drop_all();
	fcw_fini();
	free(fc->bucket);
	free(fc);
	fc = NULL;
}

bool fsd_fcache_tidy(void)
{
	if (!fcw_unused())
		return false;
	if (fc)
		sync_events(false);
	else
		fcw_sync(false);        /* the listing cache's alone */
	return fcw_unused() > 0;
}

bool fsd_fcache_active(void)
{
	return fc && fc->n;
}

/* What both the 200 and the 304 of an entry carry. */
static struct fsd_validators validators(const struct entry *e)
{
	return (struct fsd_validators){ e->etag, e->lastmod, fsd->conf.sidecars };
}

/* Makes @resp (NULL: failed, nothing to free), the body of @e or of
 * its part @r (NULL: the whole), a complete response that requests
 * share, with its headers. */
static struct shared *wrap(const struct entry *e, struct MHD_Response *resp,
                           const struct proto_range *r)
{
	struct shared *sh = resp ? malloc(sizeof *sh) : NULL;

	if (!sh) {
		if (resp)
			MHD_destroy_response(resp);
		return NULL;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, e->ctype);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	struct fsd_validators v = validators(e);
	fsd_resp_validators(resp, &v);
	if (r)
		fsd_resp_content_range(resp, r, e->len);
	fsd_resp_common(resp);
	sh->refs = 1;
	sh->r = resp;
	return sh;
}

/* Makes @resp the entry's shared 200 response. */
static struct shared *share(struct entry *e, struct MHD_Response *resp)
{
	return e->ok = wrap(e, resp, NULL);
}

/* The entry's shared 200 response, made on its first hit (an entry
 * with an open file has it from its fill). */
static struct shared *entry_ok(struct entry *e)
{
	struct MHD_Response *resp;

	if (e->ok || !e->body)
		return e->ok;
	resp = MHD_create_response_from_buffer_with_free_callback_cls(
		e->len, e->body->data, fcb_blob_unref, e->body);
	if (resp)
		e->body->refs++;
	return share(e, resp);
}

/* The entry that may answer a request (@ae: one with Accept-Encoding
 * while sidecars are on), or NULL. */
static struct entry *find_usable(const char *rel, uint64_t h, bool ae)
{
	struct entry *e = find(rel, h);

	return e && e->verified && (!ae || e->no_sidecars) ? e : NULL;
}

/* Which part of @e a request with Range asks for: 0 the whole (no
 * Range, an If-Range that does not match, a Range to ignore), 1 the one
 * range put in *@r, -1 what only the file system path answers (several
 * ranges, none satisfiable). */
static int part_of(const struct fsd_req *rq, const struct entry *e, struct proto_range *r)
{
	if (!rq->h.range ||
	    (rq->h.if_range && !proto_cond_if_range(rq->h.if_range, e->etag, e->mtime, time(NULL))))
		return 0;
	struct proto_range rs[fsd->conf.max_ranges];
	unsigned n = 0;
	switch (proto_range_parse(rq->h.range, strlen(rq->h.range), e->len, rs,
	                          fsd->conf.max_ranges, &n)) {
	case PROTO_RANGE_IGNORE:
		return 0;
	case PROTO_RANGE_OK:
		if (n != 1)
			return -1;
		*r = rs[0];
		return 1;
	default:
		return -1;
	}
}

/* The 206 response of the bytes @r of @e, complete and shareable: a
 * slice of the entry's memory (a buffer or a mapping, held through the
 * shared 200), or the range of its open file by sendfile. NULL: failed. */
static struct shared *make_part(struct entry *e, const struct proto_range *r)
{
	uint64_t len = r->last - r->first + 1;
	struct shared *sh = entry_ok(e);
	struct MHD_Response *resp = NULL;
	int fd;

	if (sh && e->data) {
		resp = MHD_create_response_from_buffer_with_free_callback_cls(
			len, (void *)(e->data + r->first), shared_put, sh);
		if (resp)
			sh->refs++;
	} else if (sh && (fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0)) >= 0) {
		resp = MHD_create_response_from_fd_at_offset64(len, fd, (int64_t)r->first);
		if (!resp)
			close(fd);
	}
	return wrap(e, resp, r);
}

/* 206 with the bytes @r of @e. The entry keeps the response of the last
 * range asked and queues it as is when the next asks the same (many
 * clients fetching one slice: the first bytes of a media file, a
 * caching proxy's aligned slices). */
static int respond_part(struct fsd_req *rq, struct entry *e, const struct proto_range *r)
{
	uint64_t len = r->last - r->first + 1;
	struct shared *ps = e->part;

	if (ps && e->part_range.first == r->first && e->part_range.last == r->last) {
		ps->refs++;
	} else {
		if (!(ps = make_part(e, r)))
			return 1;
		/* (a part sent by sendfile is not kept: it holds a descriptor) */
		if (e->data) {
			if (e->part)
				shared_put(e->part);
			e->part = ps;
			e->part_range = *r;
			ps->refs++;
		}
	}
	/* (a small part, like a small entry's whole hit, leaves in one write) */
	bool count = len > fsd->conf.small_file_max;
	if (count)
		fsd_sent_count(rq);
	fsd_req_respond_shared(rq, MHD_HTTP_PARTIAL_CONTENT, ps->r, len, shared_put, ps);
	if (rq->resp != ps->r || !rq->conn)
		return 0;
	if (count)
		fsd_sent_respond(rq, ps->r, MHD_HTTP_PARTIAL_CONTENT);
	/* sendfile stalls on a file that shrinks; a large part from a
	 * mapping may send zeros past its new end (sent.h) */
	if (e->fdbody && (count || !e->data))
		fsd_sent_watch(rq, e->fd, r->last + 1, e->key, e->data != NULL);
	return 0;
}

/* 200 with the whole of @e, its shared response queued as is. */
static int respond_whole(struct fsd_req *rq, struct entry *e)
{
	struct shared *sh = entry_ok(e);

	if (!sh)
		return 1;
	sh->refs++;
	if (e->fdbody)
		fsd_sent_count(rq);
	fsd_req_respond_shared(rq, MHD_HTTP_OK, sh->r, e->len, shared_put, sh);
	if (e->fdbody && rq->method == FSD_M_GET && rq->resp == sh->r && rq->conn) {
		fsd_sent_respond(rq, sh->r, MHD_HTTP_OK);
		/* A file that shrinks under sendfile would stall it, and one
		 * sent from a mapping may send zeros past its new end: watched
		 * as body.c watches its own (sent.h). */
		fsd_sent_watch(rq, e->fd, e->len, e->key, e->data != NULL);
	}
	return 0;
}

/* fsd_fcache_serve(); @filled: for the request that just filled the
 * entry, a miss already counted. */
static int serve(struct fsd_req *rq, const char *rel, bool filled)
{
	struct entry *e;
	bool ae = fsd->conf.sidecars && rq->h.accept_encoding;

	if (!fc || rq->close || (rq->method != FSD_M_GET && rq->method != FSD_M_HEAD) ||
	    (rq->h.range && rq->method != FSD_M_GET))
		return 1;
	uint64_t h = hash_str(rel);
	if (!find_usable(rel, h, ae))
		return 1;
	sync_events(false);
	if (!fc || !(e = find_usable(rel, h, ae)))
		return 1;
	struct proto_range part;
	int p = part_of(rq, e, &part);
	if (p < 0)
		return 1;
	uint64_t off = p ? part.first : 0, len = p ? part.last - part.first + 1 : e->len;
	/* An open file goes out by sendfile on the loop: not under TLS
	 * (body.c reads it there), and only when no page of it must come
	 * from the disk (the file system path reads ahead through the
	 * ring first). */
	if (e->fdbody && (fsd_tls_conn(rq->conn) ||
	                  (rq->method == FSD_M_GET && !fsd_resident(e->fd, off, len))))
		return 1;
	lru_unlink(e);
	lru_front(e);

	struct fsd_validators v = validators(e);
	int r = fsd_req_preconditions(rq, &v, e->mtime, e->len) ? 0 :
		p ? respond_part(rq, e, &part) : respond_whole(rq, e);
	if (r == 0 && !filled)
		FSD_M_INC(fc_hits);
	return r;
}

int fsd_fcache_serve(struct fsd_req *rq, const char *rel)
{
	return serve(rq, rel, false);
}

int fsd_fcache_fill_serve(struct fsd_req *rq, const char *rel, const struct statx *stx)
{
	fsd_fcache_put(rq, rel, stx);
	return rq->abandoned ? 1 : serve(rq, rel, true);
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
		int r = lk_open(fsd->lkroot, path, O_PATH | O_NOFOLLOW, rq->group, &f);
		if (r == 0)
			close(f.fd);
		if (r != -ENOENT)
			return true;
	}
	return false;
}

/* fcw_watch(), making room when the budget or the kernel is out of
 * watches: the least recently used entries go (never @keep). */
static int watch_evicting(int fd, bool dir, struct fcw_dep *d, const struct entry *keep)
{
	unsigned kernel = 0;

	for (;;) {
		int r = fcw_watch(fd, dir, d);
		if (r != -ENOSPC)
			return r;
		if (fcw_count() < fc->budget && ++kernel > MAX_KERNEL_EVICT)
			return r;
		if (!evict(keep))
			return r;
	}
}

/* Opens @name in @dirfd without blocking and without leaving the
 * root's mount or following a symlink: the path was just looked up, so
 * it is in the dentry cache (-EAGAIN when not: not cached this time). */
static int open_cached(int dirfd, const char *name, size_t len, int flags)
{
	char comp[NAME_MAX + 1];
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.resolve = RESOLVE_CACHED | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS |
		           RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
	};

	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(comp, name, len);
	comp[len] = 0;
	long fd = syscall(SYS_openat2, dirfd, comp, &how, sizeof how);
	return fd < 0 ? -errno : (int)fd;
}

/* Watches every directory of @e's path, from the root down, each before
 * the next component is looked up in it (so a swap after its lookup is
 * an event), then the file's inode. Returns an O_PATH fd of the file,
 * watched, or -errno. */
static int watch_path(struct entry *e)
{
	int fd = openat(fsd->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const char *c = e->key;

	for (unsigned i = 0; fd >= 0; i++) {
		const char *end = strchr(c, '/');
		size_t cl = end ? (size_t)(end - c) : strlen(c);
		e->dep[i] = (struct fcw_dep){ .owner = e, .name = c, .len = cl, .sidecars = !end };
		int r = watch_evicting(fd, true, &e->dep[i], e);
		int next = r < 0 ? r : open_cached(fd, c, cl, end ? O_RDONLY | O_DIRECTORY : O_PATH);
		close(fd);
		if (next < 0 || !end) {
			fd = next;
			break;
		}
		fd = next;
		c = end + 1;
	}
	if (fd < 0)
		return fd == -1 ? -errno : fd;
	e->dep[e->ndeps - 1] = (struct fcw_dep){ .owner = e };
	int r = watch_evicting(fd, false, &e->dep[e->ndeps - 1], e);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Is @e still the entry made as @gen for @rel (not dropped while its
 * fibril was parked)? */
static bool still(struct entry *e, const char *rel, uint64_t h, uint64_t gen)
{
	return fc && find(rel, h) == e && e->gen == gen && !e->doomed;
}

/* Opens the file open as @pfd (O_PATH, watched) for reading and makes
 * it @e's shared response, which every hit sends the way the file is
 * (any change since the watches is an event that drops the entry).
 * Never parks. */
static bool fill_fd(struct entry *e, int pfd)
{
	char path[40];
	const char *mapped;

	while (fc->nfd >= fc->max_fd && evict_fd(e))
		;
	if (fc->nfd >= fc->max_fd)
		return false;
	snprintf(path, sizeof path, "/proc/self/fd/%d", pfd);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	if (!share(e, fcb_large(fd, e->len, &mapped)))
		return false;
	e->fd = fd;
	e->fdbody = true;
	e->data = mapped;
	fc->nfd++;
	return true;
}

/* Fills @e (in the table, unverified, its dependencies unlinked) from
 * the file as it is once every watch exists: the statx and the bytes
 * kept are taken after the file's inode and every directory above it
 * are watched, so a change at any later time is an event that drops
 * the entry. Returns false if it failed (@e may be gone already: the
 * fibril parks). */
static bool fill(struct fsd_req *rq, struct entry *e, const char *rel)
{
	struct statx sx;
	uint64_t gen = e->gen, h = e->hash;
	int fd = watch_path(e);

	if (fd < 0)
		return false;
	bool large = false;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) < 0 ||
	    !S_ISREG(sx.stx_mode) ||
	    ((large = sx.stx_size > fsd->conf.small_file_max) ? !fc->max_fd :
	     sx.stx_size > fsd->conf.fcache_bytes / 4) ||
	    /* (before 1970 or in the future: static.c's way, with no
	     * Last-Modified or with the time of each response) */
	    sx.stx_mtime.tv_sec < 0 || sx.stx_mtime.tv_sec > time(NULL) ||
	    proto_httpdate_format((time_t)sx.stx_mtime.tv_sec, e->lastmod) < 0) {
		close(fd);
		return false;
	}
	e->len = (size_t)sx.stx_size;
	e->mtime = (time_t)sx.stx_mtime.tv_sec;
	proto_etag_make(fsd->conf.etag, sx.stx_ino, sx.stx_size, sx.stx_mtime.tv_sec,
	                sx.stx_mtime.tv_nsec, NULL, e->etag);
	if (large) {
		bool ok = fill_fd(e, fd);
		close(fd);
		if (!ok)
			return false;
	} else {
		struct fcb_blob *b = fcb_read(fd, (size_t)sx.stx_size);
		close(fd);
		if (!b || !still(e, rel, h, gen)) {
			free(b);
			return false;
		}
		e->body = b;
		e->data = b->data;
		fc->bytes += e->len;
		while (fc->bytes > fsd->conf.fcache_bytes && evict(e))
			;
	}
	/* with the watches in place, a sidecar created later is an event */
	bool none = fsd->conf.sidecars && !sidecars_exist(rq, rel);
	if (!still(e, rel, h, gen))
		return false;
	e->no_sidecars = none;
	return true;
}

void fsd_fcache_put(struct fsd_req *rq, const char *rel, const struct statx *stx)
{
	struct entry *e;
	unsigned ndirs = 1;
	uint64_t len = stx->stx_size;

	if (!fc || rq->method != FSD_M_GET || !*rel ||
	    (len > fsd->conf.small_file_max ? !fc->max_fd : len > fsd->conf.fcache_bytes / 4) ||
	    !S_ISREG(stx->stx_mode))
		return;
	/* (a file the cache could hold, read from the file system) */
	FSD_M_INC(fc_misses);
	sync_events(true);
	uint64_t h = hash_str(rel);
	/* An entry already there is being filled by another request, or is
	 * current (a change since its watches would have dropped it in the
	 * sync above) and only could not answer this request (pages not
	 * resident, a closing connection, a sidecar the client did not
	 * get...): it stays as it is. */
	if (find(rel, h))
		return;
	for (const char *p = rel; (p = strchr(p, '/')); p++)
		ndirs++;
	if (ndirs > MAX_DEPTH || ndirs + 1 > fc->budget)
		return;
	size_t kl = strlen(rel);
	e = malloc(sizeof *e + (ndirs + 1) * sizeof *e->dep + kl + 1);
	if (!e)
		return;
	while (fc->n && fc->n >= fsd->conf.fcache_entries)
		evict(NULL);
	memset(e, 0, sizeof *e);
	e->ndeps = ndirs + 1;
	e->dep = (struct fcw_dep *)(e + 1);
	memset(e->dep, 0, e->ndeps * sizeof *e->dep);
	e->key = (char *)(e->dep + e->ndeps);
	memcpy(e->key, rel, kl + 1);
	e->hash = h;
	e->gen = ++fc->gen;
	const char *slash = strrchr(rel, '/');
	e->ctype = fsd_mime_type(slash ? slash + 1 : rel);
	e->hnext = fc->bucket[h & (fc->nbuckets - 1)];
	fc->bucket[h & (fc->nbuckets - 1)] = e;
	lru_front(e);
	fc->n++;

	uint64_t gen = e->gen;
	if (!fill(rq, e, rel)) {
		if (still(e, rel, h, gen))
			entry_drop(e);
		return;
	}
	/* anything since the watches were added drops it here */
	if (fc)
		sync_events(true);
	if (fc && find(rel, h) == e && e->gen == gen && (e->body || e->fdbody))
		e->verified = true;
}
