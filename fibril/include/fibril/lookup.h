/*
 * libfibril: the lookup engine. Safe resolution beneath a root
 * directory, and directory scans (getdents64, then statx of every entry
 * through the async layer with a bounded window, delivered in order).
 *
 * Two ways to use everything here:
 *  - blocking-style from a fibril: the call parks only the running
 *    fibril while something is pending (the host loop keeps calling
 *    async_engine_process() and fibril_sched_run()). Outside a fibril the
 *    same calls drive the thread's engine themselves until done (handy
 *    for command-line tools such as contrib/examples/fls.c).
 *  - callback-style for a foreign event loop: lk_open_start() and
 *    lk_scan_next_cb() never block; their callbacks run from
 *    async_engine_process() on the engine's thread.
 * Both need the calling thread's async engine (async_engine_create());
 * without one every call runs the plain system calls synchronously.
 *
 * Threading: a root (lk_root_t) and a credential handle (lk_cred_t) are
 * immutable and reference-counted and may be shared by threads. Scans,
 * operations and groups belong to the thread that created them (and to
 * its engine): use and close them there.
 *
 * Errors: >= 0 or -errno, never errno. Escapes are refused by the kernel
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): -EXDEV for "..", an
 * absolute path or an absolute/escaping symlink, -ELOOP for symlink loops,
 * magic links (/proc/self/root...) and, with LK_SYMLINKS_NEVER, any
 * symlink. A root opened with LK_SYMLINKS_FOLLOW_ANY gives up that
 * containment: it is for callers that decide themselves where a path
 * may lead (a policy of their own, checked with LK_LOOKUP_STOP_SYMLINK).
 */
#ifndef FIBRIL_LOOKUP_H
#define FIBRIL_LOOKUP_H

#include <stddef.h>
#include <stdint.h>
#include <linux/stat.h>	/* struct statx; compatible with <sys/stat.h> */
#include <sys/types.h>	/* uid_t, gid_t */

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FIBRIL_API
#define FIBRIL_API __attribute__((visibility("default")))
#endif

/* ---- roots ---- */

typedef struct lk_root lk_root_t;
typedef struct lk_cred lk_cred_t;

enum lk_symlinks {
	LK_SYMLINKS_FOLLOW_BENEATH = 0, /**< follow symlinks that stay beneath the root (default) */
	LK_SYMLINKS_NEVER = 1,          /**< any symlink in a path fails with -ELOOP */
	/** symlinks followed wherever they lead, as openat(2) does (magic
	 *  links still refused): no containment at all, not even of ".."
	 *  in a relpath, which the caller must have removed (a normalised
	 *  URL path) */
	LK_SYMLINKS_FOLLOW_ANY = 2
};

#define LK_ROOT_DOTFILES 0x1u  /**< scans of this root show dotfiles by default */

/** Options for lk_root_open(); NULL or all-zero means the defaults. */
struct lk_root_opts {
	enum lk_symlinks symlinks;
	unsigned flags;             /**< LK_ROOT_* */
};

/** Opens @path (any path, resolved normally: the root itself is trusted)
 *  as a root with O_PATH|O_DIRECTORY. Blocking (a plain open); call it at
 *  start-up. Returns 0 and *out, or -errno. */
FIBRIL_API int lk_root_open(const char *path, const struct lk_root_opts *o,
                            lk_root_t **out);

/** Like lk_root_open() but takes ownership of @dirfd (a directory). */
FIBRIL_API int lk_root_from_fd(int dirfd, const struct lk_root_opts *o,
                               lk_root_t **out);

/** Takes a reference (dropped by lk_root_close()); returns @r. Any
 *  thread. */
FIBRIL_API lk_root_t *lk_root_ref(lk_root_t *r);

/** The root's directory fd (owned by the root: do not close). */
FIBRIL_API int lk_root_fd(const lk_root_t *r);

/** Drops the caller's reference. Scans and operations still running keep
 *  the root (and its fd) alive until they are closed/finished. Any
 *  thread. */
FIBRIL_API void lk_root_close(lk_root_t *r);

/**
 * At most @n scans of @r issue calls at once on each thread (0, the
 * default: no bound); the others wait their turn, oldest first, and a
 * scan that waits can still be joined by identical ones. A scan holds
 * its turn only while it has calls in flight. Call it before the first
 * scan. Returns 0, or -EINVAL for a NULL root.
 */
