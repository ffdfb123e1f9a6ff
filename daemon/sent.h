/*
 * daemon/sent.h: what left on the socket (sent.c), for the access log,
 * and the sendfile bodies in flight.
 *
 * Bytes sent: libmicrohttpd reports none. A body sent whole
 * (termination "completed") is its length. For one cut short the count
 * comes from the socket: the bytes written to it since the response was
 * made (from one TCP_INFO: bytes sent once plus those not sent yet),
 * less the response header's length, computed from its
 * fields as libmicrohttpd 0.9.75 writes them. Under TLS the socket
 * carries records: their overhead is taken off (tls.h), which makes the
 * count exact to within one record's overhead (about 22 bytes).
 *
 * A file that shrinks under a sendfile body would stall libmicrohttpd
 * 0.9.75 (sendfile returns 0, it waits for a write readiness that never
 * comes, until the idle timeout): every such body in flight is watched
 * (once a second, the size of the open file against the end of the
 * range) and a shrunk one is logged and its connection shut down, which
 * makes libmicrohttpd close it at once. A body sent from a mapping of
 * the file is watched too: where whole pages went, the kernel's copy
 * fails and the connection ends at once; in the page the file now ends
 * in, the copy reads zeros and the response ends as if whole. The end
 * of the request logs either.
 */
#ifndef FSD_SENT_H
#define FSD_SENT_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

struct fsd_req;

/* body.c, before making a GET body: it is counted if it ends early
 * (on the request fibril, the connection between responses). */
void fsd_sent_count(struct fsd_req *rq);
/* body.c and the file cache, for a body sent from @fd (dup'ed here) by
 * sendfile or, @mapped, from a mapping of it, which must stay at least
 * @end bytes long; @path is for the log. */
void fsd_sent_watch(struct fsd_req *rq, int fd, uint64_t end, const char *path,
                    bool mapped);

/* respond.c, as @resp becomes rq's answer: notes the header's length
 * when the body is to be counted. */
void fsd_sent_respond(struct fsd_req *rq, struct MHD_Response *resp,
                      unsigned status);

/* request.c, when the request ends (@conn still open): drops the watch
 * and, if the body was cut short, sets rq->body_len to what was sent. */
void fsd_sent_end(struct fsd_req *rq, struct MHD_Connection *conn,
                  enum MHD_RequestTerminationCode toe);

#endif
