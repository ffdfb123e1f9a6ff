/*
 * Which mounts are local, and closing a descriptor without waiting on
 * a remote server.
 *
 * RESOLVE_CACHED keeps an inline open from blocking in the path walk
 * only: the open itself still calls the file system's ->open, and a
 * close its ->flush and ->release, which on FUSE, NFS or CIFS are round
 * trips to a server. The engine therefore runs those inline only on a
 * mount it knows to be local. It asks by mount id (statx STATX_MNT_ID
 * with AT_STATX_DONT_SYNC, answered from the inode, never by the
 * server) and learns a mount's type once from /proc/self/mountinfo:
 * fstatfs would be the obvious question, but on FUSE it is itself a
 * round trip (FUSE_STATFS).
 *
 * Asking costs a statx per call, as much as the open or the close it
 * guards. So the engine also remembers, by descriptor number, which
 * descriptors it found on a local mount: a directory it asked about
 * once, and a file it opened inline from one (RESOLVE_NO_XDEV keeps the
 * file on its directory's mount). A number is forgotten whenever the
 * engine closes it or sees it handed out again (any open through the
 * engine, the lookup engine's own opens), so that the number of a
 * closed local file reissued for a FUSE file is asked about again.
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/magic.h>

#include "fibril/async_int.h"
#include "fibril/async_mnt.h"

/* The one list of local file systems (lk_fs_local): served by this
 * kernel from a disk or from memory. A type missing here is taken as
 * remote, the safe side. */
static const struct {
	unsigned long magic;
	const char *name;
} async__local_fs[] = {
	{ EXT4_SUPER_MAGIC, "ext4" },   /* also ext2 and ext3 */
	{ EXT4_SUPER_MAGIC, "ext3" },
	{ EXT4_SUPER_MAGIC, "ext2" },
	{ XFS_SUPER_MAGIC, "xfs" },
	{ BTRFS_SUPER_MAGIC, "btrfs" },
	{ F2FS_SUPER_MAGIC, "f2fs" },
	{ TMPFS_MAGIC, "tmpfs" },
	{ RAMFS_MAGIC, "ramfs" },
	{ OVERLAYFS_SUPER_MAGIC, "overlay" },
};

bool async__fs_magic_local(unsigned long magic)
{
	for (size_t i = 0; i < sizeof(async__local_fs) / sizeof(async__local_fs[0]); i++)
		if (async__local_fs[i].magic == magic)
			return true;
	return false;
}

static bool async__fs_name_local(const char *name)
{
	for (size_t i = 0; i < sizeof(async__local_fs) / sizeof(async__local_fs[0]); i++)
		if (strcmp(async__local_fs[i].name, name) == 0)
			return true;
	return false;
}

/* mount id -> local, process-wide (roots and descriptors are shared by
 * threads). Entries are (id << 1 | local) + 2, never 0; append-only: a
 * server has a handful of mounts, and one past the table is looked up
 * again each time (slower, still right). */
#define ASYNC__MNT_MAX 128
static uint64_t async__mnt[ASYNC__MNT_MAX];
static unsigned async__mnt_n;

static int async__mnt_find(uint64_t id)
{
	unsigned n = __atomic_load_n(&async__mnt_n, __ATOMIC_ACQUIRE);
	if (n > ASYNC__MNT_MAX)
		n = ASYNC__MNT_MAX;
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = __atomic_load_n(&async__mnt[i], __ATOMIC_ACQUIRE);
		if (v && ((v - 2) >> 1) == id)
			return (int)((v - 2) & 1);
	}
	return -1;
}

static void async__mnt_add(uint64_t id, bool local)
{
	unsigned i = __atomic_fetch_add(&async__mnt_n, 1, __ATOMIC_ACQ_REL);
	if (i < ASYNC__MNT_MAX)
		__atomic_store_n(&async__mnt[i], ((id << 1) | local) + 2,
				 __ATOMIC_RELEASE);
}

/* The type of mount @id from mountinfo ("36 35 98:0 /a /b rw - ext4 ..."):
 * 1 local, 0 remote or not found, -errno. */
static int async__mnt_probe(uint64_t id)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int local = 0;

	if (!fp)
		return -errno;
	while (getline(&line, &cap, fp) > 0) {
		char *end;
		unsigned long long mid = strtoull(line, &end, 10);
		if (end == line || mid != id)
			continue;
		char *sep = strstr(end, " - ");
		if (sep) {
			char *type = sep + 3, *sp = strchr(type, ' ');
			if (sp)
				*sp = '\0';
			local = async__fs_name_local(type);
		}
		break;
	}
	free(line);
	fclose(fp);
	return local;
}

/* Descriptor number -> 1 when known to be on a local mount, 0 not
 * known; process-wide like the descriptors. Numbers past the table are
 * asked about each time. */
#define ASYNC__FDL_MAX 65536
static uint8_t async__fdl[ASYNC__FDL_MAX];

void async__fd_forget(long fd)
{
	if (fd >= 0 && fd < ASYNC__FDL_MAX &&
	    __atomic_load_n(&async__fdl[fd], __ATOMIC_RELAXED))
		__atomic_store_n(&async__fdl[fd], 0, __ATOMIC_RELAXED);
}

void async__fd_note_local(long fd)
{
	if (fd >= 0 && fd < ASYNC__FDL_MAX)
		__atomic_store_n(&async__fdl[fd], 1, __ATOMIC_RELAXED);
}

bool async__fd_known_local(long fd)
{
	return fd >= 0 && fd < ASYNC__FDL_MAX &&
	       __atomic_load_n(&async__fdl[fd], __ATOMIC_RELAXED);
}

int async__fd_local_remembered(int fd)
{
	if (async__fd_known_local(fd))
		return 1;
	int l = async__fd_local(fd);
	if (l == 1)
		async__fd_note_local(fd);
	return l;
}

int async__fd_local(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID,
		  &stx) < 0)
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return 0;
	int l = async__mnt_find(stx.stx_mnt_id);
	if (l >= 0)
		return l;
	l = async__mnt_probe(stx.stx_mnt_id);
	if (l < 0)
		return l;
	async__mnt_add(stx.stx_mnt_id, l);
	return l;
}

unsigned long long async__open_nowait_flags(unsigned long long flags)
{
	/* O_PATH calls no ->open; a directory's cannot wait */
	return flags & (O_PATH | O_DIRECTORY) ? flags : flags | O_NONBLOCK;
}

bool async__open_nowait_refused(long err, unsigned long long flags)
{
	return err == -ENXIO && !(flags & (O_PATH | O_DIRECTORY | O_NONBLOCK));
}

int async__open_nowait_keep(int fd, unsigned long long flags, unsigned mode)
{
	struct stat st;

	/* (asked for O_NONBLOCK: the open could not wait, whatever it found) */
	if (flags & (O_PATH | O_DIRECTORY | O_NONBLOCK))
		return 0;
	if (!mode) {
		if (fstat(fd, &st) < 0) {
			close(fd);
			return 1;
		}
		mode = st.st_mode;
	}
	if (!S_ISREG(mode) && !S_ISDIR(mode)) {
		close(fd);
		return 1;
	}
	/* (on a regular file it would make io_uring's reads fail with
	 * -EAGAIN instead of waiting) */
	if (fcntl(fd, F_SETFL, (int)flags) < 0) {
		close(fd);
		return 1;
	}
	return 0;
}
