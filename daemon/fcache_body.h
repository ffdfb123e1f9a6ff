/*
 * daemon/fcache_body.h: the bodies the file cache keeps (fcache_body.c),
 * for fcache.c: a small file's bytes read into a buffer, a large file
 * as a shared mapping of it, or, above FCB_MAP_MAX, the open file.
 */
#ifndef FSD_FCACHE_BODY_H
#define FSD_FCACHE_BODY_H

#include <stddef.h>

#include <microhttpd.h>

/* A file up to this size is mapped (MAP_SHARED, the page cache's own
 * pages) and sent by libmicrohttpd as a buffer: headers and body in one
 * sendmsg, the way small bodies go. Larger ones go by sendfile. */
#define FCB_MAP_MAX (64u << 20)

/* A body shared by the entry and the responses still being sent; MHD
 * calls fcb_blob_unref from the worker's loop, so a plain counter will
 * do. */
struct fcb_blob { unsigned refs; char data[]; };

void fcb_blob_unref(void *blob);

/* Reads @size bytes of the file open as @pfd (O_PATH) into a new blob
 * (one reference), parking the fibril. NULL on a short read or an
 * error. */
struct fcb_blob *fcb_read(int pfd, size_t size);

/* The 200 response of the file open as @fd (owned from here on), @len
 * bytes: a buffer over a shared mapping of it when it is at most
 * FCB_MAP_MAX (*@mapped is then the mapping, which lives as long as
 * the response), else the file itself (*@mapped NULL). NULL: failed. */
struct MHD_Response *fcb_large(int fd, size_t len, const char **mapped);

#endif
