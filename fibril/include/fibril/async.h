/*
 * libfibril: asynchronous system calls on io_uring, with a thread-pool
 * fallback: submit a call, go on, wait for it later (libfibril(3),
 * "Asynchronous system calls").
 *
 * Threading: an engine belongs to the thread that created it; that
 * thread's async_submit()/wait_for_async()/async_cancel() use it. Call
 * nothing here from another thread.
 *
 * Credentials: the ring's kernel workers and the pool threads act with
 * the credentials of the thread that created the engine. Drop
 * privileges (setgroups/setgid/setuid, chroot) before
 * async_engine_create(); nothing here creates a ring or a thread
 * earlier. Without an engine async_submit() returns -ENXIO and the
 * fibril_* wrappers run the plain system call. libfibril(3) has the
 * details.
 */
#ifndef FIBRIL_ASYNC_H
#define FIBRIL_ASYNC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FIBRIL_API
#define FIBRIL_API __attribute__((visibility("default")))
#endif

/**
 * The library's own, architecture-independent call numbers. Arguments
 * are passed as unsigned long args[] in the order shown; "(live)" marks
 * a pointer that must stay valid until the call completes (or its
 * cancellation completes). async_call_info() returns the same table.
 */
enum async_call {
	ASYNC_NOP = 0,       /* -                                         */
	ASYNC_OPENAT2,       /* dirfd, path(live), struct open_how*(live), size */
	ASYNC_STATX,         /* dirfd, path(live), flags, mask, struct statx*(live) */
	ASYNC_CLOSE,         /* fd                                        */
	ASYNC_READ,          /* fd, buf(live), count                      */
	ASYNC_PREAD,         /* fd, buf(live), count, offset              */
	ASYNC_WRITE,         /* fd, buf(live), count                      */
	ASYNC_PWRITE,        /* fd, buf(live), count, offset              */
	ASYNC_GETDENTS64,    /* fd, buf(live), count                      */
	ASYNC_READLINKAT,    /* dirfd, path(live), buf(live), bufsiz      */
	ASYNC_FSYNC,         /* fd, datasync (0 or 1)                     */
	ASYNC_FADVISE,       /* fd, offset, len, advice                   */
	ASYNC_CALL,          /* long (*fn)(void *arg), arg(live): see below */
	ASYNC_CALL_MAX
};

/**
 * ASYNC_CALL runs fn(arg) on a pool thread (args[0] is @fn cast to
 * unsigned long, args[1] is @arg); its return value, below
 * ASYNC_COOKIE_BASE (by convention >= 0 or -errno), is the call's
 * result. It never goes to the ring: fn runs on the engine's pool (the
 * background pool with ASYNC_F_BACKGROUND) concurrently with the
 * submitter, who reads what fn wrote only after the completion. It runs
 * synchronously on the caller's thread with ASYNC_F_SYNC, at the
 * parallelism limit (not with queue_at_limit), or when no pool thread
 * can be made. fn must not
 * use the submitter's engine or fibrils, and should not block for long.
 * async_cancel() drops a call that has not started (-ECANCELED, fn
 * never runs); a running fn is not interrupted, and
 * async_engine_destroy() waits for it. @arg is a live pointer.
 */

/** One row of the call table. */
struct async_call_info {
	const char *name;
	unsigned nargs;
	unsigned live_ptrs;  /**< bit i set: args[i] must stay valid until completion */
};

/** The table row for @call, or NULL for an unknown call. */
FIBRIL_API const struct async_call_info *async_call_info(long call);

/** Flags for async_submit(). */
#define ASYNC_F_SYNC    0x1UL  /**< run it synchronously now (returns 0) */
/** Skip the inline fast paths (RESOLVE_CACHED open, RWF_NOWAIT read,
 *  fstat of an fd, close) and hand the call to a backend; it still runs
 *  synchronously at the parallelism limit (not with queue_at_limit).
 *  For tests, and for callers
 *  that know the call will block. */
#define ASYNC_F_NOINLINE 0x2UL
/** Background work: the call runs on the engine's background threads
 *  (a pool of its own, made on first use, never the ring), scheduled at
 *  SCHED_IDLE: it uses only CPU time other threads leave idle, and on a
 *  saturated machine it waits. Completions are delivered in batches, at
 *  the latest 5 ms after the call finished (async_engine_timeout_ms()
 *  is at most 5 while any is outstanding). The inline fast paths and
 *  the parallelism limit apply as to any call. */
