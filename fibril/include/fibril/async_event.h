/*
 * libfibril: hosting an async engine and the fibril scheduler in a
 * libevent event_base (libfibril(3), "Embedding in a foreign event
 * loop").
 *
 * Threading: the engine, the base and these calls all belong to one
 * thread, the engine's.
 */
#ifndef FIBRIL_ASYNC_EVENT_H
#define FIBRIL_ASYNC_EVENT_H

#include "fibril/async.h"

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;

/**
 * Makes @base host @e: when the engine's fd is readable, its timeout
 * passes, or a submission needs flushing, the base calls
 * async_engine_process(e, ...) and then fibril_sched_run(), and keeps a
 * timer armed for the nearest fibril timeout (fibril_sched_timeout_ms())
 * so timed parks fire. The adapter takes over the engine's kick
 * (async_engine_set_kick()). At most one base per engine. Returns 0,
 * -EBUSY if already attached, or -errno.
 */
FIBRIL_API int async_event_attach(async_engine_t *e, struct event_base *base);

/**
 * Call after code outside the adapter (a socket callback, say) created,
 * started or woke fibrils, or started a timed park: schedules a
 * scheduler run and re-arms the fibril timer before the base sleeps
 * again. Cheap (no system call); harmless when nothing changed.
 */
FIBRIL_API void async_event_kick(async_engine_t *e);

/** Removes the adapter's events from the base; the engine stays usable.
 *  Safe on an engine that is not attached. */
FIBRIL_API void async_event_detach(async_engine_t *e);

#ifdef __cplusplus
}
#endif
#endif
