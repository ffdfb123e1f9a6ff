/*
 * fsd-sftp: the connection's handle table, and the server's queue of
 * handles with bulk work. A handle owns its descriptor, closed through
 * the engine (close.c) when the handle goes.
 */
#include "first.h"

#include <stdint.h>
#include <unistd.h>

#include "contrib/sftpd/sftpd.h"

static int sftpd__handle_destructor(struct shandle *h)
{
	if (h->queued)
		sftpd_bulk_forget(h);
	sftpd_close_fd(h->c->srv, h->fd);
	return 0;
}

struct shandle *sftpd_handle_new(struct sconn *c, enum shandle_kind kind, int fd)
{
	for (uint32_t i = 0; i < SFTPD_MAX_HANDLES; i++) {
		if (c->h[i])
			continue;
		struct shandle *h = talloc_zero(c, struct shandle);
		if (!h)
			return NULL;
		h->c = c;
		h->kind = kind;
		h->slot = i;
		h->gen = ++c->gen;
		h->fd = fd;
		talloc_set_destructor(h, sftpd__handle_destructor);
		c->h[i] = h;
		return h;
	}
	return NULL;
}

struct shandle *sftpd_handle_opened(struct tevent_req *req, struct sreq *r,
                                    enum shandle_kind kind, struct lk_file *f)
{
	int rc = ftev_open_recv(req, f);

	talloc_free(req);
	if (rc < 0) {
		sftpd_status_errno(r, -rc);
		return NULL;
	}
	struct shandle *h = sftpd_handle_new(r->c, kind, f->fd);
	if (!h) {
		sftpd_close_fd(r->c->srv, f->fd);
		sftpd_status(r, SSH_FX_FAILURE, "too many open handles");
	}
	return h;
}

void sftpd_handle_reply(struct sreq *r, const struct shandle *h)
{
	struct sw_buf *w = &r->c->out;
	size_t at = sw_begin(w, SSH_FXP_HANDLE, r->id, true);
	uint8_t b[8] = {
		(uint8_t)(h->slot >> 24), (uint8_t)(h->slot >> 16),
		(uint8_t)(h->slot >> 8), (uint8_t)h->slot,
		(uint8_t)(h->gen >> 24), (uint8_t)(h->gen >> 16),
		(uint8_t)(h->gen >> 8), (uint8_t)h->gen,
	};
	sw_put_str(w, b, sizeof(b));
	sw_end(w, at);
	sftpd_req_done(r);
}

/* A handle of @kind (0: either) named by the next string, else NULL. */
struct shandle *sftpd_handle_get(struct sconn *c, struct sw_reader *rd,
                                 enum shandle_kind kind)
{
	uint32_t n;
	const uint8_t *p = sw_str(rd, &n);

	if (!p || n != 8)
		return NULL;
	struct sw_reader hr = { .p = p, .n = 8 };
	uint32_t slot = sw_u32(&hr), gen = sw_u32(&hr);
	if (slot >= SFTPD_MAX_HANDLES)
		return NULL;
	struct shandle *h = c->h[slot];
	if (!h || h->gen != gen || h->closed || (kind && h->kind != kind))
		return NULL;
	return h;
}

/* An operation on @h ended; a closed handle goes once idle. */
void sftpd_handle_release(struct shandle *h)
{
	if (--h->busy == 0 && h->closed)
		talloc_free(h);
}

/* ---- the server's queue of handles waiting for bulk work ---- */

void sftpd_bulk_arm(struct sftpd *s, bool on)
{
	uint64_t v = 1;

	if (on ? write(s->bulk_fd, &v, sizeof(v)) : read(s->bulk_fd, &v, sizeof(v))) {
		/* Nothing to do: an eventfd counter neither overflows
		 * here nor fails to read once written. */
	}
}

void sftpd_bulk_add(struct shandle *h)
{
	struct sftpd *s = h->c->srv;

	if (h->queued)
		return;
	h->queued = true;
	h->bulk_next = NULL;
	if (s->bulk_tail) {
		s->bulk_tail->bulk_next = h;
	} else {
		s->bulk_head = h;
		sftpd_bulk_arm(s, true);
	}
	s->bulk_tail = h;
}

void sftpd_bulk_forget(struct shandle *h)
{
	struct sftpd *s = h->c->srv;
	struct shandle **pp = &s->bulk_head, *prev = NULL;

	while (*pp && *pp != h) {
		prev = *pp;
		pp = &(*pp)->bulk_next;
	}
	if (*pp)
		*pp = h->bulk_next;
	if (s->bulk_tail == h)
		s->bulk_tail = prev;
	h->queued = false;
	if (!s->bulk_head)
		sftpd_bulk_arm(s, false);
}
