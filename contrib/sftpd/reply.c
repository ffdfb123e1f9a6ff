/*
 * fsd-sftp: what every request's completion shares: status and
 * attribute replies, the connection's handle table, and the mapping of
 * a client's path to one beneath the root.
 */
#include "first.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "contrib/sftpd/sftpd.h"

void sftpd_status(struct sreq *r, uint32_t code, const char *msg)
{
	struct sw_buf *w = &r->c->out;
	size_t at = sw_begin(w, SSH_FXP_STATUS, r->id, true);

	sw_put_u32(w, code);
	sw_put_str(w, msg, strlen(msg));
	sw_put_str(w, "", 0);
	sw_end(w, at);
	sftpd_req_done(r);
}

void sftpd_status_errno(struct sreq *r, int err)
{
	sftpd_status(r, sw_errno_status(err), strerror(err));
}

void sftpd_put_attrs(struct sw_buf *w, const struct statx *stx)
{
	uint64_t at = (stx->stx_mask & STATX_ATIME) ? stx->stx_atime.tv_sec :
	              stx->stx_mtime.tv_sec;

	sw_put_u32(w, SSH_FILEXFER_ATTR_SIZE | SSH_FILEXFER_ATTR_UIDGID |
	              SSH_FILEXFER_ATTR_PERMISSIONS | SSH_FILEXFER_ATTR_ACMODTIME);
	sw_put_u64(w, stx->stx_size);
	sw_put_u32(w, stx->stx_uid);
	sw_put_u32(w, stx->stx_gid);
	sw_put_u32(w, stx->stx_mode);
	sw_put_u32(w, (uint32_t)at);
	sw_put_u32(w, (uint32_t)stx->stx_mtime.tv_sec);
}

/* ---- handles ---- */

static int sftpd__handle_destructor(struct shandle *h)
{
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

void sftpd_put_handle(struct sw_buf *w, const struct shandle *h)
{
	uint8_t b[8] = {
		(uint8_t)(h->slot >> 24), (uint8_t)(h->slot >> 16),
		(uint8_t)(h->slot >> 8), (uint8_t)h->slot,
		(uint8_t)(h->gen >> 24), (uint8_t)(h->gen >> 16),
		(uint8_t)(h->gen >> 8), (uint8_t)h->gen,
	};
	sw_put_str(w, b, sizeof(b));
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

/* ---- paths ---- */

char *sftpd_relpath(TALLOC_CTX *mem, const char *path)
{
	size_t n = strlen(path);
	char *out = talloc_size(mem, n + 2);
	size_t len = 0;

	if (!out)
		return NULL;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t k = (size_t)(p - s);
		if (k == 0 || (k == 1 && s[0] == '.'))
			continue;
		if (k == 2 && s[0] == '.' && s[1] == '.') {
			/* Lexically, and never above the root (as in a chroot). */
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			continue;
		}
		if (len)
			out[len++] = '/';
		memcpy(out + len, s, k);
		len += k;
	}
	if (len == 0)
		out[len++] = '.';
	out[len] = 0;
	return out;
}

const struct lk_lookup_opts *sftpd_lopts(struct sreq *r, int oflags)
{
	struct sftpd *s = r->c->srv;

	if (!s->cred && !s->icase)
		return NULL;
	r->lo = (struct lk_lookup_opts){
		.oflags = oflags,
		.flags = s->icase ? LK_LOOKUP_NOCASE : 0,
		.cred = s->cred,
	};
	return &r->lo;
}
