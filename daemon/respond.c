#include "first.h"

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "proto/errpage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLOW "GET, HEAD, OPTIONS"

static struct MHD_Response *page(unsigned status)
{
	size_t len;
	const char *body = proto_errpage(status, &len);
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);

	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
		                        "text/html; charset=utf-8");
	return resp;
}

void fsd_req_error(struct fsd_req *rq, unsigned status)
{
	struct MHD_Response *resp = page(status);

	if (resp && status == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, ALLOW);
	if (resp && status == 503)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (!resp) {
		fsd_log(LOG_ERR, "out of memory for a %u response", status);
		return;
	}
	if (rq->abandoned || rq->resp) {
		MHD_destroy_response(resp);
		return;
	}
	fsd_resp_common(resp);
	rq->resp = resp;
	rq->status = status;
	rq->body_len = 0;
}

void fsd_req_redirect(struct fsd_req *rq, unsigned status, const char *location)
{
	struct MHD_Response *resp = page(status);

	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
	fsd_req_respond(rq, status, resp, 0);
}

void fsd_req_options(struct fsd_req *rq)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);

	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, ALLOW);
	fsd_req_respond(rq, MHD_HTTP_NO_CONTENT, resp, 0);
}
