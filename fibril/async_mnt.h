/*
 * Private to fibril/: which mounts are local (async_mnt.c), for the
 * engine's inline paths and the lookup engine's.
 */
#ifndef FIBRIL_ASYNC_MNT_H
#define FIBRIL_ASYNC_MNT_H

#include <stdbool.h>

/* 1 when @fd is on a local file system, 0 when remote or unknown,
 * -errno. Never a round trip to a file server. */
int async__fd_local(int fd);
/* The same, answered from memory for a descriptor the engine already
 * knows to be local (async_mnt.c), and remembered when it is. */
int async__fd_local_remembered(int fd);
/* What the engine remembers by descriptor number (async_mnt.c): @fd
 * was found on a local mount (note); @fd's number is being closed or
 * was just handed out again (forget: always safe, costs an ask later);
 * whether @fd is known local (known). */
void async__fd_note_local(long fd);
void async__fd_forget(long fd);
bool async__fd_known_local(long fd);
/* Whether a statfs f_type is one of the local file systems. */
bool async__fs_magic_local(unsigned long magic);
/* Closes @fd: inline on a local file system (or with no engine on this
 * thread), else on a backend, so that a remote ->flush/->release never
 * holds the caller. */
void async__close_fd(int fd);
/* An inline open must not wait in the file system's ->open either (a
 * FIFO for its other end, a terminal for its carrier): it is made with
 * async__open_nowait_flags(@flags), and async__open_nowait_keep() then
 * keeps a regular file or directory, without the O_NONBLOCK @flags did
 * not ask for (0), or closes anything else (1: go to a backend, which
 * opens it as asked). What was opened as asked is kept as it is.
 * @mode: the file's, or 0 to have it fstat'ed. */
unsigned long long async__open_nowait_flags(unsigned long long flags);
/* Whether the try's failure @err came from the O_NONBLOCK it added
 * (a FIFO with no reader yet: ENXIO), so that a backend must open it. */
bool async__open_nowait_refused(long err, unsigned long long flags);
int async__open_nowait_keep(int fd, unsigned long long flags, unsigned mode);

#endif
