/*
 * Log files, opened safely (log_open.c), for log.c only.
 *
 * The daemon opens its logs as root and may run as a service user that
 * owns (or may write) the log directory; that user must not be able to
 * make root append to any other file. A log path is therefore resolved
 * one component at a time: a symbolic link is followed only if root owns
 * it and only root may write the directory holding it; the directory of
 * the file must be owned by root or the service user and writable by
 * nobody else (unless sticky); the file itself must not be a symbolic
 * link, must be a regular file (or a character device such as /dev/null
 * in a directory only root may write), owned by root or the service user,
 * with a single link. Files are created 0640.
 *
 * Reopening (log rotation, a reload) happens after privileges are
 * dropped, so when the daemon switches user the root helper of priv.h
 * opens the log paths the configuration file names, with the same
 * checks, and passes the descriptors back. It receives no log path: a
 * compromised worker can only ask for the logs to be reopened.
 */
#ifndef FSD_LOG_INT_H
#define FSD_LOG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/** Who besides root may own a log file or its directory. */
struct lo_trust {
	uid_t uid;              /* the service user (or the user we run as) */
	gid_t gid;              /* its group: may have write access to the directory */
};

#define LO_MSG 256

/** Fills @t for the configured @user/@group (NULL: the current ids).
 *  Returns 0 or -errno, with a message in @msg. */
int lo_trust_for(struct lo_trust *t, const char *user, const char *group,
                 char msg[LO_MSG]);

/** Opens @path for appending under the rules above. Returns the
 *  descriptor or -errno; @msg then says why (without the path). */
int lo_open(const char *path, const struct lo_trust *t, char msg[LO_MSG]);

/** Opens @path with @flags (read-only ones: the root helper's reads of
 *  files the configuration names) following a symbolic link, the last
 *  component included, only where root made it in a directory only root
 *  may write, so that the service user cannot point the path elsewhere.
 *  Returns the descriptor or -errno; @msg then says why. */
int lo_open_read(const char *path, int flags, char msg[LO_MSG]);

#endif
