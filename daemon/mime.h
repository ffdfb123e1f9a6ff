/*
 * daemon/mime.h: the content type of a file name (mime.types, loaded by
 * main() into each server before its workers run, read-only afterwards:
 * a reload builds a new table) and the names of precompressed sidecars.
 * A leaf: static.c and the cache both use it.
 */
#ifndef FSD_MIME_H
#define FSD_MIME_H

struct fsd_server;
/* Loads @path into @s (its conf.default_type for names it does not
 * know). 0 or -errno; @s has a table even on failure, unless -ENOMEM. */
int fsd_mime_load(struct fsd_server *s, const char *path);
void fsd_mime_free(struct fsd_server *s);
/* The type of @name in this thread's server (fsd). */
const char *fsd_mime_type(const char *name);

/* Precompressed sidecars, in order of preference: FILE + ext is sent
 * with Content-Encoding: coding (static.c); fcache.c watches the same
 * names. */
struct fsd_sidecar { const char *ext, *coding; };
#define FSD_NSIDECARS 3
extern const struct fsd_sidecar fsd_sidecars[FSD_NSIDECARS];

#endif