FIBRIL_API int lk_root_limit_scans(lk_root_t *r, unsigned n);

/* ---- groups: cancel many scans and opens at once (a client went away) ---- */

typedef struct lk_group lk_group_t;

/** Creates an empty group (thread of the caller). */
FIBRIL_API int lk_group_new(lk_group_t **out);

/** Cancels every scan and open in the group, and any later one that
 *  joins it (they fail with -ECANCELED). Waiters are woken with
 *  -ECANCELED; pending kernel/worker calls are cancelled and their buffers
 *  are freed only once the kernel or the worker is done with them. */
FIBRIL_API void lk_group_cancel(lk_group_t *g);

/** Cancels the group and frees it. Members stay valid (cancelled) until
 *  their own close; they simply leave the group. */
FIBRIL_API void lk_group_free(lk_group_t *g);

/* ---- resolution ---- */

/** A resolved file: an fd beneath the root plus its statx. */
struct lk_file {
	int fd;              /**< owned by the caller (close it) */
	struct statx stx;    /**< STATX_BASIC_STATS of the opened file */
};

/**
 * Opens @relpath beneath @r (blocking-style). @relpath is relative to
 * the root ("" or "." is the root itself); an absolute path fails with
 * -EXDEV. @oflags are open(2) flags (O_CLOEXEC is always added; O_PATH
 * allowed). Beneath a root on a local file system (lk_fs_local()) it
 * first tries openat2(RESOLVE_CACHED | RESOLVE_NO_XDEV) inline: a cached
 * path returns without parking. Otherwise the openat2 goes through the
 * async layer and the fibril parks (outside a fibril: drives the
 * engine).
 * On success returns 0 and fills *out (fd + statx). Returns -errno
 * (-ENOENT, -EXDEV, -ELOOP, -EACCES...), or -ECANCELED when @g (may be
 * NULL) is cancelled meanwhile (an fd opened late is closed for you).
 */
FIBRIL_API int lk_open(lk_root_t *r, const char *relpath, int oflags,
                       lk_group_t *g, struct lk_file *out);

typedef struct lk_op lk_op_t;

/** Completion of lk_open_start(): @res is 0 with *f filled (the callee
 *  owns f->fd from then on) or -errno (-ECANCELED after cancellation). */
typedef void (*lk_open_cb)(void *arg, int res, const struct lk_file *f);

/**
 * Callback-style lk_open(). Returns:
 *  0: completed inline (the cached case): *out is filled, cb is NOT called;
 *  1: pending: cb(arg, res, f) runs once, later, from
 *     async_engine_process(); *op (if @op non-NULL) identifies the
 *     operation for lk_op_cancel() until cb has run;
 *  < 0: -errno (including resolution errors known at once); cb is NOT
 *     called.
 * @relpath is copied.
 */
FIBRIL_API int lk_open_start(lk_root_t *r, const char *relpath, int oflags,
                             lk_group_t *g, struct lk_file *out,
                             lk_open_cb cb, void *arg, lk_op_t **op);

/** Cancels a pending lk_open_start() or lk_lookup_start(): its cb still
 *  runs once, with -ECANCELED, also when the open had already finished
 *  but was not yet reported (an fd opened meanwhile is closed for you).
 *  Only valid before the cb has run. */
FIBRIL_API void lk_op_cancel(lk_op_t *op);

/* ---- directory scans ---- */

enum lk_sort {
	LK_SORT_NONE = 0,   /**< directory order, streamed; memory bounded by the window */
	LK_SORT_NAME,       /**< byte order (strcmp, like LC_ALL=C ls); all names are
	                         read first, then stat'ed window by window in order, so
	                         the first batch comes early */
	LK_SORT_SIZE,       /**< all entries stat'ed, then sorted, largest first
	                         unless LK_SCAN_DESC (ties by name) */
	LK_SORT_MTIME       /**< likewise, newest first unless LK_SCAN_DESC (ties by name) */
};

#define LK_SCAN_DESC       0x01u /**< reverse the order (with LK_SCAN_DIRS_FIRST,
                                      directories stay first: only the order
                                      within each group is reversed) */
#define LK_SCAN_DIRS_FIRST 0x02u /**< directories before everything else (d_type; a symlink
                                      to a directory is not a directory here) */
