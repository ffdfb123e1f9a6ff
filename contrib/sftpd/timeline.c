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
static const char *const x__cat[X__C_N] = {
	"none", "connection", "bulk", "engine-fd", "immediate", "timer"
};

struct x__turn {
	uint64_t start, end, marshal;
	uint8_t cat;
};

struct x__req {
	uint64_t arr, read, built, written;
	uint64_t in_cat[X__C_N];  /* busy time per kind in [arr, read] */
	uint64_t marshal;         /* of which building NAME replies */
	uint32_t turns;           /* turns that ran in [arr, read] */
	uint8_t type;
};

bool sftpd_tl_on;
static const char *x__path;
static struct x__turn *x__turns;
static uint64_t x__nturns;
static struct x__turn x__cur;
static bool x__in_turn;
static struct x__req *x__reqs;
static size_t x__nreqs;

uint64_t sftpd_tl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sftpd_tl_marshal(uint64_t ns)
{
	x__cur.marshal += ns;
}

void sftpd_tl_conn(void)
{
	x__cur.cat = X__C_CONN;
}

void sftpd_tl_bulk(void)
{
	x__cur.cat = X__C_BULK;
}

static void x__loop(enum tevent_trace_point tp, void *arg)
{
	(void)arg;
	switch (tp) {
	case TEVENT_TRACE_BEFORE_LOOP_ONCE:
	case TEVENT_TRACE_AFTER_WAIT:
		memset(&x__cur, 0, sizeof(x__cur));
		x__cur.start = sftpd_tl_now();
		x__in_turn = true;
		break;
	case TEVENT_TRACE_BEFORE_WAIT:
	case TEVENT_TRACE_AFTER_LOOP_ONCE:
		if (!x__in_turn)
			break;
		x__in_turn = false;
		x__cur.end = sftpd_tl_now();
		x__turns[x__nturns++ % X__TURNS] = x__cur;
		break;
	}
}

static void x__mark(uint8_t cat)
{
	if (x__cur.cat == X__C_NONE)
		x__cur.cat = cat;
}

static void x__fd(struct tevent_fd *fde, enum tevent_event_trace_point tp,
                  void *arg)
{
	(void)fde;
	(void)arg;
	if (tp == TEVENT_EVENT_TRACE_BEFORE_HANDLER)
		x__mark(X__C_FD);
}

static void x__imm(struct tevent_immediate *im, enum tevent_event_trace_point tp,
                   void *arg)
{
	(void)im;
	(void)arg;
	if (tp == TEVENT_EVENT_TRACE_BEFORE_HANDLER)
		x__mark(X__C_IMM);
}

static void x__timer(struct tevent_timer *te, enum tevent_event_trace_point tp,
                     void *arg)
{
	(void)te;
	(void)arg;
	if (tp == TEVENT_EVENT_TRACE_BEFORE_HANDLER)
		x__mark(X__C_TIMER);
}

