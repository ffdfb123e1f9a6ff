/*
 * fsd-sftp: a per-request timeline, for finding where a cheap request
 * (STAT, LSTAT, FSTAT, REALPATH) waits when the server is loaded. Off
 * unless FSD_SFTP_TIMELINE names a file; the summary is written there
 * when the server exits.
 *
 * Each cheap request gets four times: its arrival in the kernel (the
 * socket's receive timestamp, SO_TIMESTAMPNS), the read that took it in,
 * its reply built, its reply written. Every turn of the tevent loop is
 * logged (busy time, which kind of handler ran, how much of it built
 * NAME replies); the wait between arrival and read is then split into
 * the turns the loop spent on other work and the time it was not
 * running at all (the scheduler's share). SIGUSR2 appends the summary
 * so far and starts a new one, so that a benchmark can have one per
 * phase.
 */
#include "first.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contrib/sftpd/sftpd.h"

#define X__TURNS 65536u
#define X__REQS 200000u

enum { X__C_NONE, X__C_CONN, X__C_BULK, X__C_FD, X__C_IMM, X__C_TIMER, X__C_N };
static const char *const sftpd__tl_cat[X__C_N] = {
	"none", "connection", "bulk", "engine-fd", "immediate", "timer"
};

struct sftpd__tl_turn {
	uint64_t start, end, marshal, write;
	uint8_t cat;
};

struct sftpd__tl_req {
	uint64_t arr, read, built, written;
	uint64_t in_cat[X__C_N];  /* busy time per kind in [arr, read] */
	uint64_t marshal;         /* of which building NAME replies */
	uint32_t turns;           /* turns that ran in [arr, read] */
	uint8_t type;
};

bool sftpd_tl_on;
static const char *sftpd__tl_path;
static struct sftpd__tl_turn *sftpd__tl_turns;
static uint64_t sftpd__tl_nturns;
static struct sftpd__tl_turn sftpd__tl_cur;
static bool sftpd__tl_in_turn;
static struct sftpd__tl_req *sftpd__tl_reqs;
static size_t sftpd__tl_nreqs;
/* The loop thread's /proc schedstat (on CPU, waiting to run, slices)
 * and the process's CPU time, at the last summary. */
static unsigned long long sftpd__tl_sched[3];
static uint64_t sftpd__tl_cpu, sftpd__tl_t0;

