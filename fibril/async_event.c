/*
 * The libevent adapter: an event_base as the engine's host loop.
 *
 * libevent 2.1 has no "before sleeping" hook, so work the fd cannot
 * announce (queued SQEs, deferred callbacks, runnable fibrils) arrives
 * through the engine's kick, which activates an event; libevent then
 * runs it in the same loop iteration, before it polls again. Fibrils
 * that only yielded wait for a zero timer instead, which runs after
 * the poll.
 */
#include "first.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>

#include "fibril/async_event.h"
#include "fibril/async_int.h"

/* Bounds the time one wake-up spends on completions; what is left
 * makes async_engine_timeout_ms() 0 and we come straight back. */
#define ASYNC__EV_BUDGET 1024

struct async__evhost {
	async_engine_t *e;
	struct event *rd, *tm, *kick;
};

static void async__ev_rearm(struct async__evhost *h)
{
	int a = async_engine_timeout_ms(h->e);
	int b = fibril_sched_timeout_ms();
	int t = a < 0 ? b : b < 0 ? a : a < b ? a : b;

	if (a == 0) {
		event_active(h->kick, EV_TIMEOUT, 0);
	} else if (b == 0) {
		/* Only fibrils that yielded: after the base has polled, or one
		 * that yields in a loop would keep every fd waiting until it
		 * ends (an activated event runs in the same iteration). */
		struct timeval tv = { 0, 0 };
		evtimer_add(h->tm, &tv);
	} else if (t > 0) {
		struct timeval tv = { t / 1000, (t % 1000) * 1000 };
		evtimer_add(h->tm, &tv);
	} else {
		evtimer_del(h->tm);
	}
}

static void async__ev_cb(evutil_socket_t fd, short what, void *arg)
{
	struct async__evhost *h = arg;

	(void)fd;
	(void)what;
	async_engine_process(h->e, ASYNC__EV_BUDGET);
	/* Kicks from the fibrils we run now are redundant: we flush their
	 * submissions below and the re-arm sees whatever else is left. */
	h->e->kicked = true;
	fibril_sched_run();
	async__flush(h->e);
	h->e->kicked = false;
	async__ev_rearm(h);
}

static void async__ev_kick(void *arg)
{
	struct async__evhost *h = arg;

	event_active(h->kick, EV_TIMEOUT, 0);
}

FIBRIL_API int async_event_attach(async_engine_t *e, struct event_base *base)
{
	struct async__evhost *h;

	if (!e || !base)
		return -EINVAL;
	if (e->evhost)
		return -EBUSY;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->e = e;
	h->rd = event_new(base, e->efd, EV_READ | EV_PERSIST, async__ev_cb, h);
	h->tm = evtimer_new(base, async__ev_cb, h);
	h->kick = event_new(base, -1, 0, async__ev_cb, h);
	if (!h->rd || !h->tm || !h->kick || event_add(h->rd, NULL) < 0) {
		if (h->rd)
			event_free(h->rd);
		if (h->tm)
			event_free(h->tm);
		if (h->kick)
			event_free(h->kick);
		free(h);
		return -ENOMEM;
	}
	e->evhost = h;
	e->host_detach = async_event_detach;
	async_engine_set_kick(e, async__ev_kick, h);
	/* Work queued before attaching must not wait for the fd. */
	event_active(h->kick, EV_TIMEOUT, 0);
	return 0;
}

FIBRIL_API void async_event_kick(async_engine_t *e)
{
	if (e && e->evhost)
		event_active(e->evhost->kick, EV_TIMEOUT, 0);
}

FIBRIL_API void async_event_detach(async_engine_t *e)
{
	struct async__evhost *h = e ? e->evhost : NULL;

	if (!h)
		return;
	async_engine_set_kick(e, NULL, NULL);
	event_free(h->rd);
	event_free(h->tm);
	event_free(h->kick);
	free(h);
	e->evhost = NULL;
	e->host_detach = NULL;
}