#define LK_SCAN_DOTFILES   0x04u /**< show names starting with '.' (but not . and ..) */
#define LK_SCAN_DOTDOT     0x08u /**< also report "." and ".." (like ls -a); ".." of the
                                      root itself reports the root (as in a chroot) */
#define LK_SCAN_NO_LINKS   0x10u /**< don't read symlink targets (link=NULL, target_mode=0) */
#define LK_SCAN_NO_SHARE   0x20u /**< don't share with a concurrent identical scan */
#define LK_SCAN_LOOKUP_ATTRS 0x40u /**< statx with AT_STATX_DONT_SYNC: the attributes the
                                      name lookup brought back (on FUSE one round trip per
                                      entry instead of two; on NFS as old as the attribute
                                      cache; a mount point is asked again in sync) */
#define LK_SCAN_BACKGROUND 0x80u /**< the scan's system calls (on local file systems:
                                      its stat batches) are ASYNC_F_BACKGROUND work on
                                      SCHED_IDLE threads; on a saturated machine the scan
                                      waits for idle CPU. Never shares a flight with a
                                      scan without this flag. */

/** Largest window (and local window) a scan takes. */
#define LK_WINDOW_MAX 4096
/** Default local window (see lk_scan_opts.local_window). */
#define LK_LOCAL_WINDOW 4096

/** Options for lk_scan_open(); all-zero (or NULL) means: unsorted,
 *  dotfiles per the root, window 128, local window LK_LOCAL_WINDOW. */
struct lk_scan_opts {
	enum lk_sort sort;
	unsigned flags;            /**< LK_SCAN_* */
	unsigned window;           /**< statx calls in flight (0: 128; clamped
	                                to 1..LK_WINDOW_MAX) on file systems not
	                                known to be local (FUSE, NFS, ...); an
	                                lk_scan_next() delivers at most
	                                min(window, 512) entries */
	unsigned local_window;     /**< the same on known local file systems,
	                                whose stats run in batches of half of it,
	                                at most 1024 (0: LK_LOCAL_WINDOW; clamped
	                                to 1..LK_WINDOW_MAX) */
	const char *after;         /**< LK_SORT_NAME only, and not with
	                                LK_SCAN_DIRS_FIRST (-EINVAL): start strictly
	                                after this name in the scan's order
	                                (pagination cursor; copied) */
	size_t limit;              /**< deliver at most this many entries (0: all) */
	lk_group_t *group;         /**< joins this group (may be NULL) */
	const struct lk_file *dir; /**< optional: the directory already opened with
	                                lk_open() (its fd is dup'ed, its stx used) */
	const struct lk_cred *cred;/**< open, stat and read links as this user
	                                (lk_cred_new); NULL: the process's own */
	unsigned join_age_ms;      /**< may join an identical scan that began its
	                                stats at most this long ago, and so show
	                                attributes that much older than this open
	                                (0: only a scan that has not begun them) */
};

/** One directory entry as delivered. Pointers stay valid until the next
 *  lk_scan_next*() or lk_scan_close() on the same scan. */
struct lk_entry {
	const char *name;       /**< NUL-terminated */
	size_t namelen;
	const char *link;       /**< symlink target as stored (readlink), else NULL */
	/** lstat of the entry (AT_SYMLINK_NOFOLLOW). Filled fields (stx_mask):
	 *  TYPE MODE NLINK UID GID INO SIZE BLOCKS MTIME; stx_dev_* is the
	 *  directory's device; stx_attributes has STATX_ATTR_MOUNT_ROOT
	 *  when the entry is a mount point (its attributes are the mounted
	 *  root's). All zero when err != 0. */
	struct statx stx;
	uint32_t target_mode;   /**< symlinks: S_IFMT bits of the target when it
	                             resolves beneath the root, else 0 */
	int target_err;         /**< symlinks: why target_mode is 0 (-ENOENT dangling,
	                             -EXDEV escaping, -ELOOP...), else 0 */
	int err;                /**< 0, or -errno: this entry's stat failed (e.g. -EIO);
	                             the scan goes on. Vanished entries (-ENOENT) are
	                             skipped, not reported. */
};

typedef struct lk_scan lk_scan_t;

