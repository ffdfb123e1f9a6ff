#include "first.h"

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/sent.h"
#include "proto/errpage.h"
#include "proto/httpdate.h"
#include "proto/range.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define ALLOW "GET, HEAD, OPTIONS"

/* The page's body, as the access log counts it: none for HEAD. */
static uint32_t page_len(const struct fsd_req *rq, unsigned status)
{
	size_t len;

	proto_errpage(status, &len);
	return rq->method == FSD_M_HEAD ? 0 : (uint32_t)len;
}

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
	rq->page_len = page_len(rq, status);
}

int fsd_req_refuse_raw(struct fsd_req *rq, unsigned status)
{
	const union MHD_ConnectionInfo *ci;
	char head[320], date[PROTO_HTTPDATE_LEN];
	size_t blen;
	const char *body = proto_errpage(status, &blen);
	const char *reason = MHD_get_reason_phrase_for(status);

	if (MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION))
		return -EPROTONOSUPPORT;
	ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || proto_httpdate_format(time(NULL), date) < 0)
		return -EINVAL;
	int n = snprintf(head, sizeof head, "HTTP/1.1 %u %s\r\n"
	                 "Date: %s\r\nServer: fileserverd/" PACKAGE_VERSION "\r\n"
	                 "Content-Type: text/html; charset=utf-8\r\n"
	                 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	                 status, reason, date, blen);
	if (n < 0 || (size_t)n >= sizeof head)
		return -EINVAL;
	struct iovec iov[2] = { { head, (size_t)n }, { (void *)body, blen } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = rq->method == FSD_M_HEAD ? 1 : 2 };
	/* a fresh socket's buffer takes a page this small whole */
	if (sendmsg(ci->connect_fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		return -errno;
	rq->status = status;
	rq->body_len = 0;
	rq->page_len = page_len(rq, status);
	rq->close = true;
	return 0;
}

void fsd_req_redirect(struct fsd_req *rq, unsigned status, const char *location)
{
	struct MHD_Response *resp = page(status);

	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
	fsd_req_respond(rq, status, resp, 0);
	if (resp && rq->resp == resp)
		rq->page_len = page_len(rq, status);
}

void fsd_req_options(struct fsd_req *rq)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);

	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, ALLOW);
	fsd_req_respond(rq, MHD_HTTP_NO_CONTENT, resp, 0);
}

void fsd_resp_common(struct MHD_Response *resp)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_SERVER, "fileserverd/" PACKAGE_VERSION);
}

enum proto_cond fsd_req_cond(const struct fsd_req *rq, const char *etag,
                             time_t mtime)
{
	/* The cache-hit path: no clock read when there is nothing to test. */
	if (!rq->h.if_match && !rq->h.if_none_match &&
	    !rq->h.if_modified_since && !rq->h.if_unmodified_since)
		return PROTO_COND_PROCEED;
	struct proto_cond_req cr = {
		.get_or_head = rq->method == FSD_M_GET || rq->method == FSD_M_HEAD,
		.if_match = rq->h.if_match,
		.if_none_match = rq->h.if_none_match,
		.if_modified_since = rq->h.if_modified_since,
		.if_unmodified_since = rq->h.if_unmodified_since,
	};
	return proto_cond_eval(&cr, etag, mtime, time(NULL));
}

void fsd_resp_validators(struct MHD_Response *resp, const struct fsd_validators *v)
{
	if (v->lastmod[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, v->lastmod);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, v->etag);
	if (v->vary)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
}

/* Never called: libmicrohttpd sends no body with a 304. */
static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	(void)pos;
	(void)buf;
	(void)max;
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

bool fsd_req_preconditions(struct fsd_req *rq, const struct fsd_validators *v,
                           time_t mtime, uint64_t len)
{
	struct MHD_Response *resp;

	switch (fsd_req_cond(rq, v->etag, mtime)) {
	case PROTO_COND_NOT_MODIFIED:
		/* libmicrohttpd writes a 304's Content-Length from the
		 * response's size: the 200's length, or none at all (RFC 9110
		 * 8.6), never the 0 of an empty buffer. */
		resp = MHD_create_response_from_callback(len, 4096, no_body, NULL, NULL);
		if (resp)
			fsd_resp_validators(resp, v);
		fsd_req_respond(rq, MHD_HTTP_NOT_MODIFIED, resp, 0);
		return true;
	case PROTO_COND_PRECONDITION_FAILED:
		fsd_req_error(rq, 412);
		return true;
	case PROTO_COND_PROCEED:
		break;
	}
	return false;
}

void fsd_resp_content_range(struct MHD_Response *resp,
                            const struct proto_range *r, uint64_t size)
{
	char v[80];

	proto_range_content_range(v, sizeof v, r, size);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, v);
}

void fsd_req_respond(struct fsd_req *rq, unsigned status,
                     struct MHD_Response *resp, uint64_t body_len)
{
	if (rq->abandoned || rq->resp) {
		/* Already answered (deadline passed): the late result is dropped. */
		if (resp)
			MHD_destroy_response(resp);
		return;
	}
	if (!resp) {
		fsd_req_error(rq, 500);
		return;
	}
	fsd_resp_common(resp);
	rq->resp = resp;
	rq->status = status;
	rq->body_len = rq->method == FSD_M_HEAD ? 0 : body_len;
	fsd_sent_respond(rq, resp, status);
}

void fsd_req_respond_shared(struct fsd_req *rq, unsigned status,
                            struct MHD_Response *resp, uint64_t body_len,
                            void (*put)(void *arg), void *arg)
{
	if (rq->abandoned || rq->resp) {
		put(arg);
		return;
	}
	rq->resp = resp;
	rq->resp_put = put;
	rq->resp_arg = arg;
	rq->status = status;
	rq->body_len = rq->method == FSD_M_HEAD ? 0 : body_len;
}

/* Maps a lookup error to a status; anything unexpected is logged with
 * the path and errno (the log escapes it) and becomes a bare 500 (never
 * shown to clients). */
void fsd_req_fs_error(struct fsd_req *rq, const char *what, const char *path, int err)
{
	unsigned status;

	switch (-err) {
	case ENOENT: case ENOTDIR: case EXDEV:
		status = 404;
		break;
	case EACCES: case EPERM:
		/* a file the service user may not read: worth a look */
		fsd_log_fs(LOG_NOTICE, what, path, err);
		status = 403;
		break;
	case ELOOP: case ENXIO:
		/* the symlinks policy, or a FIFO, socket or device: refused
		 * by rule */
		fsd_log_fs(LOG_INFO, what, path, err);
		status = 403;
		break;
	case ENAMETOOLONG:
		status = 414;
		break;
	case ECANCELED: case EAGAIN:
		status = 503;
		break;
	case EMFILE: case ENFILE:
		/* Out of descriptors is a load condition, not a fault. */
		fsd_log_fs(LOG_WARNING, what, path, err);
		status = 503;
		break;
	default:
		fsd_log_fs(LOG_ERR, what, path, err);
		status = 500;
	}
	fsd_req_error(rq, status);
}
