#include "first.h"

/*
 * The status endpoints of a listener with the `status` flag (or of the
 * status_listen one): /metrics (Prometheus text exposition format
 * 0.0.4), /status (the same as JSON) and /healthz (200 while the worker
 * accepts, 503 once it drains). Answered in the access handler, like a
 * cache hit: no fibril, no file system.
 */

#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/status.h"
#include "proto/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether a listener of this thread's server has the flag: asked once
 * per thread (a worker's server never changes). -1: not asked yet. */
static __thread int st_any = -1;

static const char *const method_names[FSD_M_NMETHODS] = {
	"other", "GET", "HEAD", "OPTIONS",
};
static const char *const limit_names[FSD_M_NLIMITS] = {
	"max_connections", "max_connections_per_ip", "open_files",
	"max_listings", "request_timeout",
};
static const char *const close_names[FSD_M_NCLOSES] = {
	"header_timeout", "min_send_rate",
};

#define C(s, f) ((s)->c[FSD_M_C(f)])
#define G(s, f) ((s)->g[FSD_M_G(f)])

static int head(struct proto_buf *b, const char *name, const char *type,
                const char *help)
{
	return proto_buf_printf(b, "# HELP fileserverd_%s %s\n# TYPE fileserverd_%s %s\n",
	                        name, help, name, type);
}

/* One metric with a single sample and no labels. */
static int one(struct proto_buf *b, const char *name, const char *type,
               const char *help, uint64_t v)
{
	return head(b, name, type, help) |
	       proto_buf_printf(b, "fileserverd_%s %llu\n", name, (unsigned long long)v);
}

/* One metric with a sample per value of one label: @names[i], @v[i]. */
static int by_label(struct proto_buf *b, const char *name, const char *type,
                    const char *help, const char *label,
                    const char *const *names, const uint64_t *v, size_t n)
{
	int r = head(b, name, type, help);

	for (size_t i = 0; i < n; i++)
		r |= proto_buf_printf(b, "fileserverd_%s{%s=\"%s\"} %llu\n", name, label,
		                      names[i], (unsigned long long)v[i]);
	return r;
}

static int prom_requests(struct proto_buf *b, const struct fsd_m_sum *s)
{
	int r = head(b, "requests_total", "counter",
	             "Requests answered, by method and status class.");

	for (size_t m = 0; m < FSD_M_NMETHODS; m++)
		for (size_t k = 0; k < FSD_M_NCLASSES; k++)
			r |= proto_buf_printf(b, "fileserverd_requests_total{method=\"%s\","
			                      "status=\"%zuxx\"} %llu\n", method_names[m], k + 1,
			                      (unsigned long long)s->c[FSD_M_C(requests) +
			                                               m * FSD_M_NCLASSES + k]);
	r |= head(b, "request_duration_seconds", "histogram",
	          "Time from a request's head to its whole response written.");
	uint64_t cum = 0;
	for (size_t i = 0; i <= FSD_M_NBOUNDS; i++) {
		char le[32];
		cum += s->c[FSD_M_C(latency) + i];
		if (i < FSD_M_NBOUNDS)
			snprintf(le, sizeof le, "%g", fsd_m_bounds[i]);
		else
			strcpy(le, "+Inf");
		r |= proto_buf_printf(b, "fileserverd_request_duration_seconds_bucket"
		                      "{le=\"%s\"} %llu\n", le, (unsigned long long)cum);
	}
	r |= proto_buf_printf(b, "fileserverd_request_duration_seconds_sum %.9f\n"
	                      "fileserverd_request_duration_seconds_count %llu\n",
	                      (double)C(s, latency_ns) / 1e9, (unsigned long long)cum);
	r |= one(b, "requests_in_flight", "gauge",
	         "Requests read and not yet completed.", G(s, inflight));
	r |= one(b, "sent_bytes_total", "counter",
	         "Response body bytes sent (as the access log counts them).",
	         C(s, sent_bytes));
	return r;
}

static int prom_conns(struct proto_buf *b, const struct fsd_m_sum *s)
{
	int r = one(b, "connections_open", "gauge", "Connections open.", G(s, conns));

	r |= one(b, "connections_accepted_total", "counter",
	         "Connections accepted and handed to the HTTP engine.", C(s, accepted));
	r |= by_label(b, "limit_rejections_total", "counter",
	              "503 answers and refused connections, by the limit reached.",
	              "limit", limit_names, &s->c[FSD_M_C(limited)], FSD_M_NLIMITS);
	r |= by_label(b, "connections_closed_total", "counter",
	              "Connections closed by the server on a deadline, by reason.",
	              "reason", close_names, &s->c[FSD_M_C(closed)], FSD_M_NCLOSES);
	return r;
}

static const char *const backend_names[2] = { "uring", "pool" };

static int prom_async(struct proto_buf *b, const struct fsd_m_sum *s)
{
	uint64_t submitted[2];

	for (size_t k = 0; k < 2; k++)
		submitted[k] = s->c[FSD_M_C(async_sync) + k] + s->c[FSD_M_C(async_async) + k];
	int r = by_label(b, "async_submitted_total", "counter",
	                 "System calls submitted to the async engine, by the backend "
	                 "meant to run them.", "backend", backend_names, submitted, 2);
	r |= head(b, "async_calls_total", "counter",
	          "System calls submitted, by backend and by completion: sync "
	          "(inside the submitting call) or async (later, the fibril parked).");
	for (size_t k = 0; k < 2; k++)
		r |= proto_buf_printf(b, "fileserverd_async_calls_total{backend=\"%s\","
		                      "completion=\"sync\"} %llu\n"
		                      "fileserverd_async_calls_total{backend=\"%s\","
		                      "completion=\"async\"} %llu\n", backend_names[k],
		                      (unsigned long long)s->c[FSD_M_C(async_sync) + k],
		                      backend_names[k],
		                      (unsigned long long)s->c[FSD_M_C(async_async) + k]);
	r |= by_label(b, "async_sync_inline_total", "counter",
	              "Of the sync ones, those done by a fast path that cannot block "
	              "(the rest ran on the worker at the engine's limit).",
	              "backend", backend_names, &s->c[FSD_M_C(async_inline)], 2);
	r |= one(b, "async_calls_in_flight", "gauge",
	         "Asynchronous system calls pending.", G(s, async_inflight));
	r |= by_label(b, "async_queue_depth", "gauge",
	              "Calls a backend holds: on io_uring in the kernel (io-wq included), "
	              "on the pool queued or running.",
	              "backend", backend_names, &s->g[FSD_M_G(async_depth)], 2);
	return r;
}

static int prom_engine(struct proto_buf *b, const struct fsd_m_sum *s)
{
	int r = one(b, "fcache_hits_total", "counter",
	            "Requests answered from the small-file cache.", C(s, fc_hits));

	r |= one(b, "fcache_misses_total", "counter",
	         "Small files read from the file system (GET) while the cache is on.",
	         C(s, fc_misses));
	r |= one(b, "fcache_invalidations_total", "counter",
	         "Small-file cache entries dropped because their file changed.",
	         C(s, fc_invalidations));
	r |= one(b, "listings_in_progress", "gauge",
	         "Directory listings being scanned or sent.", G(s, listings));
	r |= one(b, "listings_total", "counter", "Directory listings started.",
	         C(s, listings));
	r |= one(b, "listings_shared_total", "counter",
	         "Directory scans that joined an identical scan in progress.",
	         C(s, lk_shared));
	r |= one(b, "listings_spilled_total", "counter",
	         "Streamed listings whose client read slower than the scan: "
	         "their output went through a temporary file.",
	         C(s, listings_spilled));
	r |= one(b, "fibrils", "gauge", "Fibrils alive.", G(s, fibrils));
	r |= one(b, "fibrils_parked", "gauge",
	         "Fibrils waiting for a system call, a timer or a wake-up.",
	         G(s, fibrils_parked));
	r |= one(b, "fibrils_created_total", "counter", "Fibrils made.",
	         C(s, fibrils_created));
	return r | prom_async(b, s);
}

static int prom_process(struct proto_buf *b, const struct fsd_m_sum *s)
{
	int r = one(b, "workers", "gauge", "Worker threads running (draining included).",
	            s->workers);

	r |= one(b, "workers_draining", "gauge", "Worker threads draining.", s->draining);
	r |= head(b, "start_time_seconds", "gauge",
	          "Unix time the server started serving.") |
	     proto_buf_printf(b, "fileserverd_start_time_seconds %.3f\n", s->start_time);
	r |= head(b, "build_info", "gauge", "The version, as a label.") |
	     proto_buf_printf(b, "fileserverd_build_info{version=\"%s\"} 1\n", PACKAGE_VERSION);
	return r;
}

static int render_metrics(struct proto_buf *b, const struct fsd_m_sum *s)
{
	return prom_requests(b, s) | prom_conns(b, s) | prom_engine(b, s) |
	       prom_process(b, s);
}

/* "name":{"k0":v0,...} for an array of counters. */
static int json_map(struct proto_buf *b, const char *name, const char *const *keys,
                    const uint64_t *v, size_t n, const char *suffix)
{
	int r = proto_buf_printf(b, "\"%s\":{", name);

	for (size_t i = 0; i < n; i++)
		r |= proto_buf_printf(b, "%s\"%s%s\":%llu", i ? "," : "", keys[i], suffix,
		                      (unsigned long long)v[i]);
	return r | proto_buf_puts(b, "}");
}

static int json_requests(struct proto_buf *b, const struct fsd_m_sum *s)
{
	static const char *const classes[FSD_M_NCLASSES] = { "1", "2", "3", "4", "5" };
	uint64_t by_m[FSD_M_NMETHODS] = { 0 }, by_c[FSD_M_NCLASSES] = { 0 }, total = 0;
	int r;

	for (size_t m = 0; m < FSD_M_NMETHODS; m++)
		for (size_t k = 0; k < FSD_M_NCLASSES; k++) {
			uint64_t v = s->c[FSD_M_C(requests) + m * FSD_M_NCLASSES + k];
			by_m[m] += v;
			by_c[k] += v;
			total += v;
		}
	r = proto_buf_printf(b, "\"requests\":{\"total\":%llu,\"in_flight\":%llu,",
	                     (unsigned long long)total, (unsigned long long)G(s, inflight));
	r |= json_map(b, "by_method", method_names, by_m, FSD_M_NMETHODS, "");
	r |= proto_buf_puts(b, ",");
	r |= json_map(b, "by_status", classes, by_c, FSD_M_NCLASSES, "xx");
	r |= proto_buf_printf(b, ",\"duration_seconds_sum\":%.9f},",
	                      (double)C(s, latency_ns) / 1e9);
	return r;
}

static int json_async(struct proto_buf *b, const struct fsd_m_sum *s)
{
	uint64_t sync = 0, all = 0;
	int r = proto_buf_printf(b, "\"async\":{\"in_flight\":%llu,\"backends\":{",
	                         (unsigned long long)G(s, async_inflight));

	for (size_t k = 0; k < 2; k++) {
		uint64_t sy = s->c[FSD_M_C(async_sync) + k], as = s->c[FSD_M_C(async_async) + k];
		sync += sy;
		all += sy + as;
		r |= proto_buf_printf(b, "%s\"%s\":{\"submitted\":%llu,\"sync\":%llu,"
		                      "\"sync_inline\":%llu,\"async\":%llu,\"queue_depth\":%llu}",
		                      k ? "," : "", backend_names[k],
		                      (unsigned long long)(sy + as), (unsigned long long)sy,
		                      (unsigned long long)s->c[FSD_M_C(async_inline) + k],
		                      (unsigned long long)as,
		                      (unsigned long long)s->g[FSD_M_G(async_depth) + k]);
	}
	/* null until a call was made: a share of nothing is no figure */
	if (all)
		r |= proto_buf_printf(b, "},\"sync_share\":%.6f},", (double)sync / (double)all);
	else
		r |= proto_buf_puts(b, "},\"sync_share\":null},");
	return r;
}

static int render_json(struct proto_buf *b, const struct fsd_m_sum *s)
{
	int r = proto_buf_printf(b, "{\"version\":\"%s\",\"start_time\":%.3f,",
	                         PACKAGE_VERSION, s->start_time);

	r |= json_requests(b, s);
	r |= proto_buf_printf(b, "\"sent_bytes\":%llu,\"connections\":{\"open\":%llu,"
	                      "\"accepted\":%llu,",
	                      (unsigned long long)C(s, sent_bytes),
	                      (unsigned long long)G(s, conns),
	                      (unsigned long long)C(s, accepted));
	r |= json_map(b, "closed", close_names, &s->c[FSD_M_C(closed)], FSD_M_NCLOSES, "");
	r |= proto_buf_puts(b, "},");
	r |= json_map(b, "limit_rejections", limit_names, &s->c[FSD_M_C(limited)],
	              FSD_M_NLIMITS, "");
	r |= proto_buf_printf(b, ",\"fcache\":{\"hits\":%llu,\"misses\":%llu,"
	                      "\"invalidations\":%llu},",
	                      (unsigned long long)C(s, fc_hits),
	                      (unsigned long long)C(s, fc_misses),
	                      (unsigned long long)C(s, fc_invalidations));
	r |= proto_buf_printf(b, "\"listings\":{\"in_progress\":%llu,\"total\":%llu,"
	                      "\"shared\":%llu,\"spilled\":%llu},",
	                      (unsigned long long)G(s, listings),
	                      (unsigned long long)C(s, listings),
	                      (unsigned long long)C(s, lk_shared),
	                      (unsigned long long)C(s, listings_spilled));
	r |= proto_buf_printf(b, "\"fibrils\":{\"alive\":%llu,\"parked\":%llu,"
	                      "\"created\":%llu},",
	                      (unsigned long long)G(s, fibrils),
	                      (unsigned long long)G(s, fibrils_parked),
	                      (unsigned long long)C(s, fibrils_created));
	r |= json_async(b, s);
	r |= proto_buf_printf(b, "\"workers\":{\"running\":%u,\"draining\":%u,\"list\":[",
	                      s->workers, s->draining);
	for (size_t i = 0; i < s->nlist; i++) {
		const struct fsd_m_worker *wk = &s->list[i];
		r |= proto_buf_printf(b, "%s{\"id\":%u,\"draining\":%s,\"requests\":%llu,"
		                      "\"connections\":%llu,\"in_flight\":%llu}",
		                      i ? "," : "", wk->id, wk->draining ? "true" : "false",
		                      (unsigned long long)wk->requests,
		                      (unsigned long long)wk->conns,
		                      (unsigned long long)wk->inflight);
	}
	return r | proto_buf_puts(b, "]}}\n");
}

static void answer(struct fsd_req *rq, unsigned status, const char *ctype,
                   struct proto_buf *b)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		b->len, b->data, MHD_RESPMEM_MUST_FREE);

	if (!resp) {
		proto_buf_free(b);
		fsd_req_error(rq, 500);
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	fsd_req_respond(rq, status, resp, b->len);
}

