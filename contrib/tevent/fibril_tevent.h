/*
 * libfibril-tevent: the lookup engine inside a tevent event loop (Samba's
 * loop), with _send/_recv pairs in tevent's own style.
 *
 *   ftev_attach(ev, engine, &ft)       the engine's fd, timeout and kick
 *                                      become tevent events of @ev
 *   ftev_open_send / _recv             lk_open_start: fd + statx beneath a root
 *   ftev_lookup_send / ftev_open_recv  lk_lookup_start: the same with options
 *                                      (credentials, case-insensitive names)
 *   ftev_stat_send / _recv             statx of a path beneath a root
 *   ftev_readlink_send / _recv         a symlink's target beneath a root
 *   ftev_fstat_send / _recv            statx of an open fd
 *   ftev_pread_send / _recv            pread into a buffer the result keeps
 *   ftev_scan_open, ftev_scan_next_send / _recv
 *                                      a directory scan, batch by batch
 *
 * Rules common to every request:
 *  - A result never reaches the caller's callback from inside _send: an
 *    operation that finishes at once (a cached open) is posted
 *    (tevent_req_post), and completions reaped from the engine go to the
 *    ftev's queue of ready requests, finished in completion order in the
 *    same tevent handler once async_engine_process() (and the fibril
 *    scheduler) have returned, so callbacks never run inside
 *    async_engine_process().
 *  - talloc_free() of the request before it completes cancels the
 *    operation; tevent_req_cancel() cancels it and the request then fails
 *    with ECANCELED (or completes, if the result was already in). Buffers
 *    the kernel or a pool thread may still write belong to a hidden
 *    object freed only after their completion, and an fd opened too late
 *    is closed then.
 *  - Results the caller keeps (read buffers, link targets, entries) are
 *    talloc children of the TALLOC_CTX given to _recv.
 *  - _recv returns 0 (or a count) on success, -errno on failure, like the
 *    rest of libfibril.
 *
 * Threading: everything belongs to the thread of @ev and of the engine
 * (the same thread).
 *
 * Teardown: free every request and scan before the ftev. That done, the
 * ftev may be freed anywhere on its thread, from a request's callback
 * too (the handler that ran the callback then leaves the ftev alone).
 * The engine may be destroyed before the ftev: requests still pending
 * then fail with ECANCELED (or complete, if the result was in), and the
 * ftev stops watching the engine; start no request on it after that,
 * and free it before this thread creates another engine.
 */
#ifndef FIBRIL_TEVENT_H
#define FIBRIL_TEVENT_H

#include <stddef.h>
#include <stdint.h>
#include <talloc.h>
#include <tevent.h>

#include "fibril/async.h"
#include "fibril/lookup.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ftev;

/**
 * Makes @ev host @e (this thread's engine): a tevent fd event on the
 * engine's fd, a timer for async_engine_timeout_ms() and the fibril
 * scheduler's timeout, and an immediate event for the engine's kick
 * (async_engine_set_kick()). Each wake-up reaps completions, then runs
 * the fibril scheduler (harmless without fibrils). The ftev is a talloc
 * child of @ev; talloc_free() of it detaches. Returns 0, -EINVAL when
 * @e is not this thread's current engine (async_engine_current()), or
 * -errno.
 */
int ftev_attach(struct tevent_context *ev, async_engine_t *e, struct ftev **out);

/** The tevent context and engine of an ftev (the engine is NULL once
 *  destroyed). */
struct tevent_context *ftev_context(const struct ftev *ft);
async_engine_t *ftev_engine(const struct ftev *ft);

/* ---- resolution beneath a root ---- */

/** lk_open_start(@r, @path, @oflags, @g): opens @path beneath @r. */
struct tevent_req *ftev_open_send(TALLOC_CTX *mem, struct ftev *ft,
                                  lk_root_t *r, const char *path, int oflags,
                                  lk_group_t *g);
/** 0 and *out (the caller owns out->fd from then on), or -errno. An fd
 *  not taken by _recv is closed when the request is freed. */
