/*
 * proto/errpage.h: status reason phrases and small HTML error bodies.
 * Static data, any thread. The bodies never carry request data or
 * server internals (paths, errno): those go to the error log.
 */
#ifndef PROTO_ERRPAGE_H
#define PROTO_ERRPAGE_H

#include <stddef.h>

/**
 * A complete HTML body for an error status (400 403 404 405 412 413 414
 * 416 417 431 500 501 503 505; any other status gets a generic "4xx
 * Client Error" or "5xx Server Error" page). Static storage: it can be handed to libmicrohttpd with
 * MHD_RESPMEM_PERSISTENT. *len receives its length. Content-Type:
 * "text/html; charset=utf-8".
 */
const char *proto_errpage(unsigned status, size_t *len);

#endif
