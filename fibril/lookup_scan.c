/* Scans as their users see them: open, next (blocking or callback),
 * cancel, close. The work itself is in lookup_flight.c (driving) and
 * lookup_share.c (the flight's life). */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fibril/lookup_int.h"
#include "fibril/async_mnt.h"

static void scan_notify(struct lk_scan *s)
{
	if (s->wq.head)
		fibril_waitq_wake_all(&s->wq);
	if (s->cb && lk__flight_ready(s)) {
		void (*cb)(void *) = s->cb;
		s->cb = NULL;
		cb(s->cb_arg);
	}
}

static void expand(const struct lk__flight *f, const struct lk__rec *r,
		   struct lk_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->name = r->name;
	e->namelen = r->namelen;
	e->link = r->link;
	e->err = r->err;
	e->target_mode = r->target_mode;
	e->target_err = r->target_err;
	if (r->err)
		return;
	e->stx.stx_mask = LK__STX_MASK;
	e->stx.stx_mode = r->mode;
	e->stx.stx_nlink = r->nlink;
	e->stx.stx_uid = r->uid;
	e->stx.stx_gid = r->gid;
	e->stx.stx_ino = r->ino;
	e->stx.stx_size = r->size;
	e->stx.stx_blocks = r->blocks;
	e->stx.stx_mtime.tv_sec = r->mtime;
	e->stx.stx_mtime.tv_nsec = r->mtime_nsec;
	e->stx.stx_dev_major = f->dev_major;
	e->stx.stx_dev_minor = f->dev_minor;
	e->stx.stx_attributes_mask = STATX_ATTR_MOUNT_ROOT;
	if (r->mount_root)
		e->stx.stx_attributes = STATX_ATTR_MOUNT_ROOT;
}

static int try_next(struct lk_scan *s, const struct lk_entry **ents,
		    size_t *n)
{
	if (s->cancelled)
		return -ECANCELED;
	if (s->err)
		return s->err;
	if (s->ended)
		return 0;
	struct lk__flight *f = s->f;
	if (!f)
		return -EAGAIN;   /* the directory is still being opened */
	if (f->streaming)
		lk__flight_compact(f, s->pos);
	lk__flight_pump(f);
	if (f->err)
		return s->err = f->err;
	if (!lk__flight_ready(s))
		return -EAGAIN;
	if (s->cancelled)
		return -ECANCELED;
	size_t k = 0, lim = lk__scan_limit(s);
	if (f->streaming) {
		while (k < lk__deliver_max(s) && s->delivered < lim && s->pos < f->nrec &&
		       f->recs[s->pos].state == REC_DONE) {
			const struct lk__rec *r = &f->recs[s->pos++];
			if (r->err == -ENOENT)
				continue;
			expand(f, r, &s->batch[k++]);
			s->delivered++;
		}
	} else {
		while (k < lk__deliver_max(s) && s->delivered < lim && s->pos < f->norder) {
			const struct lk__rec *r = lk__ordered(f, s->pos);
			if (r->state != REC_DONE)
				break;
			/* Sorted order reads records and names at random places:
			 * a cache miss each, one after the other unless asked for
			 * ahead (the caller reads every name next). */
			if (s->pos + LK__AHEAD < f->nsorted)
				__builtin_prefetch(&f->recs[f->order[s->pos + LK__AHEAD].idx]);
			__builtin_prefetch(r->name);
			s->pos++;
			if (r->err == -ENOENT)
				continue;
			expand(f, r, &s->batch[k++]);
			s->delivered++;
		}
	}
	if (k == 0) {
		s->ended = true;
		return 0;
	}
	/* Start the next window now, while the caller handles this batch. */
	lk__flight_pump(f);
	lk__flight_notify(f);
	*ents = s->batch;
	*n = k;
	return 1;
}

FIBRIL_API int lk_scan_next(lk_scan_t *s, const struct lk_entry **ents,
			    size_t *n)
{
	s->cb = NULL;
	for (;;) {
		int rc = try_next(s, ents, n);
		if (rc != -EAGAIN)
			return rc;
		lk__wait(&s->wq);
	}
}

FIBRIL_API int lk_scan_next_cb(lk_scan_t *s, const struct lk_entry **ents,
			       size_t *n, void (*cb)(void *arg), void *arg)
{
	s->cb = NULL;
	int rc = try_next(s, ents, n);
	if (rc == -EAGAIN) {
		s->cb = cb;
		s->cb_arg = arg;
	}
	return rc;
}

