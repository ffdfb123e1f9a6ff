#include "first.h"

#include "daemon/daemon.h"

#include <event2/event.h>
#include <fibril/fibril.h>

/* A worker's suspended requests (oldest first, so that expiring them is
 * a walk from the head) and the kick after a resume: what request.c asks
 * of its worker, apart from the loop in worker.c. */

void fsd_worker_track(struct fsd_worker *w, struct fsd_req *rq)
{
	rq->deadline_ns = fibril_now_ns() +
	                  (uint64_t)fsd->conf.request_timeout * 1000000000ull;
	rq->next = NULL;
	rq->prev = w->susp_tail;
	if (w->susp_tail)
		w->susp_tail->next = rq;
	else
		w->susp_head = rq;
	w->susp_tail = rq;
}

void fsd_worker_untrack(struct fsd_worker *w, struct fsd_req *rq)
{
	if (rq->prev)
		rq->prev->next = rq->next;
	else if (w->susp_head == rq)
		w->susp_head = rq->next;
	else
		return;         /* not tracked */
	if (rq->next)
		rq->next->prev = rq->prev;
	else
		w->susp_tail = rq->prev;
	rq->prev = rq->next = NULL;
}

void fsd_worker_kick(struct fsd_worker *w)
{
	w->resumed = true;
	event_active(w->kick_ev, EV_TIMEOUT, 0);
}
