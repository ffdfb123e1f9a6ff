#include "first.h"

#include "daemon/sent.h"
#include "daemon/daemon.h"
#include "daemon/listing.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/reqhdr.h"
#include "daemon/status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fibril/async.h>
#include <fibril/async_event.h>
#include <fibril/lookup.h>
#include <fibril/fibril.h>

/*
 * Request life cycle (docs/DESIGN.md, "Request flow"):
 *
 *   URI log callback    allocates the fsd_req (ref: connection).
 *   1st handler call    copies the headers, validates, starts the fibril
 *                       at once (ref: fibril). Nothing is queued here:
 *                       libmicrohttpd 0.9.75 answers "Connection: close"
 *                       to a response queued on the first call, except
 *                       for framing errors where closing is the point.
 *   2nd handler call    fibril done → queue; else suspend and track the
 *                       deadline.
 *   fibril finishes     state DONE; resume if suspended → 3rd call queues.
 *   completed callback  access log; drops the connection's ref.
 */

void fsd_req_cancel_calls(struct fsd_req *rq)
{
	if (rq->group)
		lk_group_cancel(rq->group);
	if (rq->cookie > 0)
		async_cancel(rq->cookie);
}

/* Lets go of rq->resp: ours to destroy, or a shared one to put back. */
static void resp_release(struct fsd_req *rq)
{
	if (rq->resp_put)
		rq->resp_put(rq->resp_arg);
	else if (rq->resp)
		MHD_destroy_response(rq->resp);
	rq->resp = NULL;
	rq->resp_put = NULL;
	rq->resp_arg = NULL;
}

static void req_unref(struct fsd_req *rq)
{
	if (--rq->refs)
		return;
	fsd_listing_detach(rq);
	if (rq->group)
		lk_group_free(rq->group);
	resp_release(rq);
	free(rq->hdr_mem);
	if (rq->method_owned)
		free((char *)rq->method_str);
	free(rq);
}

void *fsd_uri_log_cb(void *cls, const char *uri, struct MHD_Connection *c)
{
	size_t len = strlen(uri);
	/* One allocation with the target: this runs for every request. */
	struct fsd_req *rq = calloc(1, sizeof *rq + len + 1);

	(void)c;
	if (!rq)
		return NULL;
	rq->w = cls;
	rq->refs = 1;
	rq->uri = rq->uri_mem;
	memcpy(rq->uri_mem, uri, len + 1);
	rq->start_s = (int64_t)time(NULL);
	rq->start_ns = fibril_now_ns();
	return rq;
}

static void client_addr(struct fsd_req *rq, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (!sa)
		return;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		          rq->addr, sizeof rq->addr);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		          rq->addr, sizeof rq->addr);
}

static enum MHD_Result queue(struct fsd_req *rq)
{
	enum MHD_Result r;

	if (!rq->resp)
		fsd_req_error(rq, 500);
	if (!rq->resp)
		return MHD_NO;  /* out of memory: MHD closes the connection */
	/* (a shared response is never used for a request that closes) */
	if (rq->close && !rq->resp_put)
		MHD_add_response_header(rq->resp, MHD_HTTP_HEADER_CONNECTION, "close");
	r = MHD_queue_response(rq->conn, rq->status, rq->resp);
	/* error pages say body_len 0: their header is not held */
	fsd_conn_sending(rq->conn, r == MHD_YES && rq->method == FSD_M_GET &&
	                 rq->status >= 200 && rq->status != 204 &&
	                 rq->status != 304 ? rq->body_len : 0);
	resp_release(rq);
	rq->state = RQ_QUEUED;
	return r;
}

static void req_fibril(void *arg)
{
	struct fsd_req *rq = arg;

	fsd_static_handle(rq);
	if (!rq->resp && !rq->abandoned)
		fsd_req_error(rq, 500);
	if (!rq->abandoned) {
		rq->state = RQ_DONE;
		if (rq->suspended) {
			rq->suspended = false;
			fsd_worker_untrack(rq->w, rq);
			MHD_resume_connection(rq->conn);
			fsd_worker_kick(rq->w);
		}
	}
	req_unref(rq);
}

void fsd_req_abandon(struct fsd_req *rq, unsigned status)
{
	fsd_worker_untrack(rq->w, rq);
	/* Its pending calls complete with -ECANCELED (or their own
	 * result); it then finishes, and its answer is dropped. */
	fsd_req_cancel_calls(rq);
	fsd_req_error(rq, status);
	rq->abandoned = true;
	rq->state = RQ_DONE;
	if (rq->suspended) {
		rq->suspended = false;
		MHD_resume_connection(rq->conn);
		fsd_worker_kick(rq->w);
	}
}

