/*
 * daemon/body.h: the bodies of file responses (body.c), for static.c.
 *
 * Bodies up to small_file_max are read into memory (sent with their
 * headers in one write); larger ones go out by sendfile after a
 * read-ahead through the ring, watched while in flight (sent.h); several
 * ranges are read by a content reader (multipart/byteranges).
 */
#ifndef FSD_BODY_H
#define FSD_BODY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/stat.h>

#include <microhttpd.h>

#include "proto/range.h"

struct fsd_req;

/* Body [off, off+len) of @fd (owned from here on: closed on every
 * path). @path (relative to the root) is for the log; @cache_stx, when
 * given, offers the file (the whole of it, whatever the range) to the
 * file cache. NULL: failed (logged when the file system failed). */
struct MHD_Response *fsd_body(struct fsd_req *rq, int fd, uint64_t off,
                              uint64_t len, const char *path,
                              const struct statx *cache_stx);

/* multipart/byteranges of @fd (owned) for the @n ranges @r of a file of
 * @size bytes, each part labelled @ctype. Sets its Content-Type header
 * and *total, the body length. NULL: out of memory. */
struct MHD_Response *fsd_body_multipart(struct fsd_req *rq, int fd,
                                        const char *path, uint64_t size,
                                        const char *ctype,
                                        const struct proto_range *r, unsigned n,
                                        uint64_t *total);

#endif
