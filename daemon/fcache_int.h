/*
 * Inside the small-file cache: its watches (fcache_watch.c), used by
 * the entries (fcache.c). One inotify instance per worker thread; a
 * watch is shared by every entry that depends on its inode, and indexed
 * by watch descriptor, so an event reaches only those entries. Any
 * change to the mount table of the daemon's namespace counts as an
 * event for every entry. Thread-local, like the cache.
 */
#ifndef FSD_FCACHE_INT_H
#define FSD_FCACHE_INT_H

#include <stdbool.h>
#include <stddef.h>

struct fcw;

/* One entry's dependency on one watched inode: a directory on the
 * entry's path (with the name of the next component in it) or the
 * file itself. */
struct fcw_dep {
	struct fcw_dep *prev, *next;    /* the watch's dependents */
	struct fcw *w;                  /* NULL: not linked */
	void *owner;                    /* the entry, handed back by fire() */
	const char *name;               /* next component; NULL: the file's own watch */
	size_t len;
	bool sidecars;                  /* its sidecar names (FILE.gz...) count too */
};

/* Called for every dependency an event hits, from fcw_sync(); must not
 * unlink dependencies (mark, and drop once fcw_sync returns). */
typedef void (*fcw_fire_fn)(struct fcw_dep *d);

/* Creates this thread's watches: at most @budget inotify watches.
 * Returns 0 or -errno. */
int fcw_init(unsigned budget, fcw_fire_fn fire);
void fcw_fini(void);

/* Links @d to a watch on the inode open as @fd (not O_PATH: directories
 * are asked for their flags), a directory when @dir. Returns 0; -ENOSPC
 * when the budget or the kernel has no watch to spare (free some and
 * retry); -EMEDIUMTYPE for a casefolded directory (names compare by
 * bytes here); or another -errno. */
int fcw_watch(int fd, bool dir, struct fcw_dep *d);

/* Unlinks @d (if linked); the last one out removes the watch. */
void fcw_unwatch(struct fcw_dep *d);

/* Applies what happened since the last call: fire() for each dependency
 * an event hit. Returns 1 when every entry must go (queue overflow, a
 * mount table change, a failed read), else 0. Unless @force, costs no
 * system call when nothing happened (see fcache_watch.c). */
int fcw_sync(bool force);

/* Watches held now. */
unsigned fcw_count(void);

#endif
