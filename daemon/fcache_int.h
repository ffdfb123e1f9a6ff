/*
 * The watches of the small-file cache (fcache_watch.c), used by its
 * entries (fcache.c) and by the listing cache (lcache.c). One inotify instance per worker thread; a
 * watch is shared by every entry that depends on its inode, and indexed
 * by watch descriptor, so an event reaches only those entries. Any
 * change to the mount table of the daemon's namespace counts as an
 * event for every entry. Thread-local, like the cache.
 */
#ifndef FSD_FCACHE_INT_H
#define FSD_FCACHE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	void (*fire)(struct fcw_dep *d);/* NULL: the fire() given to fcw_init() */
};

/* Called for every dependency an event hits, from fcw_sync(); must not
 * unlink dependencies (mark, and drop once fcw_sync returns). */
typedef void (*fcw_fire_fn)(struct fcw_dep *d);
/* Inside fire(): the event's inotify mask, and the name it carries (an
 * entry of the watched directory), or NULL for one on the watched inode
 * itself. */
void fcw_event(uint32_t *mask, const char **name);

/* Creates this thread's watches: at most @budget inotify watches. The
 * small-file cache and the listing cache share them: each calls
 * fcw_init() (the first one sets the budget) and fcw_fini() once.
 * Returns 0 or -errno. */
int fcw_init(unsigned budget, fcw_fire_fn fire);
void fcw_fini(void);

/* Links @d to a watch on the inode open as @fd (not O_PATH: directories
 * are asked for their flags), a directory when @dir. Returns 0; -ENOSPC
 * when the budget or the kernel has no watch to spare (free some and
 * retry); -EMEDIUMTYPE for a casefolded directory (names compare by
 * bytes here); or another -errno. */
int fcw_watch(int fd, bool dir, struct fcw_dep *d);

/* For a cached listing, on any thread (it touches nothing of this
 * thread's): adds to the inotify instance @ifd (fcw_ifd()) a watch on
 * entry @name of the directory open as @dirfd (not followed if a
 * symlink): its own attributes, whatever name they change through,
 * and, for a directory, its entries coming and going (its mtime and
 * size). Returns the watch descriptor, to hand to fcw_link() on the
 * watches' own thread; -ENOSPC when the kernel has no watch to spare,
 * or another -errno. @dirfd AT_FDCWD: @name is in the calling thread's
 * working directory (a thread of its own after unshare(CLONE_FS) and
 * fchdir(): half the cost of a path through /proc/self/fd). */
int fcw_add_entry_watch(int ifd, int dirfd, const char *name);
/* The same for the directory open as @dirfd itself, as a listing
 * watches it: its entries coming and going and changing (adding it
 * walks the directory's cached entries: 9 ms for 100,000, off the
 * worker so). */
int fcw_add_listing_watch(int ifd, int dirfd);
/* The inotify instance, for fcw_add_entry_watch(). */
int fcw_ifd(void);

/* Watches added on another thread. Between fcw_foreign_begin() and
 * the matching fcw_foreign_end() (they nest), no watch is removed (one
 * left without dependents is removed at the last end), and events on a
 * descriptor not linked here are counted (fcw_foreign_events()): they
 * may be the new watches' own, before fcw_link() made them known. */
void fcw_foreign_begin(void);
void fcw_foreign_end(void);
unsigned long fcw_foreign_events(void);
/* Links @d to the watch @wd that fcw_add_entry_watch() returned (the
 * budget is not checked: see fcw_count()). 0 or -ENOMEM. */
int fcw_link(int wd, struct fcw_dep *d);

/* Unlinks @d (if linked); the last one out removes the watch. */
void fcw_unwatch(struct fcw_dep *d);

/* Applies what happened since the last call: fire() for each dependency
 * an event hit. Returns 1 when every entry must go (queue overflow, a
 * mount table change, a failed read), else 0. Unless @force, costs no
 * system call when nothing happened (see fcache_watch.c). */
int fcw_sync(bool force);

/* Watches held now. */
unsigned fcw_count(void);
/* Watches no entry needs, waiting for fcw_sync() to remove them. */
unsigned fcw_unused(void);

/* The watches a worker's caches may hold: fcache_watches, or half of
 * what the kernel lets this user watch, shared by the workers (other
 * programs of the same user need some). */
unsigned fcw_default_budget(void);
/* The budget given to the first fcw_init() (read once: the /proc file
 * fcw_default_budget() reads is not for every request); 0 before. */
unsigned fcw_budget(void);

/* Counts the times fcw_sync() returned 1: a cache that did not make
 * that call itself drops everything when it sees this change. */
unsigned long fcw_epoch(void);

#endif
