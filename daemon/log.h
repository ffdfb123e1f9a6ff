/*
 * Logging: the access log (Combined Log Format) and the error log.
 *
 * Neither ever blocks a worker on the file system: lines are formatted
 * into a per-thread buffer, and full buffers (or, once a second, any
 * buffer) go to one writer thread through a mutex-protected queue. If
 * the writer falls behind by more than FSD_LOG_BACKLOG bytes, lines are
 * dropped and counted rather than stalling the workers.
 *
 * Both logs escape every byte a client may have sent (controls, DEL,
 * bytes >= 0x80 as \xNN, a backslash doubled); the error log does so on
 * the whole formatted message, so callers pass client strings as they
 * are. Files are opened and reopened safely (log_int.h).
 */
#ifndef FSD_LOG_H
#define FSD_LOG_H

#include <stdarg.h>
#include <syslog.h>

#include "conf/conf.h"

struct fsd_req;

/** Opens the logs named in @c and starts the writer thread: call as
 *  root, after fsd_priv_start() (priv.h), before dropping privileges
 *  and before any other thread.
 *  Before this (and after fsd_log_close) fsd_log() writes straight to
 *  stderr. Returns 0 or -errno (with a message on stderr). Main thread. */
int fsd_log_open(const struct conf *c);

/** Flushes everything queued, stops the writer and closes the files. */
void fsd_log_close(void);

/** Asks the writer to reopen both files (SIGUSR1, for log rotation); a
 *  failure is reported and the old file kept. Any thread. */
void fsd_log_reopen(void);

/** A reload: log_level now, and the writer moves to the logs @c names
 *  (files opened again even when unchanged; one that cannot be opened
 *  is reported and the old one kept). 0 or -ENOMEM. Main thread. */
int fsd_log_reconfigure(const struct conf *c);

/** Error log line at syslog @level (LOG_ERR ... LOG_DEBUG), filtered by
 *  log_level. Any thread; never blocks on I/O once the writer runs. */
void fsd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fsd_vlog(int level, const char *fmt, va_list ap);

/** A filesystem error: "what path: strerror(err)" at LOG_ERR/LOG_WARNING.
 *  @err is a positive or negative errno. */
void fsd_log_fs(int level, const char *what, const char *path, int err);

/** @s escaped as the error log escapes a message, NUL-terminated in
 *  @out (cut short to fit @room). Returns its length. */
size_t fsd_log_escape(char *out, size_t room, const char *s);

/** Appends @rq's Combined Log Format line to this thread's buffer. */
void fsd_access_log(const struct fsd_req *rq);

/** Hands this thread's buffered lines to the writer (worker timer). */
void fsd_log_flush_thread(void);

/** Whether an access log is configured (skip the formatting if not). */
int fsd_access_log_enabled(void);

#endif