/**
 * Starts a scan of @reldir beneath @r. Never parks: the directory is
 * opened with openat2(RESOLVE_CACHED) inline when possible, otherwise
 * through the async layer. Errors known at once (-ENOENT, -ENOTDIR,
 * -EXDEV, -ELOOP, -EINVAL for bad options...) are returned here; errors
 * found later come from the first lk_scan_next*(). Concurrent scans of
 * the same directory (same root, credentials, dev/ino and mtime of the
 * directory, same sort and flags) on one thread share one getdents pass
 * and one set of statx calls unless LK_SCAN_NO_SHARE or LK_SORT_NONE; a
 * scan joins another only before that one has issued its first stat, so
 * that no attribute it delivers predates its own start (or up to
 * join_age_ms after, when the caller accepts attributes that old).
 *
 * On ext2/3/4, xfs, btrfs, f2fs, tmpfs, ramfs and overlayfs entries are
 * stat'ed in batches (half the local window, at most 1024) by one
 * ASYNC_CALL each; elsewhere each entry is one ASYNC_STATX, up to a
 * window of them in flight. An entry's own error lands on that entry.
 *
 * Memory: LK_SORT_NONE reads names at most 4 windows plus one 32 KiB
 * getdents buffer ahead of the reader and drops delivered records once
 * they are at least 1024 and half of those kept: up to about 8 windows
 * plus two buffers' worth of entries (or about 1024 where that is
 * more), whatever the directory size. Sorted scans
 * keep 92 bytes per entry plus the name and its NUL, plus per consumer
 * about 300 bytes per entry delivered at a time (at most 512) and up to
 * 4 batches of 72 KiB. libfibril(3) gives the details.
 */
FIBRIL_API int lk_scan_open(lk_root_t *r, const char *reldir,
                            const struct lk_scan_opts *o, lk_scan_t **out);

/**
 * Whether lk_scan_open() on this thread, of the directory whose statx is
 * @dir, with @o, would now share a running scan: 1 it would, 0 an
 * identical scan runs but has begun its stats, -ENOENT none runs (or @o
 * never shares), -EINVAL for a NULL argument. For callers that count
 * scans, e.g. against a limit.
 */
FIBRIL_API int lk_scan_joinable(lk_root_t *r, const struct statx *dir,
                                const struct lk_scan_opts *o);

/**
 * Blocking-style: returns the next batch in order. Returns 1 with
 * *ents and *n (n >= 1), 0 at the end, or -errno (-ECANCELED after
 * cancellation; errors of the directory itself). Parks the running fibril
 * while the next entry's statx is pending (outside a fibril: drives the
 * engine).
 */
FIBRIL_API int lk_scan_next(lk_scan_t *s, const struct lk_entry **ents,
                            size_t *n);

/**
 * Callback-style: like lk_scan_next() but never blocks. When nothing is
 * ready it returns -EAGAIN and cb(arg) runs once, later, from
 * async_engine_process() (or from a lk_* call on this thread) when
 * lk_scan_next_cb() will make progress (a batch, the end, an error, or
 * cancellation); call it again then. cb may call lk_scan_next_cb() or
 * lk_scan_close() on this scan.
 */
FIBRIL_API int lk_scan_next_cb(lk_scan_t *s, const struct lk_entry **ents,
                               size_t *n, void (*cb)(void *arg), void *arg);

/** Cancels the scan: waiters and later calls get -ECANCELED; a pending
 *  callback runs once. When no other scan shares its flight, the
 *  pending statx/getdents calls are cancelled. */
FIBRIL_API void lk_scan_cancel(lk_scan_t *s);

/** Cancels (if needed) and releases the scan. Buffers the kernel or a
 *  worker may still write are freed only after they complete. A pending
 *  callback does not run after close. */
FIBRIL_API void lk_scan_close(lk_scan_t *s);

/** Entries in the directory (after hiding), once known; -EAGAIN before
 *  the names have all been read (always for LK_SORT_NONE until the end). */
FIBRIL_API long lk_scan_count(const lk_scan_t *s);

/* ---- credentials, case-insensitive lookup, symlink reporting ---- */