static void sftpd__tl_sample(unsigned long long sched[3], uint64_t *cpu)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	struct timespec ts;

	sched[0] = sched[1] = sched[2] = 0;
	if (f) {
		if (fscanf(f, "%llu %llu %llu", &sched[0], &sched[1], &sched[2]) != 3)
			sched[0] = sched[1] = sched[2] = 0;
		fclose(f);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	*cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t sftpd_tl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sftpd_tl_marshal(uint64_t ns)
{
	sftpd__tl_cur.marshal += ns;
}

void sftpd_tl_write(uint64_t ns)
{
	sftpd__tl_cur.write += ns;
}

void sftpd_tl_conn(void)
{
	sftpd__tl_cur.cat = X__C_CONN;
}

void sftpd_tl_bulk(void)
{
	sftpd__tl_cur.cat = X__C_BULK;
}

static void sftpd__tl_loop(enum tevent_trace_point tp, void *arg)
{
	(void)arg;
	switch (tp) {
	case TEVENT_TRACE_BEFORE_LOOP_ONCE:
	case TEVENT_TRACE_AFTER_WAIT:
		memset(&sftpd__tl_cur, 0, sizeof(sftpd__tl_cur));
		sftpd__tl_cur.start = sftpd_tl_now();
		sftpd__tl_in_turn = true;
		break;
	case TEVENT_TRACE_BEFORE_WAIT:
	case TEVENT_TRACE_AFTER_LOOP_ONCE:
		if (!sftpd__tl_in_turn)
			break;
		sftpd__tl_in_turn = false;
		sftpd__tl_cur.end = sftpd_tl_now();
		sftpd__tl_turns[sftpd__tl_nturns++ % X__TURNS] = sftpd__tl_cur;
		break;
	}
}

static void sftpd__tl_mark(uint8_t cat)
{
	if (sftpd__tl_cur.cat == X__C_NONE)
		sftpd__tl_cur.cat = cat;
}

static void sftpd__tl_fd(struct tevent_fd *fde, enum tevent_event_trace_point tp,
                  void *arg)
{
	(void)fde;
	(void)arg;
	if (tp == TEVENT_EVENT_TRACE_BEFORE_HANDLER)
		sftpd__tl_mark(X__C_FD);
}

static void sftpd__tl_imm(struct tevent_immediate *im, enum tevent_event_trace_point tp,
                   void *arg)
{
	(void)im;
	(void)arg;
	if (tp == TEVENT_EVENT_TRACE_BEFORE_HANDLER)
		sftpd__tl_mark(X__C_IMM);
}

static void sftpd__tl_timer(struct tevent_timer *te, enum tevent_event_trace_point tp,
                     void *arg)
{
	(void)te;
	(void)arg;
	if (tp == TEVENT_EVENT_TRACE_BEFORE_HANDLER)
		sftpd__tl_mark(X__C_TIMER);
}

int sftpd_tl_start(struct tevent_context *ev)
{
	sftpd__tl_path = getenv("FSD_SFTP_TIMELINE");
	if (!sftpd__tl_path || !*sftpd__tl_path)
		return 0;
	sftpd__tl_turns = calloc(X__TURNS, sizeof(*sftpd__tl_turns));
	sftpd__tl_reqs = calloc(X__REQS, sizeof(*sftpd__tl_reqs));
	if (!sftpd__tl_turns || !sftpd__tl_reqs)
		return -1;
	FILE *f = fopen(sftpd__tl_path, "w");
	if (!f)
		return -1;
	fclose(f);
	tevent_set_trace_callback(ev, sftpd__tl_loop, NULL);
	tevent_set_trace_fd_callback(ev, sftpd__tl_fd, NULL);
	tevent_set_trace_immediate_callback(ev, sftpd__tl_imm, NULL);
	tevent_set_trace_timer_callback(ev, sftpd__tl_timer, NULL);
	sftpd_tl_on = true;
	sftpd__tl_sample(sftpd__tl_sched, &sftpd__tl_cpu);
	sftpd__tl_t0 = sftpd_tl_now();
	return 0;
}

bool sftpd_tl_cheap(uint8_t type)
{
	return type == SSH_FXP_STAT || type == SSH_FXP_LSTAT ||
	       type == SSH_FXP_FSTAT || type == SSH_FXP_REALPATH;
}

/* Splits [arr, read] into the logged turns that overlap it. The turn
 * in progress (the read's own) is not logged yet: it starts at or
 * before the read, and its share is what this turn did before it. */
static void sftpd__tl_attribute(struct sftpd__tl_req *q)
{
	uint64_t lo = q->arr, hi = q->read;
	uint64_t n = sftpd__tl_nturns < X__TURNS ? sftpd__tl_nturns : X__TURNS;

	for (uint64_t i = 0; i < n; i++) {
		const struct sftpd__tl_turn *t = &sftpd__tl_turns[(sftpd__tl_nturns - 1 - i) % X__TURNS];
		if (t->end <= lo)
			break;
		uint64_t a = t->start > lo ? t->start : lo;
		uint64_t b = t->end < hi ? t->end : hi;
		if (b <= a)
			continue;
		q->in_cat[t->cat] += b - a;
		if (t->end > t->start)
			q->marshal += t->marshal * (b - a) / (t->end - t->start);
		q->turns++;
	}
	if (sftpd__tl_in_turn && sftpd__tl_cur.start < hi) {
		uint64_t a = sftpd__tl_cur.start > lo ? sftpd__tl_cur.start : lo;
		q->in_cat[X__C_CONN] += hi - a;
	}
}

void sftpd_tl_req(uint8_t type, uint64_t arr, uint64_t read, uint64_t built,
                  uint64_t written)
{
	if (sftpd__tl_nreqs == X__REQS || !arr || !read)
		return;
	struct sftpd__tl_req *q = &sftpd__tl_reqs[sftpd__tl_nreqs++];
	memset(q, 0, sizeof(*q));
	q->type = type;
	q->arr = arr <= read ? arr : read;
	q->read = read;
	q->built = built;
	q->written = written;
	sftpd__tl_attribute(q);
}

size_t sftpd_tl_mark(void)
{
	return sftpd__tl_nreqs;
}

void sftpd_tl_written(size_t mark)
{
	uint64_t now = sftpd_tl_now();

	for (size_t i = mark; i < sftpd__tl_nreqs; i++)
		if (!sftpd__tl_reqs[i].written)
			sftpd__tl_reqs[i].written = now;
}

static int sftpd__tl_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void sftpd__tl_pcts(FILE *f, const char *what, uint64_t *v, size_t n)
{
	if (!n)
		return;
	qsort(v, n, sizeof(*v), sftpd__tl_cmp_u64);
	fprintf(f, "%-24s p50 %8.1f  p90 %8.1f  p99 %8.1f  max %8.1f us\n", what,
	        v[n / 2] / 1e3, v[n * 9 / 10] / 1e3, v[n * 99 / 100] / 1e3,
	        v[n - 1] / 1e3);
}

static uint64_t sftpd__tl_total(const struct sftpd__tl_req *q)
{
	return q->written - q->arr;
}

static int sftpd__tl_cmp_req(const void *a, const void *b)
{
	uint64_t x = sftpd__tl_total(a), y = sftpd__tl_total(b);
	return x < y ? -1 : x > y;
}

/* The mean of the slowest 1 % of requests, stage by stage. */
static void sftpd__tl_tail(FILE *f)
{
	size_t n = sftpd__tl_nreqs, k = n / 100 ? n / 100 : 1, from = n - k;
	double cat[X__C_N] = { 0 }, marshal = 0, wait = 0, idle = 0, turns = 0;
	double build = 0, write = 0, total = 0;

	qsort(sftpd__tl_reqs, n, sizeof(*sftpd__tl_reqs), sftpd__tl_cmp_req);
	for (size_t i = from; i < n; i++) {
		const struct sftpd__tl_req *q = &sftpd__tl_reqs[i];
		uint64_t busy = 0;
		for (int c = 0; c < X__C_N; c++) {
			cat[c] += q->in_cat[c];
			busy += q->in_cat[c];
		}
		marshal += q->marshal;
		wait += q->read - q->arr;
		idle += q->read - q->arr > busy ? q->read - q->arr - busy : 0;
		turns += q->turns;
		build += q->built - q->read;
		write += q->written - q->built;
		total += sftpd__tl_total(q);
	}
	fprintf(f, "slowest %zu (1%%), mean us: total %.1f = arrival->read %.1f"
	        " + read->built %.1f + built->written %.1f\n", k, total / k / 1e3,
	        wait / k / 1e3, build / k / 1e3, write / k / 1e3);
	fprintf(f, "  arrival->read: %.1f turns;", turns / k);
	for (int c = 1; c < X__C_N; c++)
		fprintf(f, " %s %.1f", sftpd__tl_cat[c], cat[c] / k / 1e3);
	fprintf(f, " (of which NAME replies %.1f); loop not running %.1f\n",
	        marshal / k / 1e3, idle / k / 1e3);
}

/* Where the loop thread's time went since the last summary. */
static void sftpd__tl_sched_stats(FILE *f)
{
	unsigned long long sc[3];
	uint64_t cpu, now = sftpd_tl_now();
	double wall = (double)(now - sftpd__tl_t0);

	sftpd__tl_sample(sc, &cpu);
	unsigned long long slices = sc[2] - sftpd__tl_sched[2];
	fprintf(f, "wall %.1f ms: loop thread on CPU %.1f ms, runnable but "
	        "waiting %.1f ms (%.1f us per wait, %llu slices); process CPU "
	        "%.1f ms (%.0f%% of a core)\n", wall / 1e6,
	        (sc[0] - sftpd__tl_sched[0]) / 1e6, (sc[1] - sftpd__tl_sched[1]) / 1e6,
	        slices ? (sc[1] - sftpd__tl_sched[1]) / 1e3 / slices : 0.0, slices,
	        (cpu - sftpd__tl_cpu) / 1e6, wall > 0 ? 100.0 * (cpu - sftpd__tl_cpu) / wall : 0.0);
	memcpy(sftpd__tl_sched, sc, sizeof(sc));
	sftpd__tl_cpu = cpu;
	sftpd__tl_t0 = now;
}

static void sftpd__tl_turn_stats(FILE *f)
{
	uint64_t n = sftpd__tl_nturns < X__TURNS ? sftpd__tl_nturns : X__TURNS;
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return;
	for (int c = 1; c < X__C_N; c++) {
		size_t k = 0;
		uint64_t sum = 0, msum = 0, wsum = 0;
		for (uint64_t i = 0; i < n; i++)
			if (sftpd__tl_turns[i].cat == c) {
				v[k++] = sftpd__tl_turns[i].end - sftpd__tl_turns[i].start;
				sum += v[k - 1];
				msum += sftpd__tl_turns[i].marshal;
				wsum += sftpd__tl_turns[i].write;
			}
		if (!k)
			continue;
		char what[64];
		snprintf(what, sizeof(what), "turn %s (%zu)", sftpd__tl_cat[c], k);
		sftpd__tl_pcts(f, what, v, k);
		fprintf(f, "%-24s busy %.1f ms, NAME replies %.1f ms, writes %.1f ms\n",
		        "", sum / 1e6, msum / 1e6, wsum / 1e6);
	}
	free(v);
}

void sftpd_tl_dump(void)
{
	if (!sftpd_tl_on)
		return;
	FILE *f = fopen(sftpd__tl_path, "a");
	if (!f) {
		sftpd_log("%s: cannot write the timeline", sftpd__tl_path);
		return;
	}
	size_t n = sftpd__tl_nreqs;
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
	for (size_t i = 0; i < n; i++)
		if (!sftpd__tl_reqs[i].written)  /* not written out in full yet */
			sftpd__tl_reqs[i].written = sftpd__tl_reqs[i].built;
	fprintf(f, "cheap requests %zu, loop turns %llu (last %u kept)\n", n,
	        (unsigned long long)sftpd__tl_nturns, X__TURNS);
	if (v && n) {
		for (size_t i = 0; i < n; i++)
			v[i] = sftpd__tl_reqs[i].read - sftpd__tl_reqs[i].arr;
		sftpd__tl_pcts(f, "arrival->read", v, n);
		for (size_t i = 0; i < n; i++)
			v[i] = sftpd__tl_reqs[i].built - sftpd__tl_reqs[i].read;
		sftpd__tl_pcts(f, "read->built", v, n);
		for (size_t i = 0; i < n; i++)
			v[i] = sftpd__tl_reqs[i].written - sftpd__tl_reqs[i].built;
		sftpd__tl_pcts(f, "built->written", v, n);
		for (size_t i = 0; i < n; i++)
			v[i] = sftpd__tl_total(&sftpd__tl_reqs[i]);
		sftpd__tl_pcts(f, "arrival->written", v, n);
		sftpd__tl_tail(f);
	}
	free(v);
	sftpd__tl_turn_stats(f);
	sftpd__tl_sched_stats(f);
	fputc('\n', f);
	fclose(f);
	sftpd__tl_nreqs = 0;
	sftpd__tl_nturns = 0;
	sftpd__tl_in_turn = false;
}

void sftpd_tl_finish(void)
{
	sftpd_tl_dump();
	sftpd_tl_on = false;
}