/* Sets rq->method and rq->method_str (a copy only for other methods). */
static int parse_method(struct fsd_req *rq, const char *m)
{
	static const struct { const char *s; enum fsd_method m; } known[] = {
		{ "GET", FSD_M_GET }, { "HEAD", FSD_M_HEAD }, { "OPTIONS", FSD_M_OPTIONS },
	};

	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		if (!strcmp(m, known[i].s)) {
			rq->method = known[i].m;
			rq->method_str = known[i].s;
			return 0;
		}
	rq->method = FSD_M_OTHER;
	rq->method_str = strdup(m);
	if (!rq->method_str)
		return -ENOMEM;
	rq->method_owned = true;
	return 0;
}

enum MHD_Result fsd_access_cb(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
	struct fsd_req *rq = *con_cls;
	int r;

	(void)upload_data;
	if (!rq) {
		rq = fsd_uri_log_cb(cls, url, conn);
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
	}
	switch (rq->state) {
	case RQ_NEW:
		rq->conn = conn;
		fsd_conn_head_done(conn);
		if (parse_method(rq, method) < 0)
			return MHD_NO;
		/* (from here on the state leaves RQ_NEW) */
		fsd_m_request_start();
		size_t vl = strnlen(version, sizeof rq->version - 1);
		memcpy(rq->version, version, vl);
		rq->version[vl] = 0;
		if (fsd_access_log_enabled())
			client_addr(rq, conn);
		r = fsd_reqhdr_collect(rq, conn, method, url, version);
		/* A head over the limits may have left libmicrohttpd no room
		 * to build an answer's header: on a plain connection the
		 * refusal goes out directly and the connection closes. */
		if ((r == 414 || r == 431) && fsd_req_refuse_raw(rq, (unsigned)r) == 0) {
			rq->state = RQ_QUEUED;
			return MHD_NO;
		}
		if (r) {
			/* Invalid request: framing errors close at once. */
			fsd_req_error(rq, (unsigned)r);
			rq->state = RQ_DONE;
			if (rq->close)
				return queue(rq);
			return MHD_YES;
		}
		/* Neither a status answer nor a cached small file needs a
		 * fibril (nothing can park). */
		if (fsd_status_handle(rq) == 0 || fsd_static_from_cache(rq) == 0) {
			rq->state = RQ_DONE;
			return MHD_YES;
		}
		rq->state = RQ_RUNNING;
		rq->refs++;
		r = fibril_start(NULL, req_fibril, rq, "request");
		if (r < 0) {
			rq->refs--;
			fsd_log(LOG_ERR, "fibril_start: %s", strerror(-r));
			fsd_req_error(rq, 503);
			rq->state = RQ_DONE;
			return MHD_YES;
		}
		if (rq->state == RQ_RUNNING && rq->w->engine)
			async_event_kick(rq->w->engine);
		return MHD_YES;
	case RQ_RUNNING:
		if (*upload_data_size) {
			*upload_data_size = 0;
			return MHD_YES;
		}
		MHD_suspend_connection(conn);
		rq->suspended = true;
		fsd_worker_track(rq->w, rq);
		return MHD_YES;
	case RQ_DONE:
		*upload_data_size = 0;
		return queue(rq);
	case RQ_QUEUED:
		*upload_data_size = 0;
		return MHD_YES;
	}
	return MHD_NO;
}

void fsd_completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	struct fsd_req *rq = *con_cls;

	(void)cls;
	fsd_conn_request_done(conn);
	if (!rq)
		return;
	*con_cls = NULL;
	fsd_listing_detach(rq);
	/* A body cut short is logged with the bytes that left (sent.h). */
	fsd_sent_end(rq, conn, toe);
	if (rq->state != RQ_NEW)
		fsd_m_request_end(rq->state == RQ_QUEUED, rq->method, rq->status,
		                  fibril_now_ns() - rq->start_ns,
		                  rq->body_len + rq->page_len + rq->stream_bytes);
	if (rq->state == RQ_QUEUED)
		fsd_access_log(rq);
	else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		fsd_log(LOG_DEBUG, "request %s ended before a response (%d)",
		        rq->uri ? rq->uri : "?", (int)toe);
	if (rq->state == RQ_RUNNING) {
		/* Connection gone under a running fibril (daemon stop). */
		fsd_worker_untrack(rq->w, rq);
		fsd_req_cancel_calls(rq);
		rq->abandoned = true;
	}
	rq->conn = NULL;
	req_unref(rq);
}