/**
 * A user's credentials for lookups, opens, stats and scans (struct
 * lk_lookup_opts.cred, struct lk_scan_opts.cred), without changing the
 * process's own. Immutable and reference-counted: any thread may use and
 * free it. Each engine registers it once as an io_uring personality on
 * first use; pool threads switch their own credentials around each call
 * with the raw setgroups/setresgid/setresuid system calls (effective and
 * file-system ids; the real and saved ids stay). Using one needs
 * CAP_SETUID and CAP_SETGID with an effective uid of 0 (a root server);
 * otherwise the calls made with it fail with -EPERM. @groups (may be NULL
 * when @ngroups is 0) are the supplementary groups, copied. Returns 0 and
 * *out, -EINVAL (more than 65536 groups, NULL @groups with @ngroups > 0,
 * or a @uid or @gid of -1), or -ENOMEM.
 */
FIBRIL_API int lk_cred_new(uid_t uid, gid_t gid, size_t ngroups,
                           const gid_t *groups, lk_cred_t **out);
/** Takes a reference; returns @c. */
FIBRIL_API lk_cred_t *lk_cred_ref(lk_cred_t *c);
/** Drops a reference (NULL is allowed). Calls still running keep it. */
FIBRIL_API void lk_cred_free(lk_cred_t *c);

#define LK_LOOKUP_NOCASE       0x1u /**< a component not found as written is
                                         matched case-insensitively (fold) */
#define LK_LOOKUP_STOP_SYMLINK 0x2u /**< stop at the first symlink in the path
                                         (the last component included) and
                                         report it instead of following it;
                                         with oflags O_PATH|O_NOFOLLOW a
                                         trailing link, which the caller asks
                                         for itself, is returned opened, not
                                         reported */

/** Folds @name (@len bytes, not NUL-terminated) into @out (@outsz bytes)
 *  so that two names match iff their folds are equal. Returns the folded
 *  length, or more than @outsz when @out is too small (nothing matches
 *  then). Called on pool threads, concurrently: it must be thread-safe. */
typedef size_t (*lk_fold_fn)(const char *name, size_t len, char *out,
                             size_t outsz, void *arg);

/** The default fold: ASCII and UTF-8 simple case folding (Unicode's C+S
 *  mappings, from the tables of glibc's C.UTF-8 locale; bytes that are
 *  not valid UTF-8 stay as they are). Where the C.UTF-8 locale is not
 *  installed only ASCII is folded. */
FIBRIL_API size_t lk_fold_utf8(const char *name, size_t len, char *out,
                               size_t outsz, void *arg);

/** Options of lk_lookup(); NULL or all-zero: lk_open() with O_RDONLY. */
struct lk_lookup_opts {
	int oflags;              /**< open(2) flags (O_CLOEXEC always added) */
	unsigned flags;          /**< LK_LOOKUP_* */
	lk_group_t *group;       /**< may be NULL */
	const lk_cred_t *cred;   /**< NULL: the process's own credentials */
	lk_fold_fn fold;         /**< LK_LOOKUP_NOCASE: NULL = lk_fold_utf8 */
	void *fold_arg;
};

/** What lk_lookup() found. Release with lk_lookup_release(). */
struct lk_lookup {
	struct lk_file file;     /**< the file; when stopped at a symlink, an
	                              O_PATH fd of the link itself and its lstat */
	char *path;              /**< with LK_LOOKUP_NOCASE or _STOP_SYMLINK: the
	                              path as found (names as on disk, "." and empty
	                              components dropped, up to and including the
	                              link when stopped); else NULL. malloc'd */
	int stopped;             /**< 1: stopped at a symlink (fields below) */
	unsigned link_index;     /**< which component was the link (0: the first
	                              non-empty one of relpath, "." and ".." count) */
	size_t link_offset;      /**< its byte offset in relpath ... */
	size_t link_len;         /**< ... and length */
	size_t rest_offset;      /**< relpath + rest_offset is what follows it,
	                              without leading slashes ("" if it was last) */
	char *link_target;       /**< the link's target (readlinkat), malloc'd */
};

/** Closes the fd (if >= 0) and frees the strings; NULL is allowed. */
FIBRIL_API void lk_lookup_release(struct lk_lookup *l);

