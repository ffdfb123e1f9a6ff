/*
 * libfibril-tevent: directory scans. The scan object (a talloc child of
 * the caller's context) owns the lk_scan_t and is the argument of
 * lk_scan_next_cb(), so a next request can go away while the scan's
 * callback is pending: the callback then finds no request and leaves
 * the batch for the next one.
 */
#include "first.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "contrib/tevent/fibril_tevent_int.h"

struct ftev_scan {
	struct ftev *ft;
	lk_scan_t *lk;
	struct tevent_req *cur;   /* the pending next request */
	bool cb_pending;          /* lk_scan_next_cb() will call us back */
};

struct ftev__next_state {
	struct ftev *ft;
	struct ftev_scan *s;      /* NULL once detached */
	int res;
	struct lk_entry *ents;
	size_t n;
};

static int ftev__scan_destructor(struct ftev_scan *s)
{
	struct tevent_req *req = s->cur;

	/* lk_scan_close(): a pending callback does not run after it. */
	lk_scan_close(s->lk);
	if (req) {
		s->cur = NULL;
		struct ftev__next_state *st = tevent_req_data(req, struct ftev__next_state);
		st->s = NULL;
		tevent_req_defer_callback(req, s->ft->ev);
		tevent_req_error(req, ECANCELED);
	}
	return 0;
}

int ftev_scan_open(TALLOC_CTX *mem, struct ftev *ft, lk_root_t *r,
                   const char *dir, const struct lk_scan_opts *o,
                   struct ftev_scan **out)
{
	struct ftev_scan *s = talloc_zero(mem, struct ftev_scan);
	if (!s)
		return -ENOMEM;
	int rc = lk_scan_open(r, dir, o, &s->lk);
	if (rc < 0) {
		talloc_free(s);
		return rc;
	}
	s->ft = ft;
	talloc_set_destructor(s, ftev__scan_destructor);
	*out = s;
	return 0;
}

/* Copies the batch: lk_scan's pointers last only until its next call. */
static int ftev__copy(struct ftev__next_state *st, const struct lk_entry *e,
                   size_t n)
{
	struct lk_entry *a = talloc_array(st, struct lk_entry, n);
	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		a[i] = e[i];
		a[i].name = talloc_memdup(a, e[i].name, e[i].namelen + 1);
		a[i].link = e[i].link ? talloc_strdup(a, e[i].link) : NULL;
		if (!a[i].name || (e[i].link && !a[i].link)) {
			talloc_free(a);
			return -ENOMEM;
		}
	}
	st->ents = a;
	st->n = n;
	return 1;
}

static void ftev__ready(void *arg);

/* Asks the scan for a batch; false while it has none yet. */
static bool ftev__try(struct ftev_scan *s, struct ftev__next_state *st)
{
	const struct lk_entry *e;
	size_t n;

	if (s->cb_pending)
		return false;
	int rc = lk_scan_next_cb(s->lk, &e, &n, ftev__ready, s);
	if (rc == -EAGAIN) {
		s->cb_pending = true;
		return false;
	}
	st->res = rc == 1 ? ftev__copy(st, e, n) : rc;
	return true;
}

static void ftev__ready(void *arg)
{
	struct ftev_scan *s = arg;
	struct tevent_req *req = s->cur;

	s->cb_pending = false;
	if (!req)
		return;   /* the batch waits for the next request */
	struct ftev__next_state *st = tevent_req_data(req, struct ftev__next_state);
	if (!ftev__try(s, st))
		return;
	s->cur = NULL;
	st->s = NULL;
	ftev__complete(s->ft, req, st->res < 0 ? -st->res : 0);
}

static bool ftev__next_cancel(struct tevent_req *req)
{
	struct ftev__next_state *st = tevent_req_data(req, struct ftev__next_state);

	if (!st->s)
		return false;
	lk_scan_cancel(st->s->lk);
	return true;
}

static void ftev__next_cleanup(struct tevent_req *req, enum tevent_req_state state)
{
	struct ftev__next_state *st = tevent_req_data(req, struct ftev__next_state);

	if (state == TEVENT_REQ_RECEIVED)
		ftev__forget(st->ft, req);
	if (state == TEVENT_REQ_RECEIVED && st->s) {
		if (st->s->cur == req)
			st->s->cur = NULL;
		st->s = NULL;
	}
}

struct tevent_req *ftev_scan_next_send(TALLOC_CTX *mem, struct ftev_scan *s)
{
	struct ftev__next_state *st;
	struct tevent_req *req = tevent_req_create(mem, &st, struct ftev__next_state);
	if (!req)
		return NULL;
	st->ft = s->ft;
	tevent_req_set_cleanup_fn(req, ftev__next_cleanup);
	if (s->cur) {
		tevent_req_error(req, EBUSY);
		return tevent_req_post(req, s->ft->ev);
	}
	if (ftev__try(s, st)) {
		if (st->res < 0)
			tevent_req_error(req, -st->res);
		else
			tevent_req_done(req);
		return tevent_req_post(req, s->ft->ev);
	}
	st->s = s;
	s->cur = req;
	tevent_req_set_cancel_fn(req, ftev__next_cancel);
	return req;
}

int ftev_scan_next_recv(struct tevent_req *req, TALLOC_CTX *mem,
                        struct lk_entry **ents, size_t *n)
{
	struct ftev__next_state *st = tevent_req_data(req, struct ftev__next_state);
	enum tevent_req_state state;
	uint64_t err;
	int rc;

	if (tevent_req_is_error(req, &state, &err))
		rc = state == TEVENT_REQ_USER_ERROR ? -(int)err : -ENOMEM;
	else
		rc = st->res;
	if (rc == 1) {
		*ents = talloc_steal(mem, st->ents);
		*n = st->n;
	} else {
		*ents = NULL;
		*n = 0;
	}
	tevent_req_received(req);
	return rc;
}