#define ASYNC_F_BACKGROUND 0x4UL

/** Cookies are always >= ASYNC_COOKIE_BASE, a value no call returns, so
 *  "*result still equals the cookie" means "still pending". */
#define ASYNC_COOKIE_BASE (1L << 62)

/**
 * Submits @call with @args.
 * Returns < 0: -errno, nothing was submitted (-ENOSYS unknown call,
 *   -ENXIO no engine on this thread, -EINVAL bad flags, -EFAULT a NULL
 *   @result, NULL @args for a call that takes arguments or a NULL
 *   ASYNC_CALL function, -ENOMEM no
 *   operation could be allocated under queue_at_limit).
 * Returns 0: completed synchronously; *result holds its return value
 *   (>= 0 or -errno). The cached fast path: an openat2 that the kernel
 *   resolves from the dcache (RESOLVE_CACHED) never leaves this call.
 *   That try is made for any O_PATH open, and for other opens only with
 *   a relative path from a dirfd known to be on a local file system,
 *   with RESOLVE_NO_XDEV added; never with O_CREAT, O_TRUNC or
 *   O_TMPFILE, with a size other than sizeof(struct open_how), or for a
 *   lookup made with a credential handle (lookup.h). What it finds is
 *   kept only when it is a regular file or a directory: the open of a
 *   FIFO or a device, which may wait, is made again on a backend.
 * Returns > 0: pending; the value is a cookie, also stored in *result
 *   until completion overwrites *result with the call's return value.
 * When the number in flight reaches the engine's parallelism limit, the
 * call runs synchronously and 0 is returned, unless the engine has
 * queue_at_limit.
 * Completion is attributed to the submitter: the running fibril, or the
 * thread when called outside a fibril.
 */
FIBRIL_API long async_submit(unsigned long flags, long *result, long call,
                             const unsigned long *args);

/**
 * Like async_submit(), and when it returns > 0, cb(arg, res) runs once
 * from async_engine_process() after *result was written. It never runs
 * from inside this call and never after a return <= 0. For event loops
 * that are not fibrils (embedders). -EINVAL for a NULL @cb.
 * Such a call belongs to no submitter: async_outstanding() and
 * wait_for_async(0) ignore it; wait_for_async(cookie) and async_cancel()
 * work until its callback has run (async_engine_destroy() runs pending
 * callbacks too, with -ECANCELED or the result).
 */
FIBRIL_API long async_submit_cb(unsigned long flags, long *result, long call,
                                const unsigned long *args,
                                void (*cb)(void *arg, long res), void *arg);

/**
 * "waitpid() for system calls". @cookie > 0: wait for that call and
 * return its result. @cookie == 0: wait for everything the caller (this
 * fibril, or this thread outside fibrils) has outstanding; returns 0.
 * In a fibril it parks only that fibril; outside one it drives the
 * engine (and the fibril scheduler) until done. -ENOENT for a cookie
 * that is unknown or already reaped by another wait.
 * A completed call stays reapable (like a zombie process) until a wait
 * for it or wait_for_async(0) by its submitter; -EBUSY if another wait
 * is already waiting on that cookie. Outside fibrils, -EDEADLK when
 * nothing is in flight that could ever complete the wait. -ENXIO without
 * an engine on this thread, -EINVAL for a negative @cookie.
 */
FIBRIL_API long wait_for_async(long cookie);

/**
 * Requests cancellation. The call then completes with its own result or
 * -ECANCELED; either way its live pointers must stay valid until
 * *result no longer holds the cookie. Returns 0, or -ENOENT if the
 * cookie is unknown or already complete.
 */
FIBRIL_API int async_cancel(long cookie);

/** Number of the caller's (fibril's, or thread's) calls in flight. */
FIBRIL_API unsigned async_outstanding(void);

/**
 * Closes @fd without waiting and without a result: at once on a local
 * file system (where a close costs nothing), else on a backend of the
 * calling thread's engine, so that a network or FUSE file system's
 * flush never holds the caller; the descriptor's number stays taken
 * until then, and async_engine_destroy() waits for it. Without an
 * engine on the thread, or while it is being destroyed, it is
 * close(2). For descriptors that were only read: the error a close of
 * a written file may report (a failed write-back) is lost here; submit
 * ASYNC_CLOSE when it matters.
 */
