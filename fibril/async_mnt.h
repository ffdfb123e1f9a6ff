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
/* Whether a statfs f_type is one of the local file systems. */
bool async__fs_magic_local(unsigned long magic);
/* Closes @fd: inline on a local file system (or with no engine on this
 * thread), else on a backend, so that a remote ->flush/->release never
 * holds the caller. */
void async__close_fd(int fd);

#endif
