/*
 * daemon/status.h: the status endpoints (status.c).
 */
#ifndef FSD_STATUS_H
#define FSD_STATUS_H

struct fsd_req;

/* In the access handler, once the request is checked: on a listener
 * with the `status` flag, answers /metrics, /status and /healthz (and,
 * on a status_listen one, everything else with 404) and returns 0;
 * otherwise returns 1 and leaves @rq alone. */
int fsd_status_handle(struct fsd_req *rq);

#endif