FIBRIL_API void async_close_nowait(int fd);

/* ---- engine: one per thread, and the common wait point ---- */

typedef struct async_engine async_engine_t;

struct async_engine_opts {
	const char *backend;      /**< "auto" (default), "uring", "threads";
	                               env FIBRIL_BACKEND overrides "auto" */
	unsigned max_inflight;    /**< parallelism limit (default 4096) */
	unsigned ring_entries;    /**< SQ size (default 256) */
	unsigned iowq_bounded;    /**< io-wq bounded workers (default 64; like
	                               every field here, 0 takes the default,
	                               not the kernel's bound of 4 x CPUs:
	                               libfibril(3)) */
	unsigned iowq_unbounded;  /**< io-wq unbounded workers (default 0 = kernel default) */
	unsigned pool_threads;    /**< thread-pool size (default 16) */
	/** Receives one line at start naming the backend, and warnings.
	 *  level is syslog-style (LOG_INFO...). NULL: stderr. */
	void (*log)(int level, const char *msg, void *log_arg);
	void *log_arg;
	unsigned bg_threads;      /**< background threads (ASYNC_F_BACKGROUND;
	                               default 64, as many as io-wq's bound) */
	/** Non-zero: never run a call on the submitting thread because of
	 *  the parallelism limit or a saturated ring; it waits in the thread
	 *  pool's queue instead (pending, cancellable there), and a call for
	 *  which no operation can be allocated fails with -ENOMEM. For a
	 *  thread that serves others while a call hangs (a dead network
	 *  mount): run synchronously, one call would stop them all. A pool
	 *  that cannot start a single thread still runs its queued calls on
	 *  this thread, and ASYNC_F_SYNC still runs here. Zero keeps the
	 *  synchronous fallback of async_submit(). */
	unsigned queue_at_limit;
};

/**
 * Creates the calling thread's engine (at most one per thread) and
 * makes it current. The backend is chosen by opts->backend, then the
 * FIBRIL_BACKEND environment variable, then io_uring if io_uring_setup
 * works, else threads (EPERM, ENOSYS, EINVAL fall back). Logs the
 * backend in use once. Credentials are captured now (see top).
 * Returns 0 and *out, -EBUSY if this thread already has an engine,
 * -EINVAL for an unknown backend name (or a NULL @out), or -errno.
 */
FIBRIL_API int async_engine_create(const struct async_engine_opts *opts,
                                   async_engine_t **out);

/** Destroys the engine: cancels and waits out everything in flight
 *  (so no buffer is written after return). Calling thread only. */
FIBRIL_API void async_engine_destroy(async_engine_t *e);

/** The calling thread's engine, or NULL. */
FIBRIL_API async_engine_t *async_engine_current(void);

/** "uring" or "threads". */
FIBRIL_API const char *async_engine_backend(const async_engine_t *e);

/** The one fd to watch for readability: completions are ready. */
FIBRIL_API int async_engine_fd(const async_engine_t *e);

/**
 * Reaps up to @budget completions (0: no limit), writes results, runs
 * callbacks and wakes fibrils (it does not run them: call
 * fibril_sched_run() afterwards). Returns the number reaped or -errno.
 */
FIBRIL_API int async_engine_process(async_engine_t *e, unsigned budget);

/** Milliseconds the host loop may sleep before calling process again
 *  even if the fd stays quiet (-1: no limit). */
FIBRIL_API int async_engine_timeout_ms(const async_engine_t *e);

/** Calls in flight on the engine. */
FIBRIL_API unsigned async_engine_inflight(const async_engine_t *e);

/** Backends, as async_engine_stats() counts them. */
enum async_backend_id {
	ASYNC_BACKEND_URING = 0,  /**< io_uring */
	ASYNC_BACKEND_POOL,       /**< the thread pools (background included) */
	ASYNC_NBACKENDS
};

/**
 * What an engine did with the calls submitted to it since it was made,
 * indexed by enum async_backend_id. A call that completed synchronously
 * is counted under the backend it was meant for (io_uring when the
 * engine has a ring that runs that call and it is not a background
 * call, else the pool); a pending one under the backend that took it.
 * The engine's own calls (directory read-ahead, closes handed off) are
 * not counted in submitted, sync, sync_inline or async; the closes
 * count in inflight (and toward the parallelism limit), and both in
 * depth.
 */
