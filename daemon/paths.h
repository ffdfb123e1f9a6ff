/*
 * Where a served path may lead: the symlinks policy of [server]
 * (symlinks = beneath | follow | if_owner_match | never, allow = ...),
 * resolved with the lookup engine on the request's fibril (a symlink is
 * followed by a lookup that stops at it, never by a blocking realpath).
 *
 *   beneath         the kernel follows symlinks that stay beneath the
 *                   root (RESOLVE_BENEATH); one that leaves it is -EXDEV
 *                   unless, with allow trees, its target (made absolute
 *                   from its text) lies in one: the rest of the path is
 *                   then resolved beneath that tree, RESOLVE_BENEATH its
 *                   own, so the tree's own symlinks may not leave it.
 *   follow          followed wherever they lead.
 *   if_owner_match  each symlink on the way is followed only when its
 *                   owner owns what its target resolves to (Apache's
 *                   SymLinksIfOwnerMatch, nginx's if_not_owner): -EACCES
 *                   otherwise; no containment besides that.
 *   never           any symlink on the path is -ELOOP.
 *
 * The URL path never climbs above the root ("..": proto/url.c), so
 * under follow and if_owner_match only symlinks lead outside it.
 */
#ifndef FSD_PATHS_H
#define FSD_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#include <fibril/lookup.h>

#include "conf/conf.h"

struct fsd_server;
struct fsd_req;

/* One allow tree, opened with the configuration. */
struct fsd_allow {
	lk_root_t *root;        /* RESOLVE_BENEATH this tree */
	const char *path;       /* as configured (the conf's string) */
	char *real;             /* its path with its own symlinks resolved */
};

/* The roots a server resolves through besides its lkroot and
 * lknolinks: opened with its configuration, read-only afterwards,
 * shared by its workers. */
struct fsd_paths {
	lk_root_t *any;         /* the root, following symlinks anywhere */
	lk_root_t *sys;         /* "/", likewise (if_owner_match) */
	size_t nallow;
	struct fsd_allow *allow;
};

/* Opens what s->conf asks for, after s->lkroot and s->lknolinks
 * (servers.c, at start-up and at each reload). Problems go through @err
 * as "file:line: allow PATH: reason". Returns the number of errors; on
 * errors what was opened stays for fsd_paths_close(). */
int fsd_paths_open(struct fsd_server *s, conf_err_fn *err, void *arg);
void fsd_paths_close(struct fsd_server *s);

enum fsd_where {
	FSD_AT_PLAIN = 0,       /* beneath the root, no symlink on the way */
	FSD_AT_LINKED,          /* through symlinks (anywhere the policy allows) */
	FSD_AT_ALLOW,           /* through a symlink into an allow tree */
};

/* A path resolved under the policy. */
struct fsd_found {
	struct lk_file f;       /* O_PATH of the file and its statx */
	lk_root_t *root;        /* open it again from this root (the server's) */
	char *path;             /* by this path (malloc'd) */
	enum fsd_where where;
	const struct fsd_allow *tree;   /* FSD_AT_ALLOW: which */
};

/* Resolves @rel (a normalised URL path relative to the root: no ".."
 * segment) under the policy, on the request's fibril. Returns 0 and
 * *out (fsd_found_release() it), or -errno: -EXDEV a symlink leaves the
 * root or its tree (404), -ELOOP refused by never or a loop (403),
 * -EACCES owners differ under if_owner_match (403), else the lookup's. */
int fsd_paths_resolve(struct fsd_req *rq, const char *rel, struct fsd_found *out);

/* Closes the fd (if still there) and frees the path. */
void fsd_found_release(struct fsd_found *fo);

/* The path that the [dir] and dotfiles rules judge for @fo (not for
 * FSD_AT_PLAIN, whose URL path is it), from /proc: when it lies beneath
 * the root, its URL form ("/a/b", "/" the root) and 1; else (an allow
 * tree, or outside the root) the path beneath its tree ("/x" for an
 * allow tree) or the absolute one, and 0 (only dotfiles apply). -EACCES
 * (logged) when it cannot be told. */
int fsd_paths_judged(const struct fsd_found *fo, char *out, size_t outsz);

/* The root and path a listing of the directory @fo scans, so that the
 * targets it shows (symlink_targets = beneath) are those that resolve
 * beneath the root, or beneath the allow tree of a directory in one;
 * none under symlinks = never. @judged and @beneath are what
 * fsd_paths_judged() said (unused for FSD_AT_PLAIN, scanned by @rel). A
 * directory outside the root and its trees (follow, if_owner_match) is
 * scanned as a root of its own, made from @dirfd (duplicated). Returns
 * a reference the caller drops (lk_root_close) and *scanpath (@rel,
 * within @judged, or "."), or NULL and -errno in *err. */
lk_root_t *fsd_paths_scan_root(const struct fsd_found *fo, const char *rel,
                               const char *judged, int beneath, int dirfd,
                               const char **scanpath, int *err);

#endif
