/*
 * fsd-sftp: requests on paths and file handles. Each request is an
 * operation on the engine (ftev_*_send) whose completion writes the
 * reply; nothing here waits. The server is read-only: requests that
 * would change the file system get SSH_FX_PERMISSION_DENIED.
 */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "contrib/sftpd/sftpd.h"

/* The request's path argument, beneath the root; NULL after replying. */
static char *sftpd__path(struct sreq *r, struct sw_reader *rd)
{
	char *p = sw_path(rd, r);
	char *rel = p ? sftpd_relpath(r, p) : NULL;

	if (!rel)
		sftpd_status(r, SSH_FX_BAD_MESSAGE, "malformed path");
	return rel;
}

/* ---- completions ---- */

static void sftpd__attrs_done(struct tevent_req *req)
{
	struct sreq *r = tevent_req_callback_data(req, struct sreq);
	struct statx stx;
	int rc = r->type == SSH_FXP_FSTAT ? ftev_fstat_recv(req, &stx) :
	         ftev_stat_recv(req, &stx);

	talloc_free(req);
	if (r->h)
		sftpd_handle_release(r->h);
	if (rc < 0) {
		sftpd_status_errno(r, -rc);
		return;
	}
	struct sw_buf *w = &r->c->out;
	size_t at = sw_begin(w, SSH_FXP_ATTRS, r->id, true);
	sftpd_put_attrs(w, &stx);
	sw_end(w, at);
	sftpd_req_done(r);
}

static void sftpd__open_done(struct tevent_req *req)
{
	struct sreq *r = tevent_req_callback_data(req, struct sreq);
	struct lk_file f;
	struct shandle *h = sftpd_handle_opened(req, r, SH_FILE, &f);

	if (!h)
		return;
	sftpd_handle_reply(r, h);
}

static void sftpd__read_done(struct tevent_req *req);

/* A read from the page cache (RWF_NOWAIT) may stop short of what is
 * there; clients such as sshfs take a short DATA for the end of the
 * file, so a short read continues until the count or the end. */
static bool sftpd__read_more(struct sreq *r)
{
	struct tevent_req *req = ftev_pread_send(r, r->c->srv->ft, r->h->fd,
	                                         r->want - r->got, r->off + r->got);
	if (!req)
		return false;
	tevent_req_set_callback(req, sftpd__read_done, r);
	return true;
}

static void sftpd__read_done(struct tevent_req *req)
{
	struct sreq *r = tevent_req_callback_data(req, struct sreq);
	uint8_t *buf = NULL;
	ssize_t n = ftev_pread_recv(req, r, &buf);

	talloc_free(req);
	if (n > 0) {
		if (!r->data) {
			r->data = talloc_steal(r, buf);
		} else {
			uint8_t *d = talloc_realloc(r, r->data, uint8_t, r->got + (size_t)n);
			if (!d) {
				n = -ENOMEM;
				goto reply;
			}
			memcpy(d + r->got, buf, (size_t)n);
			r->data = d;
			talloc_free(buf);
		}
		r->got += (uint32_t)n;
		if (r->got < r->want && sftpd__read_more(r))
			return;
	}
reply:
	sftpd_handle_release(r->h);
	if (r->got == 0 && n < 0) {
		sftpd_status_errno(r, (int)-n);
		return;
	}
	if (r->got == 0) {
		sftpd_status(r, SSH_FX_EOF, "end of file");
		return;
	}
	struct sw_buf *w = &r->c->out;
	size_t at = sw_begin(w, SSH_FXP_DATA, r->id, true);
	sw_put_str(w, r->data, r->got);
	sw_end(w, at);
	sftpd_req_done(r);
}

static void sftpd__readlink_done(struct tevent_req *req)
{
	struct sreq *r = tevent_req_callback_data(req, struct sreq);
	char *target = NULL;
	int rc = ftev_readlink_recv(req, r, &target);

	talloc_free(req);
	if (rc < 0) {
		sftpd_status_errno(r, -rc);
		return;
	}
	struct sw_buf *w = &r->c->out;
	size_t at = sw_begin(w, SSH_FXP_NAME, r->id, true);
	sw_put_u32(w, 1);
	sw_put_str(w, target, strlen(target));
	sw_put_str(w, target, strlen(target));
	sw_put_u32(w, 0);
	sw_end(w, at);
	sftpd_req_done(r);
}

/* ---- requests ---- */

