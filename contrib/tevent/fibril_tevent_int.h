/* libfibril-tevent: what its two source files share. */
#ifndef FIBRIL_TEVENT_INT_H
#define FIBRIL_TEVENT_INT_H

#include "contrib/tevent/fibril_tevent.h"

struct ftev {
	struct tevent_context *ev;
	async_engine_t *e;
	struct tevent_fd *fde;
	struct tevent_timer *tm;
	struct tevent_immediate *im;
};

#endif