/**
 * lk_open() with options: credentials, case-insensitive matching and
 * symlink reporting. Without LK_LOOKUP_* flags it is lk_open() (as the
 * user of o->cred). With them the path is walked component by component
 * on a pool thread (each component openat2(RESOLVE_BENEATH) from the root,
 * so ".." and escapes behave as in lk_open()). Returns 0 and *out (also
 * when stopped at a symlink: out->stopped), or -errno as lk_open(): an
 * absolute path is -EXDEV, a final "/" or "/." asks for a directory
 * (through a link, even under O_NOFOLLOW). On a LK_SYMLINKS_FOLLOW_ANY
 * root the walk still starts at the root: a leading "/" is skipped.
 * Case-insensitive rules (LK_LOOKUP_NOCASE): a name as written wins; else
 * a per-root cache of (directory dev+inode, fold) -> on-disk name,
 * confirmed by opening it; else the directory is read (under o->cred:
 * -EACCES if it may not be listed) and, of the names whose fold equals,
 * the byte-wise smallest wins. No negative caching: a name created later
 * is found.
 */
FIBRIL_API int lk_lookup(lk_root_t *r, const char *relpath,
                         const struct lk_lookup_opts *o, struct lk_lookup *out);

/** Completion of lk_lookup_start(): @res is 0 with *l filled or -errno,
 *  then l is NULL. *l is valid only during the call; the callee owns its
 *  fd and strings: it copies the struct to keep them and later releases
 *  the copy with lk_lookup_release(). */
typedef void (*lk_lookup_cb)(void *arg, int res, struct lk_lookup *l);

/** Callback-style lk_lookup(), as lk_open_start(): 0 done inline (*out
 *  filled, no callback), 1 pending (cb runs once from
 *  async_engine_process(); lk_op_cancel(*op) until then), or -errno.
 *  @relpath is copied. */
FIBRIL_API int lk_lookup_start(lk_root_t *r, const char *relpath,
                               const struct lk_lookup_opts *o,
                               struct lk_lookup *out, lk_lookup_cb cb,
                               void *arg, lk_op_t **op);

/** statx (STATX_BASIC_STATS) of @relpath beneath @r with lk_lookup()'s
 *  options. Of o->oflags only O_NOFOLLOW counts: a trailing symlink is
 *  then stat'ed itself (lstat). With LK_LOOKUP_STOP_SYMLINK any other
 *  symlink in the path fails with -ELOOP (lk_lookup() tells which).
 *  Returns 0 and *stx, or -errno. */
FIBRIL_API int lk_stat(lk_root_t *r, const char *relpath,
                       const struct lk_lookup_opts *o, struct statx *stx);

/* ---- file systems ---- */

/**
 * Whether the file system holding @fd (any open fd) is local: one this
 * kernel serves from a disk or from memory (ext2/3/4, xfs, btrfs, f2fs,
 * tmpfs, ramfs, overlayfs). On a local file system every change goes
 * through this kernel, so inotify(7) sees it (overlayfs: as long as its
 * layers are not changed beneath it), and metadata calls take
 * microseconds, with no network or FUSE round trip. Anything else (NFS,
 * CIFS, 9p, ceph, FUSE, a type not listed) is not local. The scans use
 * it to choose how they stat; a cache may use it to decide whether
 * inotify can keep it fresh. The mount is found by statx(2)
 * STATX_MNT_ID and its type read once from /proc/self/mountinfo, which
 * must be there. Returns 1 local, 0 not (also on a kernel without
 * STATX_MNT_ID), or -errno from statx(2) or from opening
 * /proc/self/mountinfo (-ENOENT without /proc, for a mount not yet
 * seen).
 */
FIBRIL_API int lk_fs_local(int fd);

/* ---- counters (this thread) ---- */

struct lk_stats {
	uint64_t getdents_passes;  /**< full directory reads started */
	uint64_t getdents_calls;
	uint64_t statx_calls;
	uint64_t shared_joins;     /**< scans that joined a running flight */
	uint64_t opens_inline;     /**< lk_open* completed by RESOLVE_CACHED inline */
	uint64_t opens_async;
	uint64_t live_scans;       /**< lk_scan_t not yet closed */
	uint64_t live_flights;     /**< underlying scans not yet freed */
	uint64_t live_ops;         /**< pending opens not yet freed */
	uint64_t statx_batches;    /**< runs of entries stat'ed by one pool call
	                                (local file systems; each entry also counts
	                                in statx_calls) */
};

/** Copies this thread's counters. */
FIBRIL_API void lk_stats(struct lk_stats *out);

#ifdef __cplusplus
}
#endif
#endif
