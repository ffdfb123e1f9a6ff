/*
 * fsd-sftp: closing descriptors off the loop. On FUSE, NFS or CIFS,
 * close(2) of a file waits for the server (FUSE's FLUSH, NFS's flush on
 * close): run on the loop, one slow close would hold every connection.
 * The engine runs it instead (inline where the file system is local
 * and a close costs nothing, else on the ring's workers or the pool),
 * and the descriptor stays open, its number taken, until it is done.
 */
#include "first.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contrib/sftpd/sftpd.h"

/* The CLOSE request waiting for the result: a talloc child of the
 * request, so that a connection going away drops the wait (and the
 * close goes on alone). */
struct sftpd__close_wait {
	struct sreq *r;
	struct sftpd__close *cl;
	struct tevent_immediate *im;
	int err;
};

/* What the engine writes: plain memory, alive until the completion
 * whatever happens to the request. */
struct sftpd__close {
	long res;
	int fd;
	struct sftpd *srv;
	struct sftpd__close_wait *w;
};

static int sftpd__wait_destructor(struct sftpd__close_wait *w)
{
	if (w->cl)
		w->cl->w = NULL;
	return 0;
}

/* From the loop, not from the engine's completion: the reply may free
 * the connection, and that cancels operations of the engine. */
static void sftpd__close_reply(struct tevent_context *ev,
                               struct tevent_immediate *im, void *arg)
{
	struct sftpd__close_wait *w = arg;
	(void)ev;
	(void)im;
	if (w->err)
		sftpd_status_errno(w->r, w->err);
	else
		sftpd_status(w->r, SSH_FX_OK, "ok");
}

static void sftpd__close_done(void *arg, long res)
{
	struct sftpd__close *cl = arg;

	/* Cancelled when the engine went away before running it. */
	if (res == -ECANCELED)
		res = close(cl->fd) < 0 ? -errno : 0;
	cl->srv->closing--;
	if (cl->w) {
		struct sftpd__close_wait *w = cl->w;
		w->cl = NULL;
		/* The descriptor is gone either way: EINTR is not an error
		 * worth a client's attention. */
		w->err = res < 0 && res != -EINTR ? (int)-res : 0;
		tevent_schedule_immediate(w->im, cl->srv->ev, sftpd__close_reply, w);
	}
	free(cl);
}

/* Starts closing @fd; @w (may be NULL) learns the result. Returns true
 * when the close is in flight, false when it is already done (the
 * result then in *res). */
static bool sftpd__close_start(struct sftpd *srv, int fd,
                               struct sftpd__close_wait *w, long *res)
{
	struct sftpd__close *cl = malloc(sizeof(*cl));

	if (!cl) {
		*res = close(fd) < 0 ? -errno : 0;
		return false;
	}
	*cl = (struct sftpd__close){ .fd = fd, .srv = srv, .w = w };
	unsigned long a[1] = { (unsigned long)fd };
	long rc = async_submit_cb(0, &cl->res, ASYNC_CLOSE, a, sftpd__close_done, cl);
	if (rc > 0) {
		srv->closing++;
		if (w)
			w->cl = cl;
		return true;
	}
	/* 0: done at once (a local file system); < 0: no engine. */
	*res = rc == 0 ? cl->res : close(fd) < 0 ? -errno : 0;
	free(cl);
	return false;
}

void sftpd_close_fd(struct sftpd *srv, int fd)
{
	long res;

	if (fd >= 0)
		sftpd__close_start(srv, fd, NULL, &res);
}

void sftpd_close_reply(struct sreq *r, int fd)
{
	struct sftpd__close_wait *w = talloc_zero(r, struct sftpd__close_wait);
	long res;

	if (w)
		w->im = tevent_create_immediate(w);
	if (!w || !w->im) {
		sftpd_close_fd(r->c->srv, fd);
		sftpd_status(r, SSH_FX_OK, "ok");
		return;
	}
	w->r = r;
	talloc_set_destructor(w, sftpd__wait_destructor);
	if (sftpd__close_start(r->c->srv, fd, w, &res))
		return;
	talloc_set_destructor(w, NULL);
	if (res < 0 && res != -EINTR)
		sftpd_status_errno(r, (int)-res);
	else
		sftpd_status(r, SSH_FX_OK, "ok");
}