int sftpd_tl_start(struct tevent_context *ev)
{
	x__path = getenv("FSD_SFTP_TIMELINE");
	if (!x__path || !*x__path)
		return 0;
	x__turns = calloc(X__TURNS, sizeof(*x__turns));
	x__reqs = calloc(X__REQS, sizeof(*x__reqs));
	if (!x__turns || !x__reqs)
		return -1;
	FILE *f = fopen(x__path, "w");
	if (!f)
		return -1;
	fclose(f);
	tevent_set_trace_callback(ev, x__loop, NULL);
	tevent_set_trace_fd_callback(ev, x__fd, NULL);
	tevent_set_trace_immediate_callback(ev, x__imm, NULL);
	tevent_set_trace_timer_callback(ev, x__timer, NULL);
	sftpd_tl_on = true;
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
static void x__attribute(struct x__req *q)
{
	uint64_t lo = q->arr, hi = q->read;
	uint64_t n = x__nturns < X__TURNS ? x__nturns : X__TURNS;

	for (uint64_t i = 0; i < n; i++) {
		const struct x__turn *t = &x__turns[(x__nturns - 1 - i) % X__TURNS];
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
	if (x__in_turn && x__cur.start < hi) {
		uint64_t a = x__cur.start > lo ? x__cur.start : lo;
		q->in_cat[X__C_CONN] += hi - a;
	}
}

void sftpd_tl_req(uint8_t type, uint64_t arr, uint64_t read, uint64_t built,
                  uint64_t written)
{
	if (x__nreqs == X__REQS || !arr || !read)
		return;
	struct x__req *q = &x__reqs[x__nreqs++];
	memset(q, 0, sizeof(*q));
	q->type = type;
	q->arr = arr <= read ? arr : read;
	q->read = read;
	q->built = built;
	q->written = written ? written : built;
	x__attribute(q);
}

static int x__cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void x__pcts(FILE *f, const char *what, uint64_t *v, size_t n)
{
	if (!n)
		return;
	qsort(v, n, sizeof(*v), x__cmp_u64);
	fprintf(f, "%-24s p50 %8.1f  p90 %8.1f  p99 %8.1f  max %8.1f us\n", what,
	        v[n / 2] / 1e3, v[n * 9 / 10] / 1e3, v[n * 99 / 100] / 1e3,
	        v[n - 1] / 1e3);
}

static uint64_t x__total(const struct x__req *q)
{
	return q->written - q->arr;
}

static int x__cmp_req(const void *a, const void *b)
{
	uint64_t x = x__total(a), y = x__total(b);
	return x < y ? -1 : x > y;
}

/* The mean of the slowest 1 % of requests, stage by stage. */
static void x__tail(FILE *f)
{
	size_t n = x__nreqs, k = n / 100 ? n / 100 : 1, from = n - k;
	double cat[X__C_N] = { 0 }, marshal = 0, wait = 0, idle = 0, turns = 0;
	double build = 0, write = 0, total = 0;

	qsort(x__reqs, n, sizeof(*x__reqs), x__cmp_req);
	for (size_t i = from; i < n; i++) {
		const struct x__req *q = &x__reqs[i];
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
		total += x__total(q);
	}
	fprintf(f, "slowest %zu (1%%), mean us: total %.1f = arrival->read %.1f"
	        " + read->built %.1f + built->written %.1f\n", k, total / k / 1e3,
	        wait / k / 1e3, build / k / 1e3, write / k / 1e3);
	fprintf(f, "  arrival->read: %.1f turns;", turns / k);
	for (int c = 1; c < X__C_N; c++)
		fprintf(f, " %s %.1f", x__cat[c], cat[c] / k / 1e3);
	fprintf(f, " (of which NAME replies %.1f); loop not running %.1f\n",
	        marshal / k / 1e3, idle / k / 1e3);
}

static void x__turn_stats(FILE *f)
{
	uint64_t n = x__nturns < X__TURNS ? x__nturns : X__TURNS;
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return;
	for (int c = 1; c < X__C_N; c++) {
		size_t k = 0;
		uint64_t sum = 0, msum = 0;
		for (uint64_t i = 0; i < n; i++)
			if (x__turns[i].cat == c) {
				v[k++] = x__turns[i].end - x__turns[i].start;
				sum += v[k - 1];
				msum += x__turns[i].marshal;
			}
		if (!k)
			continue;
		char what[64];
		snprintf(what, sizeof(what), "turn %s (%zu)", x__cat[c], k);
		x__pcts(f, what, v, k);
		fprintf(f, "%-24s busy %.1f ms, NAME replies %.1f ms\n", "",
		        sum / 1e6, msum / 1e6);
	}
	free(v);
}

void sftpd_tl_dump(void)
{
	if (!sftpd_tl_on)
		return;
	FILE *f = fopen(x__path, "a");
	if (!f) {
		sftpd_log("%s: cannot write the timeline", x__path);
		return;
	}
	size_t n = x__nreqs;
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
	fprintf(f, "cheap requests %zu, loop turns %llu (last %u kept)\n", n,
	        (unsigned long long)x__nturns, X__TURNS);
	if (v && n) {
		for (size_t i = 0; i < n; i++)
			v[i] = x__reqs[i].read - x__reqs[i].arr;
		x__pcts(f, "arrival->read", v, n);
		for (size_t i = 0; i < n; i++)
			v[i] = x__reqs[i].built - x__reqs[i].read;
		x__pcts(f, "read->built", v, n);
		for (size_t i = 0; i < n; i++)
			v[i] = x__reqs[i].written - x__reqs[i].built;
		x__pcts(f, "built->written", v, n);
		for (size_t i = 0; i < n; i++)
			v[i] = x__total(&x__reqs[i]);
		x__pcts(f, "arrival->written", v, n);
		x__tail(f);
	}
	free(v);
	x__turn_stats(f);
	fputc('\n', f);
	fclose(f);
	x__nreqs = 0;
	x__nturns = 0;
	x__in_turn = false;
}

void sftpd_tl_finish(void)
{
	sftpd_tl_dump();
	sftpd_tl_on = false;
}