FIBRIL_API long lk_scan_count(const lk_scan_t *s)
{
	if (!s->f || s->f->streaming || s->f->phase != PH_READY)
		return -EAGAIN;
	return (long)s->f->norder;
}

static void opened(void *arg, int res, const struct lk_file *file)
{
	struct lk_scan *s = arg;
	s->op = NULL;
	if (res < 0) {
		if (!s->cancelled)
			s->err = res;
	} else {
		int rc = lk__flight_attach(s, file->fd, &file->stx);
		if (rc < 0)
			s->err = rc;
		else
			lk__flight_pump(s->f);
	}
	if (s->f)
		lk__flight_notify(s->f);
	else
		scan_notify(s);
}

static void orphaned(void *arg, int res, const struct lk_file *file)
{
	if (res == 0)
		async__close_fd(file->fd);
}

static void cancel_member(struct lk__member *m)
{
	lk_scan_cancel((lk_scan_t *)m);
}

static void scan_free(struct lk_scan *s)
{
	free(s->batch);
	free(s->after);
	free(s->reldir);
	lk_root_close(s->root);
	async__cred_drop(s->cred);
	free(s);
}

FIBRIL_API int lk_scan_open(lk_root_t *r, const char *reldir,
			    const struct lk_scan_opts *o, lk_scan_t **out)
{
	static const struct lk_scan_opts defaults;
	if (!r || !out)
		return -EINVAL;
	if (!o)
		o = &defaults;
	if ((unsigned)o->sort > LK_SORT_MTIME)
		return -EINVAL;
	if (o->after && (o->sort != LK_SORT_NAME ||
			 (o->flags & LK_SCAN_DIRS_FIRST)))
		return -EINVAL;
	if (!reldir || !*reldir)
		reldir = ".";
	struct lk_scan *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->o.after = NULL;
	if (r->flags & LK_ROOT_DOTFILES)
		s->o.flags |= LK_SCAN_DOTFILES;
	s->root = r;
	lk__root_ref(r);
	s->cred = async__cred_hold(lk__x(o->cred));
	s->o.cred = NULL;   /* s->cred holds it */
	s->reldir = strdup(reldir);
	s->after = o->after ? strdup(o->after) : NULL;
	if (!s->reldir || (o->after && !s->after)) {
		scan_free(s);
		return -ENOMEM;
	}
	int rc = lk__group_join(o->group, &s->m, cancel_member);
	if (rc < 0) {
		scan_free(s);
		return rc;
	}
	if (o->dir) {
		int fd = fcntl(o->dir->fd, F_DUPFD_CLOEXEC, 0);
		rc = fd < 0 ? -errno : lk__flight_attach(s, fd, &o->dir->stx);
	} else {
		struct lk_file file;
		lk_op_t *op = NULL;
		rc = lk__open_start(r, reldir, O_RDONLY | O_DIRECTORY, NULL,
				    (const lk_cred_t *)s->cred, &file,
				    opened, s, &op);
		if (rc == 0)
			rc = lk__flight_attach(s, file.fd, &file.stx);
		else if (rc == 1)
			s->op = op, rc = 0;
	}
	if (rc < 0) {
		lk__group_leave(&s->m);
		scan_free(s);
		return rc;
	}
	lk__st.live_scans++;
	if (s->f)
		lk__flight_pump(s->f);  /* names inline when cached */
	*out = s;
	return 0;
}

FIBRIL_API void lk_scan_cancel(lk_scan_t *s)
{
	if (s->cancelled)
		return;
	s->cancelled = true;
	if (s->op)
		lk_op_cancel(s->op);
	if (s->f && --s->f->active == 0)
		lk__flight_deactivate(s->f);
	scan_notify(s);
}

FIBRIL_API void lk_scan_close(lk_scan_t *s)
{
	if (!s)
		return;
	s->cb = NULL;
	lk_scan_cancel(s);
	lk__group_leave(&s->m);
	if (s->op) {
		s->op->cb = orphaned;
		s->op->arg = NULL;
	}
	if (s->f)
		lk__flight_detach(s);
	lk__st.live_scans--;
	scan_free(s);
}