struct async_stats {
	uint64_t submitted[ASYNC_NBACKENDS]; /**< sync + async */
	uint64_t sync[ASYNC_NBACKENDS];      /**< completed inside async_submit() (returned 0) */
	uint64_t sync_inline[ASYNC_NBACKENDS]; /**< of those, by a fast path that
	                                          cannot block (cached open, read of
	                                          cached pages, fstat, close); the rest
	                                          ran on the caller (ASYNC_F_SYNC, the
	                                          parallelism limit, a refusing backend) */
	uint64_t async[ASYNC_NBACKENDS];     /**< pending (returned a cookie) */
	unsigned inflight;                   /**< async_engine_inflight() */
	/** Calls a backend holds now: on the ring, submitted and not
	 *  completed (in the kernel, io-wq included); on the pools, queued,
	 *  running, or done and not yet reaped. */
	unsigned depth[ASYNC_NBACKENDS];
};

/** Fills @out (all zero for a NULL engine). Engine's thread only; a
 *  few loads, for monitoring. */
FIBRIL_API void async_engine_stats(const async_engine_t *e, struct async_stats *out);

/**
 * For host loops without a "before sleeping" hook (libevent 2.1): @kick
 * is called, from async_submit()/async_cancel() or a completion reaped
 * inside them, when the engine needs async_engine_process() soon
 * (submissions queued, callbacks deferred, fibrils woken) although its
 * fd may stay quiet. At most once between two process calls. The kick
 * must only schedule the call (e.g. event_active()), never make it.
 * NULL removes it. Engine's thread only.
 */
FIBRIL_API void async_engine_set_kick(async_engine_t *e,
                                      void (*kick)(void *arg), void *arg);

/**
 * A host loop of its own for programs without one (tests, tools): from
 * outside any fibril, drives the engine and the fibril scheduler until
 * no fibril is alive on this thread and nothing is in flight. Returns 0,
 * -EDEADLK when fibrils remain but nothing can ever wake them, -EPERM
 * from inside a fibril, or -errno.
 */
FIBRIL_API int async_engine_run(async_engine_t *e);

/* ---- blocking-style calls for fibril code ----
 * Each submits, and parks the running fibril only when the call is
 * pending; outside a fibril it drives the engine. Returns the call's
 * result (>= 0 or -errno). Without an engine on the thread they run
 * the plain system call. */
struct open_how;
struct statx;
FIBRIL_API long fibril_openat2(int dirfd, const char *path,
                               const struct open_how *how);
FIBRIL_API long fibril_statx(int dirfd, const char *path, int flags,
                             unsigned mask, struct statx *buf);
FIBRIL_API long fibril_close(int fd);
FIBRIL_API long fibril_read(int fd, void *buf, size_t count);
FIBRIL_API long fibril_pread(int fd, void *buf, size_t count, int64_t offset);
FIBRIL_API long fibril_write(int fd, const void *buf, size_t count);
FIBRIL_API long fibril_pwrite(int fd, const void *buf, size_t count,
                              int64_t offset);
FIBRIL_API long fibril_getdents64(int fd, void *buf, size_t count);
FIBRIL_API long fibril_readlinkat(int dirfd, const char *path, char *buf,
                                  size_t bufsiz);
FIBRIL_API long fibril_fsync(int fd, int datasync);
FIBRIL_API long fibril_fadvise(int fd, int64_t offset, int64_t len, int advice);
/** ASYNC_CALL: fn(arg) on a pool thread, the fibril parked meanwhile;
 *  returns fn's value (or -errno from the submit). Without an engine on
 *  the thread, fn(arg) runs here. */
FIBRIL_API long fibril_call(long (*fn)(void *arg), void *arg);

/** The async_stat of the readdir-then-stat loop: submits a statx of
 *  @path relative to @dirfd (AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS)
 *  and returns at once with async_submit()'s value; the result lands in
 *  *result. Collect with wait_for_async(0).
 *
 *  From 256 pending statx calls relative to one @dirfd on, the engine
 *  reads that directory ahead on a pool thread through a descriptor of
 *  its own, opened by the 256th submit (which may then wait one round
 *  trip on a network or FUSE file system); @dirfd and its position are
 *  never touched, and the caller may close it at once. */
FIBRIL_API long async_stat(int dirfd, const char *path, struct statx *buf,
                           long *result);

#ifdef __cplusplus
}
#endif
#endif