int ftev_open_recv(struct tevent_req *req, struct lk_file *out);

/** lk_lookup_start(@r, @path, @o): an open with options, as the user of
 *  o->cred (NULL: the process's own), LK_LOOKUP_NOCASE matching... (@o
 *  is copied; NULL: lk_open with O_RDONLY). Collect with
 *  ftev_open_recv(). When stopped at a symlink (LK_LOOKUP_STOP_SYMLINK)
 *  the fd is an O_PATH fd of the link. */
struct tevent_req *ftev_lookup_send(TALLOC_CTX *mem, struct ftev *ft,
                                    lk_root_t *r, const char *path,
                                    const struct lk_lookup_opts *o);

#define FTEV_NOFOLLOW 0x1u  /**< stat a final symlink itself (lstat) */

/** statx of @path beneath @r (an O_PATH open through the engine; the
 *  fd is closed before the result is delivered), with @o's credentials,
 *  flags and group (@o may be NULL; its oflags are ignored). Under
 *  LK_LOOKUP_STOP_SYMLINK a walk that stops at a symlink fails with
 *  -ELOOP, as lk_stat() does; a final link with FTEV_NOFOLLOW is
 *  stat'ed itself. */
struct tevent_req *ftev_stat_send(TALLOC_CTX *mem, struct ftev *ft,
                                  lk_root_t *r, const char *path,
                                  unsigned flags,
                                  const struct lk_lookup_opts *o);
int ftev_stat_recv(struct tevent_req *req, struct statx *out);

/** The target of the symlink @path beneath @r, as stored (@o as for
 *  ftev_stat_send(): -ELOOP for a stop at a link on the way). */
struct tevent_req *ftev_readlink_send(TALLOC_CTX *mem, struct ftev *ft,
                                      lk_root_t *r, const char *path,
                                      const struct lk_lookup_opts *o);
/** 0 and *target (NUL-terminated, a child of @mem), or -errno
 *  (-EINVAL: not a symlink). */
int ftev_readlink_recv(struct tevent_req *req, TALLOC_CTX *mem,
                       char **target);

/* ---- calls on an open fd (the fd must stay open until completion) ---- */

struct tevent_req *ftev_fstat_send(TALLOC_CTX *mem, struct ftev *ft, int fd);
int ftev_fstat_recv(struct tevent_req *req, struct statx *out);

/** Reads up to @count bytes at @offset. */
struct tevent_req *ftev_pread_send(TALLOC_CTX *mem, struct ftev *ft, int fd,
                                   size_t count, uint64_t offset);
/** Bytes read (0 at end of file) with *buf (a child of @mem, NULL when
 *  0 bytes), or -errno. */
ssize_t ftev_pread_recv(struct tevent_req *req, TALLOC_CTX *mem,
                        uint8_t **buf);

/* ---- directory scans ---- */

struct ftev_scan;

/**
 * lk_scan_open() of @dir beneath @r; never blocks. The scan is a talloc
 * child of @mem; talloc_free() closes it (a pending next request then
 * fails with ECANCELED). Returns 0 and *out, or -errno.
 */
int ftev_scan_open(TALLOC_CTX *mem, struct ftev *ft, lk_root_t *r,
                   const char *dir, const struct lk_scan_opts *o,
                   struct ftev_scan **out);

/** The next batch of entries in the scan's order; one at a time per
 *  scan (another while one is pending fails with EBUSY). Freeing it
 *  before completion leaves the scan where it was; cancelling it
 *  cancels the scan. */
struct tevent_req *ftev_scan_next_send(TALLOC_CTX *mem, struct ftev_scan *s);
/**
 * 1 with *ents and *n (n >= 1): an array of entries, a child of @mem,
 * whose names and link targets are its children; 0 at the end; or
 * -errno (-ECANCELED after cancellation, errors of the directory).
 */
int ftev_scan_next_recv(struct tevent_req *req, TALLOC_CTX *mem,
                        struct lk_entry **ents, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
