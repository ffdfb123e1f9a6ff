/*
 * daemon/body.h: the bodies of file responses (body.c), for static.c,
 * and what request.c asks of them when a request ends.
 *
 * Bodies up to small_file_max are read into memory (sent with their
 * headers in one write); larger ones go out by sendfile after a
 * read-ahead through the ring; several ranges are read by a content
 * reader (multipart/byteranges).
 *
 * A file that shrinks under a sendfile body would stall libmicrohttpd
 * 0.9.75 (sendfile returns 0, it waits for a write readiness that never
 * comes, until the idle timeout): every such body in flight is watched
 * (once a second, the size of the open file against the end of the
 * range) and a shrunk one is logged and its connection shut down, which
 * makes libmicrohttpd close it at once.
 *
 * Bytes sent, for the access log: libmicrohttpd reports none. A body
 * sent whole (termination "completed") is its length. For one cut short
 * the count comes from the socket: the bytes written to it since the
 * response was made (TCP_INFO bytes acknowledged plus SIOCOUTQ, those
 * queued and not acknowledged), less the response header's length,
 * computed from its fields as libmicrohttpd 0.9.75 writes them.
 */
#ifndef FSD_BODY_H
#define FSD_BODY_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/stat.h>

#include <microhttpd.h>

#include "proto/range.h"

struct fsd_req;

/* Body [off, off+len) of @fd (owned from here on: closed on every
 * path). @path (relative to the root) is for the log; @cache_stx, when
 * given, offers a small body to the small-file cache. NULL: failed
 * (logged when the file system failed). */
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

/* request.c, as @resp becomes rq's answer: notes the header's length
 * when the body is to be counted. */
void fsd_body_respond(struct fsd_req *rq, struct MHD_Response *resp,
                      unsigned status);

/* request.c, when the request ends (@conn still open): drops the watch
 * and, if the body was cut short, sets rq->body_len to what was sent. */
void fsd_body_end(struct fsd_req *rq, struct MHD_Connection *conn,
                  enum MHD_RequestTerminationCode toe);

#endif
