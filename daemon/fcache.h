/*
 * Per-worker small-file cache: body and validators of small regular
 * files, kept correct when files change (inotify), so that a hit costs
 * no system call (a look at an io_uring CQ tail; a read of the inotify
 * fd only after a change) instead of openat2 + statx + pread + close.
 * A file above small_file_max is kept open instead (a few per worker;
 * mapped up to 64 MiB and sent with its headers in one sendmsg, by
 * sendfile above): no open, stat or close per request, and no fibril.
 *
 * Threads: every function runs on a worker thread and touches only that
 * thread's cache (thread-local); fsd_fcache_put runs on the request's
 * fibril, fsd_fcache_serve in the access handler (or on a fibril).
 * Nothing here is shared between workers.
 *
 * Correctness: an entry depends on inotify watches on every directory
 * from the root down to the file's (each with the name of the next
 * component) and on the file's own inode, so a write, truncation,
 * chmod, chown, link or unlink reaches it through any name, hard links
 * made later included. Each directory is watched before the next
 * component is looked up in it, and the file's inode before its statx
 * and the read of the bytes kept (which are not the bytes the caller
 * served): a change at any moment after that is an event. Any event on
 * a watched inode itself, any event naming a component (or, in the
 * file's directory, a sidecar name), a change to the mount table of the
 * daemon's namespace (a mount over a cached path reports nothing to
 * inotify), a queue overflow or a failed read drops the entry (or all
 * of them). Events are applied before every hit, so a change whose
 * system call returned before the request was read is always seen (a
 * hit reads the inotify fd only when an io_uring poll on it, or on the
 * mount table, has posted a completion, which the kernel does before
 * that recv returns; see fcache_watch.c). Watches are indexed by
 * descriptor: an event costs the entries that depend on that inode.
 * At most fcache_watches watches per worker (by default half the user's
 * inotify limit over the workers): a fill that needs more evicts the
 * least recently used entries, as it does when the kernel refuses one.
 * Not cached (always served from the file system): paths through a
 * symlink or a mount point (only the root's mount), paths beneath a
 * casefolded directory (request and event names would compare by
 * bytes), roots on filesystems whose changes inotify cannot see (NFS,
 * FUSE, CIFS...), several ranges in one request, requests whose
 * connection closes after the answer, and, while sidecars are on,
 * requests with Accept-Encoding for
 * a file that has a sidecar name (FILE.br, .zst, .gz) next to it: an
 * entry answers those only if none existed once its watches were in
 * place. Writes through a shared mmap or by Linux native AIO are not
 * reported by inotify before the writer closes the file: such a writer
 * must not be used under the served tree if the cache is on.
 */
#ifndef FSD_FCACHE_H
#define FSD_FCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

struct fsd_req;

/* On the worker thread, before it serves: creates the thread's cache.
 * Returns 0, or -errno when disabled (logged once per process; the
 * daemon then serves as without it). fcache_entries = 0 (or
 * fcache_bytes = 0) in the configuration or FSD_FCACHE=0 in the
 * environment disables it; those two keys and fcache_watches bound it
 * per worker. */
int fsd_fcache_init(void);

/* On the worker thread at teardown: frees the cache (responses still
 * queued in MHD keep their bodies until MHD releases them). */
void fsd_fcache_fini(void);

/* On the worker thread, between events: removes some of the watches no
 * cached entry needs any more (a dropped listing leaves one per name),
 * which a request would otherwise do. True while more remain: the
 * worker then comes back soon even when idle. */
bool fsd_fcache_tidy(void);

/* On the worker thread: does the thread's cache hold anything? (When
 * not, a request need not even be parsed to ask it.) */
bool fsd_fcache_active(void);

/* On the worker thread, in the access handler or on the request fibril,
 * before any lookup of @rel (the normalised path relative to the root,
 * as proto_url_relpath() gives it). Never parks. Returns 0 if it
 * answered @rq (200 with a response shared by every hit on the entry
 * (fsd_req_respond_shared), 206 for one range, 304 or 412), 1 if the
 * caller must serve from the file system. */
int fsd_fcache_serve(struct fsd_req *rq, const char *rel);

/* On the request fibril, as the caller serves (the whole of, or a range
 * of) the file @rel whose statx is @stx from the file system: offers
 * the file to the cache. Nothing the caller read is kept: those bytes
 * were read before any watch existed, so the entry is filled from the
 * file again once it is watched (a large one keeps the file open,
 * opened again after the watches, and sends from it for every hit).
 * May park the fibril (it reads the file and looks for sidecars) and
 * never fails visibly: the entry is just not kept. */
void fsd_fcache_put(struct fsd_req *rq, const char *rel, const struct statx *stx);

/* On the request fibril, for a request the cache did not answer:
 * fsd_fcache_put(), then fsd_fcache_serve() from the entry just made
 * (counted as the miss it was, not as a hit). May park; 0 or 1 as
 * fsd_fcache_serve(). */
int fsd_fcache_fill_serve(struct fsd_req *rq, const char *rel, const struct statx *stx);

#endif
