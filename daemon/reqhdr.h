/*
 * Request headers: copied out of libmicrohttpd into the request (so a
 * fibril that outlives its connection reads only its own memory) and
 * checked as RFC 9112 requires where libmicrohttpd is lax
 * (docs/DESIGN.md, "Request validation").
 */
#ifndef FSD_REQHDR_H
#define FSD_REQHDR_H

#include "daemon/daemon.h"

/** Fills rq->h from @conn and validates the request. Returns 0, or the
 *  HTTP status to answer with (rq->close set when the framing can no
 *  longer be trusted). @method, @url, @version: the access handler's
 *  arguments, which point into libmicrohttpd's read buffer (checked for
 *  NUL bytes there). Worker thread, first access-handler call. */
int fsd_reqhdr_collect(struct fsd_req *rq, struct MHD_Connection *conn,
                       const char *method, const char *url,
                       const char *version);

/** MHD_OPTION_NOTIFY_CONNECTION: answers 400 and closes a connection
 *  whose first bytes cannot start an HTTP request, or on an ssl
 *  listener a TLS handshake. Worker thread. */
void fsd_conn_notify_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);

#endif
