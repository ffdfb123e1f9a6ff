#include "first.h"

/*
 * The registry of the workers' counter blocks (metrics.h): the blocks
 * of running workers, and what the workers that exited counted. The
 * lock is taken by a worker starting or exiting and by a status
 * request summing, never by a hook.
 */

#include "daemon/daemon.h"
#include "daemon/metrics.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include <fibril/async.h>
#include <fibril/fibril.h>
#include <fibril/lookup.h>

_Static_assert(ASYNC_BACKEND_URING == 0 && ASYNC_BACKEND_POOL == 1 &&
               ASYNC_NBACKENDS == 2, "fsd_m_counters' async arrays");

#define NC (sizeof(struct fsd_m_counters) / sizeof(fsd_ctr))
#define NG (sizeof(struct fsd_m_gauges) / sizeof(fsd_ctr))
_Static_assert(sizeof(struct fsd_m_counters) == NC * sizeof(fsd_ctr),
               "fsd_m_counters holds fsd_ctr members only");
_Static_assert(sizeof(struct fsd_m_gauges) == NG * sizeof(fsd_ctr),
               "fsd_m_gauges holds fsd_ctr members only");

/* From 100 µs (a cached small file) to a minute (a large download). */
const double fsd_m_bounds[FSD_M_NBOUNDS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};
/* The same in nanoseconds, for the hook. */
static const uint64_t bounds_ns[FSD_M_NBOUNDS] = {
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
	25000000, 50000000, 100000000, 250000000, 500000000, 1000000000,
	2500000000, 5000000000, 10000000000, 30000000000, 60000000000,
};

__thread struct fsd_metrics fsd_m;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fsd_metrics *reg_head;    /* running workers' blocks */
static uint64_t reg_retired[NC];        /* counted by workers that exited */
static double reg_start;

void fsd_m_request_end(bool answered, unsigned method, unsigned status,
                       uint64_t ns, uint64_t bytes)
{
	struct fsd_m_counters *c = &fsd_m.c;
	unsigned cls = status / 100, b = 0;

#ifdef FSD_BENCH_NO_METRICS
	(void)c, (void)cls, (void)b, (void)answered, (void)method, (void)ns, (void)bytes;
	return;
#endif
	fsd_ctr_add(&fsd_m.g.inflight, (uint64_t)-1);
	if (!answered || cls < 1 || cls > FSD_M_NCLASSES)
		return;
	if (method >= FSD_M_NMETHODS)
		method = 0;
	fsd_ctr_add(&c->requests[method][cls - 1], 1);
	fsd_ctr_add(&c->sent_bytes, bytes);
	while (b < FSD_M_NBOUNDS && ns > bounds_ns[b])
		b++;
	fsd_ctr_add(&c->latency[b], 1);
	fsd_ctr_add(&c->latency_ns, ns);
}

void fsd_metrics_attach(struct fsd_worker *w)
{
	pthread_mutex_lock(&reg_mu);
	if (!reg_start) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		reg_start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	}
	memset(&fsd_m, 0, sizeof fsd_m);
	fsd_m.id = w->id;
	fsd_m.attached = true;
	fsd_m.next = reg_head;
	reg_head = &fsd_m;
	pthread_mutex_unlock(&reg_mu);
}

void fsd_metrics_detach(void)
{
	const fsd_ctr *c = (const fsd_ctr *)&fsd_m.c;

	if (!fsd_m.attached)
		return;
	pthread_mutex_lock(&reg_mu);
	for (struct fsd_metrics **p = &reg_head; *p; p = &(*p)->next)
		if (*p == &fsd_m) {
			*p = fsd_m.next;
			break;
		}
	for (size_t i = 0; i < NC; i++)
		reg_retired[i] += fsd_ctr_get(&c[i]);
	fsd_m.attached = false;
	pthread_mutex_unlock(&reg_mu);
}

void fsd_metrics_sample(const struct fsd_worker *w)
{
	struct fsd_m_gauges *g = &fsd_m.g;
	struct fibril_sched_stats fs;
	struct async_stats as;
	struct lk_stats lk;

#ifdef FSD_BENCH_NO_METRICS
	(void)g, (void)fs, (void)as, (void)lk, (void)w;
	return;
#endif
	fsd_ctr_set(&g->conns, w->nconns);
	fsd_ctr_set(&g->listings, w->listings);
	fsd_ctr_set(&g->stopping, w->stopping);
	fibril_sched_stats(&fs);
	fsd_ctr_set(&g->fibrils, fs.alive);
	fsd_ctr_set(&g->fibrils_parked, fs.parked);
	fsd_ctr_set(&fsd_m.c.fibrils_created, fs.created);
	async_engine_stats(w->engine, &as);
	fsd_ctr_set(&g->async_inflight, as.inflight);
	for (size_t b = 0; b < 2; b++) {
		fsd_ctr_set(&fsd_m.c.async_sync[b], as.sync[b]);
		fsd_ctr_set(&fsd_m.c.async_inline[b], as.sync_inline[b]);
		fsd_ctr_set(&fsd_m.c.async_async[b], as.async[b]);
		fsd_ctr_set(&g->async_depth[b], as.depth[b]);
	}
	lk_stats(&lk);
	fsd_ctr_set(&fsd_m.c.lk_shared, lk.shared_joins);
}

void fsd_metrics_sum(struct fsd_m_sum *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&reg_mu);
	memcpy(out->c, reg_retired, sizeof out->c);
	for (const struct fsd_metrics *m = reg_head; m; m = m->next) {
		const fsd_ctr *c = (const fsd_ctr *)&m->c, *g = (const fsd_ctr *)&m->g;
		for (size_t i = 0; i < NC; i++)
			out->c[i] += fsd_ctr_get(&c[i]);
		for (size_t i = 0; i < NG; i++)
			out->g[i] += fsd_ctr_get(&g[i]);
		bool draining = fsd_ctr_get(&m->g.stopping) != 0;
		out->workers++;
		out->draining += draining;
		if (out->nlist < FSD_M_MAXLIST) {
			struct fsd_m_worker *wk = &out->list[out->nlist++];
			wk->id = m->id;
			wk->draining = draining;
			wk->conns = fsd_ctr_get(&m->g.conns);
			wk->inflight = fsd_ctr_get(&m->g.inflight);
			for (size_t i = 0; i < FSD_M_NMETHODS; i++)
				for (size_t j = 0; j < FSD_M_NCLASSES; j++)
					wk->requests += fsd_ctr_get(&m->c.requests[i][j]);
		}
	}
	out->start_time = reg_start;
	pthread_mutex_unlock(&reg_mu);
}
