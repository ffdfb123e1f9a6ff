/*
 * lk_fs_local: the one list of file systems libfibril and its users
 * treat as local. Two needs meet here and ask for the same set: a
 * cache that trusts inotify needs every change to pass through this
 * kernel's VFS, and the scan engine's batched, inline and foreground
 * choices need metadata calls that take microseconds. Both hold for a
 * file system this kernel serves from a disk or from memory; both fail
 * for one served over a network or by a user-space daemon (NFS, CIFS,
 * 9p, ceph, FUSE). A type missing from the list is taken as remote:
 * the safe side for both users (no cache, calls through the pool).
 *
 * The list and the answer per mount live with the engine
 * (async_mnt.c), whose inline opens and closes ask the same question;
 * the answer never costs a round trip to a file server (fstatfs would,
 * on FUSE).
 */
#include "first.h"

#include "fibril/lookup_int.h"
#include "fibril/async_mnt.h"

FIBRIL_API int lk_fs_local(int fd)
{
	return async__fd_local(fd);
}
