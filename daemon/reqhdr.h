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
 *  longer be trusted). Worker thread, first access-handler call. */
int fsd_reqhdr_collect(struct fsd_req *rq, struct MHD_Connection *conn);

#endif
