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
 */
#include "first.h"

#include <errno.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "fibril/lookup_int.h"

FIBRIL_API int lk_fs_local(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return -errno;
	switch ((unsigned long)sf.f_type) {
	case EXT4_SUPER_MAGIC:          /* also ext2 and ext3 */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case F2FS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case RAMFS_MAGIC:
	case OVERLAYFS_SUPER_MAGIC:
		return 1;
	default:
		return 0;
	}
}