static bool sftpd__started(struct sreq *r, struct tevent_req *req,
                       tevent_req_fn fn)
{
	if (!req) {
		if (r->h)
			sftpd_handle_release(r->h);
		sftpd_status(r, SSH_FX_FAILURE, "out of memory");
		return false;
	}
	tevent_req_set_callback(req, fn, r);
	/* Done inside _send (a STAT of a path in the dentry cache): the
	 * answer goes out now, with the replies of this read, rather than
	 * from the immediate event tevent_req_post() queued behind
	 * whatever else is queued there. Receiving frees the request and
	 * that event with it. */
	if (!tevent_req_is_in_progress(req))
		fn(req);
	return true;
}

static void sftpd__open(struct sreq *r, struct sw_reader *rd)
{
	char *rel = sftpd__path(r, rd);
	if (!rel)
		return;
	uint32_t pflags = sw_u32(rd);
	sw_skip_attrs(rd);
	if (rd->bad) {
		sftpd_status(r, SSH_FX_BAD_MESSAGE, "malformed OPEN");
		return;
	}
	if (pflags & (SSH_FXF_WRITE | SSH_FXF_APPEND | SSH_FXF_CREAT |
	              SSH_FXF_TRUNC | SSH_FXF_EXCL)) {
		sftpd_status(r, SSH_FX_PERMISSION_DENIED, "read-only server");
		return;
	}
	struct sftpd *s = r->c->srv;
	/* O_NONBLOCK: opening a FIFO beneath the root must not hold a
	 * thread until a writer comes. */
	int of = O_RDONLY | O_NONBLOCK | O_NOCTTY;
	const struct lk_lookup_opts *lo = sftpd_lopts(r, of);
	sftpd__started(r, lo ? ftev_lookup_send(r, s->ft, s->root, rel, lo) :
	                   ftev_open_send(r, s->ft, s->root, rel, of, NULL),
	           sftpd__open_done);
}

static void sftpd__close_handle(struct sreq *r, struct sw_reader *rd)
{
	struct shandle *h = sftpd_handle_get(r->c, rd, 0);

	if (!h) {
		sftpd_status(r, rd->bad ? SSH_FX_BAD_MESSAGE : SSH_FX_FAILURE,
		             "invalid handle");
		return;
	}
	h->closed = true;
	r->c->h[h->slot] = NULL;
	if (h->kind == SH_DIR)
		sftpd_dir_closed(h);
	if (h->busy) {
		/* Reads in flight use the descriptor: it is closed when the
		 * last one ends (sftpd_handle_release). */
		sftpd_status(r, SSH_FX_OK, "ok");
		return;
	}
	/* The reply waits for the close, as sftp-server's does, so that
	 * its status is the close's own. */
	int fd = h->fd;
	h->fd = -1;
	talloc_free(h);
	sftpd_close_reply(r, fd);
}

static void sftpd__read(struct sreq *r, struct sw_reader *rd)
{
	struct shandle *h = sftpd_handle_get(r->c, rd, SH_FILE);
	uint64_t off = sw_u64(rd);
	uint32_t len = sw_u32(rd);

	if (rd->bad || !h) {
		sftpd_status(r, rd->bad ? SSH_FX_BAD_MESSAGE : SSH_FX_FAILURE,
		             rd->bad ? "malformed READ" : "invalid handle");
		return;
	}
	if (off > INT64_MAX) {
		sftpd_status(r, SSH_FX_EOF, "end of file");
		return;
	}
	if (len > SFTPD_MAX_READ)
		len = SFTPD_MAX_READ;
	r->h = h;
	r->off = off;
	r->want = len;
	r->reserve = len;
	r->c->reserved += len;
	h->busy++;
	sftpd__started(r, ftev_pread_send(r, r->c->srv->ft, h->fd, len, off),
	           sftpd__read_done);
}

static void sftpd__stat(struct sreq *r, struct sw_reader *rd)
{
	char *rel = sftpd__path(r, rd);
	if (!rel)
		return;
	/* v3 has no flags here; some clients send attribute flags anyway. */
	struct sftpd *s = r->c->srv;
	unsigned fl = r->type == SSH_FXP_LSTAT ? FTEV_NOFOLLOW : 0;
	sftpd__started(r, ftev_stat_send(r, s->ft, s->root, rel, fl,
	                             sftpd_lopts(r, 0)),
	           sftpd__attrs_done);
}

