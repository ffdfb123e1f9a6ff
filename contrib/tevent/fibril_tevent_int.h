/* libfibril-tevent: what its two source files share. */
#ifndef FIBRIL_TEVENT_INT_H
#define FIBRIL_TEVENT_INT_H

#include <stdbool.h>

#include "contrib/tevent/fibril_tevent.h"

struct ftev {
	struct tevent_context *ev;
	async_engine_t *e;
	struct tevent_fd *fde;
	struct tevent_timer *tm;
	struct tevent_immediate *im;
	/* Requests completed by the engine, notified once the engine is
	 * done reaping (never from inside async_engine_process()). One
	 * immediate event per completion would let a busy engine starve
	 * the loop's fds: tevent runs one immediate per iteration and polls
	 * fds only when none is left. */
	struct ftev__ready { struct tevent_req *req; int err; } *ready;
	size_t nready, capready;
	bool in_run;
	/* While ftev__run is on the stack: its flag, which the destructor
	 * sets so that the run stops touching the freed ftev. */
	bool *freed;
};

/** Queues @req to be finished (done, or error @err) by the host. */
void ftev__complete(struct ftev *ft, struct tevent_req *req, int err);
/** Drops @req from the queue (it is being freed). */
void ftev__forget(struct ftev *ft, struct tevent_req *req);

#endif