enum st_path { ST_NONE = 0, ST_METRICS, ST_STATUS, ST_HEALTHZ };

static enum st_path which(const char *uri)
{
	size_t n = strcspn(uri, "?");

	if (n == 8 && !memcmp(uri, "/metrics", 8))
		return ST_METRICS;
	if (n == 7 && !memcmp(uri, "/status", 7))
		return ST_STATUS;
	if (n == 8 && !memcmp(uri, "/healthz", 8))
		return ST_HEALTHZ;
	return ST_NONE;
}

/* The listener @rq came in on, or NULL. */
static const struct conf_listen *listener(const struct fsd_req *rq)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_DAEMON);
	const struct fsd_worker *w = rq->w;

	for (size_t i = 0; ci && i < w->nmhd && i < fsd->conf.nlisten; i++)
		if (w->mhd[i] == ci->daemon)
			return &fsd->conf.listen[i];
	return NULL;
}

static void serve(struct fsd_req *rq, enum st_path p)
{
	struct proto_buf b = { 0 };
	struct fsd_m_sum *s;
	int r;

	if (rq->method == FSD_M_OPTIONS) {
		fsd_req_options(rq);
		return;
	}
	if (rq->method != FSD_M_GET && rq->method != FSD_M_HEAD) {
		fsd_req_error(rq, 405);
		return;
	}
	if (p == ST_HEALTHZ) {
		bool up = !rq->w->stopping;
		if (proto_buf_puts(&b, up ? "ok\n" : "draining\n") < 0) {
			fsd_req_error(rq, 500);
			return;
		}
		answer(rq, up ? 200 : 503, "text/plain; charset=utf-8", &b);
		return;
	}
	s = malloc(sizeof *s);
	if (!s) {
		fsd_req_error(rq, 503);
		return;
	}
	fsd_metrics_sample(rq->w);
	fsd_metrics_sum(s);
	r = p == ST_METRICS ? render_metrics(&b, s) : render_json(&b, s);
	free(s);
	if (r < 0) {
		proto_buf_free(&b);
		fsd_req_error(rq, 503);
		return;
	}
	if (p == ST_METRICS)
		answer(rq, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
	else
		answer(rq, 200, "application/json", &b);
}

int fsd_status_handle(struct fsd_req *rq)
{
	const struct conf_listen *l;
	enum st_path p;

	if (st_any < 0) {
		st_any = 0;
		for (size_t i = 0; i < fsd->conf.nlisten; i++)
			st_any |= fsd->conf.listen[i].status;
	}
	if (!st_any || !(l = listener(rq)) || !l->status)
		return 1;
	p = which(rq->uri);
	if (p != ST_NONE)
		serve(rq, p);
	else if (l->status_only)
		fsd_req_error(rq, 404);
	else
		return 1;
	return 0;
}
