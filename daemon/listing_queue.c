#include "first.h"

/*
 * The places of listings (max_listings per worker) and the queue of the
 * listings waiting for one (listing_queue, each for at most
 * listing_queue_timeout seconds).
 *
 * A place stands for one scan of a directory, not for one request: the
 * lookup engine makes concurrent scans of the same directory (device,
 * inode and mtime) in the same order share one getdents pass and one
 * set of stats until the running one issues its first stat, so a
 * listing whose scan would join a running one joins its place too
 * (listing.c asks lk_scan_joinable()). The key below is the one
 * lk_scan_open() shares by (lookup_share.c): a listing that does not
 * actually share (the directory changed under it, the running scan began
 * its stats while this one's directory was being opened) still counts
 * with the one it was keyed with.
 *
 * A refusal answered at once is repeated at once by most clients
 * (wrk, crawlers, a browser's retry), so that beyond max_listings the
 * worker spends its time answering 503s and fewer listings get done.
 * Queued requests instead wait on their fibril until a place is given
 * back (oldest first), the deadline passes (503 + Retry-After), the
 * client goes away (its place in the queue is freed) or the worker
 * stops. A waiting fibril looks at its connection every
 * LST_Q_POLL_MS: libmicrohttpd does not watch a suspended connection,
 * so nobody else would notice that its client left.
 */

#include "daemon/listing_int.h"
#include "daemon/log.h"
#include "daemon/metrics.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include <fibril/fibril.h>

#define LST_Q_POLL_MS 200u

struct lst_slot {
	struct lst_key k;
	struct fsd_worker *w;
	unsigned refs;              /* listings running under this place */
	struct lst_slot *next;
};

struct lst_waiter {
	struct lst_key k;
	fibril_t *f;
	struct lst_slot *got;       /* set by grant() */
	struct lst_waiter *prev, *next;
};

/* This worker's places and queue (a worker thread owns its listings). */
static __thread struct lst_slot *slots;
static __thread struct lst_waiter *qhead, *qtail;
static __thread unsigned qlen;
static __thread bool q_stopped;

void lst_key_make(struct lst_key *k, const struct lk_file *dir,
                  const struct lk_scan_opts *o)
{
	*k = (struct lst_key){
		.dev_major = dir->stx.stx_dev_major,
		.dev_minor = dir->stx.stx_dev_minor,
		.ino = dir->stx.stx_ino,
		.mtime_sec = dir->stx.stx_mtime.tv_sec,
		.mtime_nsec = dir->stx.stx_mtime.tv_nsec,
		.sort = (unsigned)o->sort,
		.flags = o->flags,
		/* Unsorted scans stream and are never shared. */
		.shared = o->sort != LK_SORT_NONE && !(o->flags & LK_SCAN_NO_SHARE),
	};
}

static bool key_eq(const struct lst_key *a, const struct lst_key *b)
{
	return a->shared && b->shared && a->ino == b->ino &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec &&
	       a->sort == b->sort && a->flags == b->flags;
}

static struct lst_slot *find(const struct lst_key *k)
{
	for (struct lst_slot *s = slots; s; s = s->next)
		if (key_eq(&s->k, k))
			return s;
	return NULL;
}

/* A place for @k without waiting: a running scan's, or a new one. NULL
 * when every place is taken (or out of memory: the caller refuses). */
static struct lst_slot *take_now(struct fsd_worker *w, const struct lst_key *k)
{
	struct lst_slot *s = find(k);

	if (s) {
		s->refs++;
		return s;
	}
	if (w->listings >= fsd->conf.max_listings)
		return NULL;
	s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->k = *k;
	s->w = w;
	s->refs = 1;
	s->next = slots;
	slots = s;
	w->listings++;
	return s;
}

static void unlink_waiter(struct lst_waiter *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else
		qhead = q->next;
	if (q->next)
		q->next->prev = q->prev;
	else
		qtail = q->prev;
	q->prev = q->next = NULL;
	qlen--;
}

