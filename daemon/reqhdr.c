#include "first.h"

#include "daemon/reqhdr.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/log.h"
#include "proto/reqcheck.h"

/* Longest request-target served (414 beyond): static.c decodes into an
 * 8 KiB buffer, and libmicrohttpd's own limit is about 32 KiB. */
#define FSD_MAX_TARGET 8000

/* Headers the handlers read, by index into struct fsd_hdrs. */
static const struct {
	const char *name;
	size_t off;
} wanted[] = {
	{ "Host", offsetof(struct fsd_hdrs, host) },
	{ "Range", offsetof(struct fsd_hdrs, range) },
	{ "If-Range", offsetof(struct fsd_hdrs, if_range) },
	{ "If-Match", offsetof(struct fsd_hdrs, if_match) },
	{ "If-None-Match", offsetof(struct fsd_hdrs, if_none_match) },
	{ "If-Modified-Since", offsetof(struct fsd_hdrs, if_modified_since) },
	{ "If-Unmodified-Since", offsetof(struct fsd_hdrs, if_unmodified_since) },
	{ "Accept-Encoding", offsetof(struct fsd_hdrs, accept_encoding) },
	{ "Accept", offsetof(struct fsd_hdrs, accept) },
	{ "Referer", offsetof(struct fsd_hdrs, referer) },
	{ "User-Agent", offsetof(struct fsd_hdrs, user_agent) },
};
#define NWANTED (sizeof wanted / sizeof *wanted)

struct collect {
	struct fsd_req *rq;
	struct proto_reqcheck chk;
	/* first pass: sizes; second: copies */
	const char *val[NWANTED];
	size_t len[NWANTED];
	bool folded;
	size_t head;            /* bytes of the request head as sent (about) */
};

/*
 * Obsolete line folding (RFC 9112 5.2: reject with 400). libmicrohttpd
 * 0.9.75 accepts it even in strict mode and leaves no trace in the
 * value: it appends the continuation to the field *name* and moves the
 * value elsewhere in its pool. An unfolded field has its value in place
 * in the read buffer, right after "name:" and optional whitespace; a
 * folded one does not. (Measured on 0.9.75: the gap is 1 + whitespace
 * for normal fields, about -16k for folded ones.)
 */
static bool in_place(const char *key, size_t key_size, const char *value)
{
	const char *end = key + key_size;

	if (value <= end || value - end > 256)
		return false;
	for (const char *p = end + 1; p < value; p++)
		if (*p != ' ' && *p != '\t')
			return false;
	return true;
}

static enum MHD_Result each(void *cls, enum MHD_ValueKind kind,
                            const char *key, size_t key_size,
                            const char *value, size_t value_size)
{
	struct collect *c = cls;

	(void)kind;
	if (!in_place(key, key_size, value))
		c->folded = true;
	c->head += key_size + 2 + value_size + 2;       /* "k: v\r\n" */
	proto_reqcheck_field(&c->chk, key, key_size, value, value_size);
	for (size_t i = 0; i < NWANTED; i++)
		if (!strcasecmp(key, wanted[i].name)) {
			/* First occurrence wins; duplicates of the list-valued
			 * ones are rare and the checker handles Host. */
			if (!c->val[i]) {
				c->val[i] = value;
				c->len[i] = value_size;
			}
			break;
		}
	return MHD_YES;
}

int fsd_reqhdr_collect(struct fsd_req *rq, struct MHD_Connection *conn)
{
	struct collect c = { .rq = rq };
	size_t total = 0;
	char *mem, *p;

	size_t ulen = strlen(rq->uri);

	proto_reqcheck_begin(&c.chk, rq->method_str, rq->version, rq->uri,
	                     ulen, FSD_MAX_TARGET);
	c.head = strlen(rq->method_str) + 1 + ulen + 1 + strlen(rq->version) + 2 + 2;
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, each, &c);
	for (size_t i = 0; i < NWANTED; i++)
		if (c.val[i])
			total += c.len[i] + 1;
	if (total) {
		/* Most requests' headers fit in the request itself. */
		mem = p = total <= sizeof rq->hdr_inline ? rq->hdr_inline : malloc(total);
		if (!mem)
			return 503;
		for (size_t i = 0; i < NWANTED; i++)
			if (c.val[i]) {
				memcpy(p, c.val[i], c.len[i]);
				p[c.len[i]] = 0;
				*(const char **)((char *)&rq->h + wanted[i].off) = p;
				p += c.len[i] + 1;
			}
		if (mem != rq->hdr_inline)
			rq->hdr_mem = mem;
	}
	if (c.folded) {
		rq->close = true;
		return 400;
	}
	struct proto_verdict v = proto_reqcheck_end(&c.chk);
	/* libmicrohttpd's pool is request_header_max + FSD_POOL_SLACK
	 * (worker.c): heads beyond that get its own 431 (or 414); ours
	 * makes the limit the configured one. */
	if (!v.status && c.head > fsd.conf.request_header_max) {
		v.status = 431;
		v.reason = "request head larger than request_header_max";
	}
	rq->close = v.close_connection;
	if (v.status)
		fsd_log(LOG_INFO, "%s %s: %u: %s", rq->method_str, rq->uri, v.status, v.reason);
	return (int)v.status;
}
