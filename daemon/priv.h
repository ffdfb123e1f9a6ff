/*
 * daemon/priv.h: what needs root after the daemon has dropped its
 * privileges (a reload that binds a port below 1024, logs in a
 * root-owned directory, a TLS key readable by root only).
 *
 * When the daemon switches from root to its service user, a small
 * helper process forked before any thread keeps root and does these
 * few things on request, over a socket that passes the descriptors back
 * (SCM_RIGHTS). It is no open-anything oracle for a compromised worker:
 * it re-reads the configuration file itself on every request and opens
 * only what the file names (logs under the rules of log_int.h, other
 * files read-only and only if they are regular files), and binds only
 * the listen addresses the file or the command line names. Without a
 * helper (never root, or still root) every call acts directly.
 */
#ifndef FSD_PRIV_H
#define FSD_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/conf.h"
#include "daemon/log_int.h"

/** Starts the helper if the daemon is about to switch from root to
 *  @c's user: call before any thread exists, once the listening
 *  sockets are bound (it keeps none of the daemon's descriptors).
 *  @config is the configuration file (NULL: none; only @c's logs are
 *  then reopened), @listen the command line's listen addresses
 *  (nlisten). Returns 0 (started or not needed) or -errno, reported. */
int fsd_priv_start(const char *config, char *const *listen, size_t nlisten,
                   const struct conf *c);

/** Whether a helper runs. */
bool fsd_priv_running(void);

/** Opens @path read-only (@flags: O_RDONLY with O_CLOEXEC, O_NOFOLLOW,
 *  O_DIRECTORY, O_NOCTTY, O_NONBLOCK at most): directly when no helper
 *  runs, else through the helper, which opens it only if the
 *  configuration file names it and it is a regular file (or, with
 *  O_DIRECTORY, a directory). Symbolic links are followed as
 *  lo_open_read() does whenever root opens (the helper, or root before
 *  any helper exists). Returns the descriptor (close-on-exec) or -errno
 *  (-EPERM: not named in the file, or flags beyond these; -EISDIR: a
 *  directory through the helper), with the reason, without the path,
 *  in @why (NULL: not wanted). */
int fsd_priv_open(const char *path, int flags, char why[LO_MSG]);

/** A listening socket for @l: bound directly, or, when that is refused
 *  for lack of privilege, by the helper. Returns the fd or -errno, with
 *  the reason in @why (NULL: not wanted). */
int fsd_priv_bind(const struct conf_listen *l, char why[LO_MSG]);

/** socket(), bind(), listen() for @l, with the options of every
 *  listening socket of the daemon. Returns the fd or -errno. */
int fsd_listen_bind(const struct conf_listen *l);

/** Asks the helper to open the logs the configuration names now: fds[i]
 *  (access, error) is the new descriptor or -errno, with msgs[i] saying
 *  why. Returns 0, or -errno when the helper cannot be reached (every
 *  fds[i] is then that error). */
int fsd_priv_reopen_logs(int fds[2], char msgs[2][LO_MSG]);

/** Stops the helper and reaps it. */
void fsd_priv_stop(void);

#endif