/* Hands places to waiters, oldest first; a later waiter whose scan is
 * already running joins it even when the older ones must go on
 * waiting. */
static void grant(struct fsd_worker *w)
{
	struct lst_waiter *q = qhead, *next;

	for (; q; q = next) {
		next = q->next;
		struct lst_slot *s = take_now(w, &q->k);
		if (!s)
			continue;
		q->got = s;
		unlink_waiter(q);
		fibril_wake(q->f);
	}
}

/* Whether the client of @rq has closed its side (or the socket failed):
 * a waiting request of a client gone gives its place in the queue back. */
static bool client_gone(struct fsd_req *rq)
{
	const union MHD_ConnectionInfo *ci;
	struct pollfd p = { .events = POLLRDHUP };

	if (!rq->conn)
		return true;
	ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return false;
	p.fd = ci->connect_fd;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Waits in the queue; the place, or NULL (answered, with the reason
 * logged). */
static struct lst_slot *wait_place(struct fsd_req *rq, const struct lst_key *k,
                                   const char *urlpath)
{
	struct lst_waiter q = { .k = *k, .f = fibril_self() };
	uint64_t deadline = fibril_now_ns() +
		(uint64_t)fsd->conf.listing_queue_timeout * 1000000000ull;
	const char *why = NULL;
	bool gone = false;

	q.prev = qtail;
	if (qtail)
		qtail->next = &q;
	else
		qhead = &q;
	qtail = &q;
	qlen++;
	fsd_log(LOG_INFO, "listing of %s waits for a place (%u queued)", urlpath, qlen);
	for (;;) {
		if (q.got) {
			fsd_log(LOG_DEBUG, "listing of %s takes a place (%u of %u, %u on its scan)",
			        urlpath, rq->w->listings, fsd->conf.max_listings, q.got->refs);
			return q.got;
		}
		uint64_t now = fibril_now_ns(), tick = now + LST_Q_POLL_MS * 1000000ull;
		fibril_park_until(tick < deadline ? tick : deadline);
		if (q.got)
			continue;
		if (q_stopped || rq->abandoned)
			why = "the worker stops";
		else if (fibril_now_ns() >= deadline)
			why = "no place within listing_queue_timeout";
		else if ((gone = client_gone(rq)))
			why = "its client went away";
		if (why)
			break;
	}
	unlink_waiter(&q);
	fsd_log(LOG_INFO, "listing of %s not queued any longer: %s", urlpath, why);
	FSD_M_INC(limited[FSD_M_LIM_LISTINGS]);
	if (gone)
		rq->close = true;
	fsd_req_error(rq, 503);         /* with Retry-After */
	return NULL;
}

struct lst_slot *lst_slot_take(struct fsd_req *rq, const struct lst_key *k,
                               const char *urlpath)
{
	struct lst_slot *s = NULL;

	/* Oldest first: a new listing joins a running scan, else it waits
	 * behind those already waiting. */
	if (!qhead || find(k))
		s = take_now(rq->w, k);
	if (s) {
		fsd_log(LOG_DEBUG, "listing of %s takes a place (%u of %u, %u on its scan)",
		        urlpath, rq->w->listings, fsd->conf.max_listings, s->refs);
		return s;
	}
	if (q_stopped || rq->w->stopping || qlen >= fsd->conf.listing_queue ||
	    !fibril_self()) {
		FSD_M_INC(limited[FSD_M_LIM_LISTINGS]);
		fsd_req_error(rq, 503);         /* with Retry-After */
		return NULL;
	}
	return wait_place(rq, k, urlpath);
}

void lst_slot_put(struct lst_slot *s)
{
	if (!s || --s->refs)
		return;
	struct fsd_worker *w = s->w;
	for (struct lst_slot **pp = &slots; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	free(s);
	w->listings--;
	grant(w);
}

void lst_queue_stop(void)
{
	q_stopped = true;
	for (struct lst_waiter *q = qhead; q; q = q->next)
		fibril_wake(q->f);
}