static void sftpd__fstat(struct sreq *r, struct sw_reader *rd)
{
	struct shandle *h = sftpd_handle_get(r->c, rd, 0);

	if (!h) {
		sftpd_status(r, rd->bad ? SSH_FX_BAD_MESSAGE : SSH_FX_FAILURE,
		             "invalid handle");
		return;
	}
	r->h = h;
	h->busy++;
	sftpd__started(r, ftev_fstat_send(r, r->c->srv->ft, h->fd), sftpd__attrs_done);
}

static void sftpd__realpath(struct sreq *r, struct sw_reader *rd)
{
	char *rel = sftpd__path(r, rd);
	if (!rel)
		return;
	/* Lexical, like the resolution of every other path here: the root
	 * is "/", and ".." never leaves it. */
	char *abs = strcmp(rel, ".") == 0 ? talloc_strdup(r, "/") :
	            talloc_asprintf(r, "/%s", rel);
	if (!abs) {
		sftpd_status(r, SSH_FX_FAILURE, "out of memory");
		return;
	}
	struct sw_buf *w = &r->c->out;
	size_t at = sw_begin(w, SSH_FXP_NAME, r->id, true);
	sw_put_u32(w, 1);
	sw_put_str(w, abs, strlen(abs));
	sw_put_str(w, abs, strlen(abs));
	sw_put_u32(w, 0);
	sw_end(w, at);
	sftpd_req_done(r);
}

static void sftpd__readlink(struct sreq *r, struct sw_reader *rd)
{
	char *rel = sftpd__path(r, rd);
	if (!rel)
		return;
	struct sftpd *s = r->c->srv;
	sftpd__started(r, ftev_readlink_send(r, s->ft, s->root, rel,
	                                 sftpd_lopts(r, 0)),
	           sftpd__readlink_done);
}

static void sftpd__opendir(struct sreq *r, struct sw_reader *rd)
{
	char *rel = sftpd__path(r, rd);
	if (rel)
		sftpd_opendir(r, rel);
}

static void sftpd__readdir(struct sreq *r, struct sw_reader *rd)
{
	struct shandle *h = sftpd_handle_get(r->c, rd, SH_DIR);

	if (!h) {
		sftpd_status(r, rd->bad ? SSH_FX_BAD_MESSAGE : SSH_FX_FAILURE,
		             "invalid handle");
		return;
	}
	sftpd_readdir(r, h);
}

static void sftpd__init(struct sconn *c, struct sw_reader *rd)
{
	(void)sw_u32(rd);  /* the client's version: we answer 3 whatever it is */
	c->inited = true;
	size_t at = sw_begin(&c->out, SSH_FXP_VERSION, 0, false);
	sw_put_u32(&c->out, 3);
	sw_end(&c->out, at);
}

void sftpd_dispatch(struct sconn *c, uint8_t type, struct sw_reader *rd)
{
	if (type == SSH_FXP_INIT) {
		if (c->inited) {
			/* No id to answer with: a second INIT ends the connection. */
			c->eof = true;
			return;
		}
		sftpd__init(c, rd);
		return;
	}
	struct sreq *r = talloc_zero(c, struct sreq);
	if (!r) {
		c->out.oom = true;
		return;
	}
	r->c = c;
	r->type = type;
	r->id = sw_u32(rd);
	r->tl_arr = c->tl_arr;
	r->tl_read = c->tl_read;
	c->pending++;
	switch (type) {
	case SSH_FXP_OPEN:     sftpd__open(r, rd); break;
	case SSH_FXP_CLOSE:    sftpd__close_handle(r, rd); break;
	case SSH_FXP_READ:     sftpd__read(r, rd); break;
	case SSH_FXP_LSTAT:
	case SSH_FXP_STAT:     sftpd__stat(r, rd); break;
	case SSH_FXP_FSTAT:    sftpd__fstat(r, rd); break;
	case SSH_FXP_OPENDIR:  sftpd__opendir(r, rd); break;
	case SSH_FXP_READDIR:  sftpd__readdir(r, rd); break;
	case SSH_FXP_REALPATH: sftpd__realpath(r, rd); break;
	case SSH_FXP_READLINK: sftpd__readlink(r, rd); break;
	case SSH_FXP_WRITE:    case SSH_FXP_SETSTAT: case SSH_FXP_FSETSTAT:
	case SSH_FXP_REMOVE:   case SSH_FXP_MKDIR:   case SSH_FXP_RMDIR:
	case SSH_FXP_RENAME:   case SSH_FXP_SYMLINK:
		sftpd_status(r, SSH_FX_PERMISSION_DENIED, "read-only server");
		break;
	default:
		sftpd_status(r, SSH_FX_OP_UNSUPPORTED, "unsupported request");
		break;
	}
}
