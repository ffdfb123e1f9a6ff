/*
 * daemon/mime.h: the content type of a file name (mime.types, loaded at
 * start-up by main() before the workers run, read-only afterwards) and
 * the names of precompressed sidecars. A leaf: static.c and the cache
 * both use it.
 */
#ifndef FSD_MIME_H
#define FSD_MIME_H

/* Loads @path (conf.default_type for names it does not know). 0 or
 * -errno. */
int fsd_mime_load(const char *path);
const char *fsd_mime_type(const char *name);

/* Precompressed sidecars, in order of preference: FILE + ext is sent
 * with Content-Encoding: coding (static.c); fcache.c watches the same
 * names. */
struct fsd_sidecar { const char *ext, *coding; };
#define FSD_NSIDECARS 3
extern const struct fsd_sidecar fsd_sidecars[FSD_NSIDECARS];

#endif
