/*
 * daemon/metrics.h: the counters behind /metrics and /status.
 *
 * Each thread that serves has its own block (fsd_m, thread-local) and
 * is the only one writing it: a hook is a relaxed load and store, no
 * lock and no atomic read-modify-write (on x86-64 a plain add to
 * memory). A status request sums every worker's block without stopping
 * them (metrics.c), so a sum may be a few increments behind, or mix two
 * moments of a busy worker: fine for monitoring, never wrong by more.
 * A worker that exits (stop, reload) adds its counters to a total kept
 * for it, so that counters never go down while the process lives.
 *
 * What the libraries count (the async engine, the fibril scheduler,
 * the lookup engine) belongs to the worker's thread alone; the worker
 * copies it into its block once per turn of its loop
 * (fsd_metrics_sample), and a status request copies its own worker's
 * just before summing.
 */
#ifndef FSD_METRICS_H
#define FSD_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef _Atomic uint64_t fsd_ctr;

/* FSD_BENCH_NO_METRICS (CPPFLAGS, never in a product build): every
 * counter update and the per-turn sample cost nothing, so that
 * contrib/bench/http-bench (METRICS_OFF_FSD) can measure what the
 * counters cost on the hot path. /metrics then reads zeros. */
#ifndef FSD_BENCH_NO_METRICS
static inline void fsd_ctr_add(fsd_ctr *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
	                      memory_order_relaxed);
}

static inline void fsd_ctr_set(fsd_ctr *c, uint64_t v)
{
	atomic_store_explicit(c, v, memory_order_relaxed);
}
#else
static inline void fsd_ctr_add(fsd_ctr *c, uint64_t n)
{
	(void)c;
	(void)n;
}

static inline void fsd_ctr_set(fsd_ctr *c, uint64_t v)
{
	(void)c;
	(void)v;
}
#endif

static inline uint64_t fsd_ctr_get(const fsd_ctr *c)
{
	return atomic_load_explicit((fsd_ctr *)c, memory_order_relaxed);
}

/* Methods as enum fsd_method (daemon.h): other, GET, HEAD, OPTIONS. */
#define FSD_M_NMETHODS 4
/* Status classes 1xx..5xx. */
#define FSD_M_NCLASSES 5
/* Request latency bucket bounds, in seconds (metrics.c); one more
 * bucket holds the rest (+Inf). */
#define FSD_M_NBOUNDS 18
extern const double fsd_m_bounds[FSD_M_NBOUNDS];

/* 503s (or refusals) from a limit. */
enum fsd_m_limit {
	FSD_M_LIM_CONNS = 0,    /* max_connections */
	FSD_M_LIM_CONNS_IP,     /* max_connections_per_ip */
	FSD_M_LIM_FDS,          /* out of file descriptors */
	FSD_M_LIM_LISTINGS,     /* max_listings */
	FSD_M_LIM_TIMEOUT,      /* request_timeout */
	FSD_M_NLIMITS
};

/* Connections the server closed on a deadline. */
enum fsd_m_close { FSD_M_CLOSE_HEAD = 0, FSD_M_CLOSE_SLOW, FSD_M_NCLOSES };

/* Counters: only ever grow; kept across a worker's exit. Every member
 * is an fsd_ctr (summed as an array). */
struct fsd_m_counters {
	fsd_ctr requests[FSD_M_NMETHODS][FSD_M_NCLASSES];
	fsd_ctr latency[FSD_M_NBOUNDS + 1];     /* per bucket, not cumulative */
	fsd_ctr latency_ns;                     /* sum */
	fsd_ctr sent_bytes;                     /* bodies, as the access log counts */
	fsd_ctr accepted;
	fsd_ctr limited[FSD_M_NLIMITS];
	fsd_ctr closed[FSD_M_NCLOSES];
	fsd_ctr fc_hits, fc_misses, fc_invalidations;
	fsd_ctr listings;                       /* listings started */
	fsd_ctr listings_spilled;               /* streams whose client was slow */
	/* sampled from the libraries (fsd_metrics_sample) */
	fsd_ctr lk_shared;                      /* scans that joined a running one */
	fsd_ctr fibrils_created;
	/* async calls by backend (0 io_uring, 1 pool: async_engine_stats) */
	fsd_ctr async_sync[2], async_inline[2], async_async[2];
};

/* Gauges: what is the case now; a worker's go when it exits. */
struct fsd_m_gauges {
	fsd_ctr inflight;       /* requests read and not yet completed */
	/* sampled */
	fsd_ctr conns;
	fsd_ctr listings;       /* in progress */
	fsd_ctr fibrils;        /* alive */
	fsd_ctr fibrils_parked;
	fsd_ctr async_inflight;
	fsd_ctr async_depth[2];
	fsd_ctr stopping;       /* 1 while the worker drains */
};

struct fsd_metrics {
	struct fsd_m_counters c;
	struct fsd_m_gauges g;
	/* the registry's (metrics.c), under its lock */
	unsigned id;
	bool attached;
	struct fsd_metrics *next;
};

/* This thread's block (zero and unregistered outside workers). */
extern __thread struct fsd_metrics fsd_m;

#define FSD_M_INC(field) fsd_ctr_add(&fsd_m.c.field, 1)

/* request.c: a request's head was read / it ended with a response of
 * @status after @ns, @bytes of body sent. */
static inline void fsd_m_request_start(void)
{
	fsd_ctr_add(&fsd_m.g.inflight, 1);
}
void fsd_m_request_end(bool answered, unsigned method, unsigned status,
                       uint64_t ns, uint64_t bytes);

struct fsd_worker;
/* worker.c: the worker's thread registers its block at start and takes
 * it out before it exits. */
void fsd_metrics_attach(struct fsd_worker *w);
void fsd_metrics_detach(void);
/* Copies the libraries' counters and the worker's state into fsd_m
 * (worker's thread, once per turn of its loop). */
void fsd_metrics_sample(const struct fsd_worker *w);

/* One running worker, as /status lists them. */
struct fsd_m_worker {
	unsigned id;
	bool draining;
	uint64_t requests, conns, inflight;
};
#define FSD_M_MAXLIST 1024

/* The sum over every worker, plus those that exited. Large: allocate. */
struct fsd_m_sum {
	uint64_t c[sizeof(struct fsd_m_counters) / sizeof(fsd_ctr)];
	uint64_t g[sizeof(struct fsd_m_gauges) / sizeof(fsd_ctr)];
	unsigned workers;       /* running (draining included) */
	unsigned draining;
	double start_time;      /* Unix time the first worker started */
	size_t nlist;           /* the first FSD_M_MAXLIST workers */
	struct fsd_m_worker list[FSD_M_MAXLIST];
};
/* Index of a member in fsd_m_sum's arrays: FSD_M_C(sent_bytes). */
#define FSD_M_C(field) ((size_t)(offsetof(struct fsd_m_counters, field) / sizeof(fsd_ctr)))
#define FSD_M_G(field) ((size_t)(offsetof(struct fsd_m_gauges, field) / sizeof(fsd_ctr)))
/* Any thread (a worker answering /metrics samples itself first). */
void fsd_metrics_sum(struct fsd_m_sum *out);

#endif
