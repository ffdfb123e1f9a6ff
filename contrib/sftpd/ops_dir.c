/*
 * fsd-sftp: OPENDIR and READDIR. A directory handle holds a scan of the
 * lookup engine; READDIRs on one handle are answered in order from the
 * scan's batches, each NAME reply bounded in bytes, with ls -l style long
 * names (numeric owners: a name lookup could block the loop).
 *
 * NAME replies are built one per turn of the loop, handles taking turns
 * (the bulk queue): a READDIR reply costs tens of microseconds of
 * marshalling, and sixteen of them built in one turn (a shared scan
 * delivers to every listing of a directory at once) would hold a STAT
 * that comes in meanwhile for all of them. A turn of its own, on an
 * eventfd among the connections' descriptors, lets the connections that
 * are ready in between two replies.
 */
#include "first.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "contrib/sftpd/sftpd.h"

/* A NAME reply stops adding entries past this many bytes. */
#define X__NAME_BYTES (128u * 1024)
#define X__NAME_MAX_ENTRIES 512

static void sftpd__pump(struct shandle *h);
static void sftpd__next(struct shandle *h);

static void sftpd__mode_str(uint32_t mode, char s[11])
{
	const char *rwx = "rwxrwxrwx";
	s[0] = S_ISDIR(mode) ? 'd' : S_ISLNK(mode) ? 'l' : S_ISCHR(mode) ? 'c' :
	       S_ISBLK(mode) ? 'b' : S_ISFIFO(mode) ? 'p' : S_ISSOCK(mode) ? 's' : '-';
	for (int i = 0; i < 9; i++)
		s[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		s[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		s[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		s[9] = (mode & S_IXOTH) ? 't' : 'T';
	s[10] = 0;
}

/* The date column of ls -l. Entries of a directory mostly share a few
 * mtimes, and localtime_r and strftime cost more than the rest of the
 * long name: the last one is kept. */
static const char *sftpd__date(time_t t)
{
	static __thread time_t last_t = -1, last_now;
	static __thread char last[32];
	time_t now = time(NULL);

	if (t != last_t || now / 3600 != last_now / 3600) {
		struct tm tm;
		localtime_r(&t, &tm);
		/* ls: the year instead of the time beyond six months. */
		strftime(last, sizeof(last),
		         t > now - 182 * 86400 && t < now + 86400 ? "%b %e %H:%M" : "%b %e  %Y",
		         &tm);
		last_t = t;
		last_now = now;
	}
	return last;
}

/* @v in decimal, padded with spaces to @width, right- or left-aligned. */
static char *sftpd__num(char *p, unsigned long long v, int width, bool left)
{
	char d[24];
	int n = 0;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (!left)
		for (int i = n; i < width; i++)
			*p++ = ' ';
	for (int i = n - 1; i >= 0; i--)
		*p++ = d[i];
	if (left)
		for (int i = n; i < width; i++)
			*p++ = ' ';
	return p;
}

/* "%s %3u %-8u %-8u %8llu %s %s" by hand: printf was a third of the
 * server's CPU time in listings. @buf holds 128 bytes plus the name. */
static size_t sftpd__longname(char *buf, const struct lk_entry *e)
{
	char *p = buf;
	const char *date = sftpd__date((time_t)e->stx.stx_mtime.tv_sec);
	size_t dl = strlen(date);

	sftpd__mode_str(e->stx.stx_mode, p);
	p += 10;
	*p++ = ' ';
	p = sftpd__num(p, e->stx.stx_nlink, 3, false);
	*p++ = ' ';
	p = sftpd__num(p, e->stx.stx_uid, 8, true);
	*p++ = ' ';
	p = sftpd__num(p, e->stx.stx_gid, 8, true);
	*p++ = ' ';
	p = sftpd__num(p, e->stx.stx_size, 8, false);
	*p++ = ' ';
	memcpy(p, date, dl);
	p += dl;
	*p++ = ' ';
	memcpy(p, e->name, e->namelen);
	p += e->namelen;
	return (size_t)(p - buf);
}

/* Answers @r with the next entries of the batch. */
static void sftpd__name_reply(struct sreq *r, struct shandle *h)
{
	struct sw_buf *w = &r->c->out;
	size_t at = sw_begin(w, SSH_FXP_NAME, r->id, true);
	size_t count_at = w->len;
	uint32_t count = 0;
	char ln[128 + 256];
	uint64_t t0 = sftpd_tl_on ? sftpd_tl_now() : 0;

	sw_put_u32(w, 0);
	while (h->pos < h->nents && count < X__NAME_MAX_ENTRIES &&
	       w->len - at < X__NAME_BYTES) {
		const struct lk_entry *e = &h->ents[h->pos++];
		if (e->err)
			continue;  /* as sftp-server: an entry that cannot be stat'ed is left out */
		sw_put_str(w, e->name, e->namelen);
		if (e->namelen <= 255)
			sw_put_str(w, ln, sftpd__longname(ln, e));
		else
			sw_put_str(w, e->name, e->namelen);
		sftpd_put_attrs(w, &e->stx);
		count++;
	}
	if (t0)
		sftpd_tl_marshal(sftpd_tl_now() - t0);
	if (count == 0) {
		/* Every entry of the rest of the batch failed: not a reply. */
		w->len = at;
		return;
	}
	if (!w->oom) {
		uint8_t *p = w->b + count_at;
		p[0] = (uint8_t)(count >> 24);
		p[1] = (uint8_t)(count >> 16);
		p[2] = (uint8_t)(count >> 8);
		p[3] = (uint8_t)count;
	}
	sw_end(w, at);
	h->rd_head = r->next;
	if (!h->rd_head)
		h->rd_tail = NULL;
	sftpd_req_done(r);
}

static struct sreq *sftpd__pop(struct shandle *h)
{
	struct sreq *r = h->rd_head;
	h->rd_head = r->next;
	if (!h->rd_head)
		h->rd_tail = NULL;
	return r;
}

static void sftpd__next_done(struct tevent_req *req)
{
	struct shandle *h = tevent_req_callback_data(req, struct shandle);
	struct lk_entry *ents = NULL;
	size_t n = 0;
	int rc = ftev_scan_next_recv(req, h, &ents, &n);

	talloc_free(req);
	h->reading = false;
	if (rc == 1) {
		talloc_free(h->ents);
		h->ents = ents;
		h->nents = n;
		h->pos = 0;
	} else {
		h->eof = true;
		if (rc < 0 && h->rd_head && !h->closed)
			sftpd_status_errno(sftpd__pop(h), -rc);
	}
	if (!h->closed)
		sftpd__pump(h);
	sftpd_handle_release(h);
}

/* ---- the bulk queue ---- */

/* One NAME reply, for the handle whose turn it is. */
static void sftpd__bulk_turn(struct tevent_context *ev, struct tevent_fd *fde,
                             uint16_t flags, void *arg)
{
	struct sftpd *s = arg;
	struct shandle *h = s->bulk_head;

	(void)ev;
	(void)fde;
	(void)flags;
	if (!h) {
		sftpd_bulk_arm(s, false);
		return;
	}
	/* Requests that came in meanwhile first: a cheap one is answered
	 * at once, a READDIR joins the queue. */
	if (s->bulk_before)
		s->bulk_before(s);
	h = s->bulk_head;
	if (!h)
		return;
	sftpd_bulk_forget(h);
	if (h->closed || !h->rd_head)
		return;
	if (sftpd_tl_on)
		sftpd_tl_bulk();
	/* One piece of work per turn; sftpd__pump queues the handle again
	 * for the next. */
	if (h->pos < h->nents)
		sftpd__name_reply(h->rd_head, h);
	else if (!h->reading && !h->eof)
		sftpd__next(h);
	if (!h->closed)
		sftpd__pump(h);
}

int sftpd_bulk_init(struct sftpd *srv)
{
	srv->bulk_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (srv->bulk_fd < 0)
		return -errno;
	srv->bulk_fde = tevent_add_fd(srv->ev, srv, srv->bulk_fd, TEVENT_FD_READ,
	                              sftpd__bulk_turn, srv);
	if (!srv->bulk_fde) {
		close(srv->bulk_fd);
		return -ENOMEM;
	}
	tevent_fd_set_auto_close(srv->bulk_fde);
	return 0;
}

/* ---- READDIR ---- */

/* Asks the scan for the next batch (a copy of up to a few hundred
 * entries when it has one at hand: bulk work too). */
static void sftpd__next(struct shandle *h)
{
	struct tevent_req *req = ftev_scan_next_send(h, h->scan);

	if (!req) {
		sftpd_status(sftpd__pop(h), SSH_FX_FAILURE, "out of memory");
		return;
	}
	h->reading = true;
	h->busy++;
	tevent_req_set_callback(req, sftpd__next_done, h);
}

/* Answers what can be answered at once (end of directory) and queues
 * the handle for what is bulk work: a NAME reply, the next batch. */
static void sftpd__pump(struct shandle *h)
{
	while (h->rd_head) {
		if (h->pos >= h->nents && h->eof) {
			sftpd_status(sftpd__pop(h), SSH_FX_EOF, "end of directory");
			continue;
		}
		if (h->pos < h->nents || !h->reading)
			sftpd_bulk_add(h);
		return;
	}
}

void sftpd_readdir(struct sreq *r, struct shandle *h)
{
	r->reserve = X__NAME_BYTES;
	r->c->reserved += X__NAME_BYTES;
	r->h = h;
	r->next = NULL;
	if (h->rd_tail)
		h->rd_tail->next = r;
	else
		h->rd_head = r;
	h->rd_tail = r;
	sftpd__pump(h);
}

void sftpd_dir_closed(struct shandle *h)
{
	while (h->rd_head)
		sftpd_status(sftpd__pop(h), SSH_FX_FAILURE, "handle closed");
}

static void sftpd__opendir_done(struct tevent_req *req)
{
	struct sreq *r = tevent_req_callback_data(req, struct sreq);
	struct sftpd *s = r->c->srv;
	struct lk_file f;
	struct shandle *h = sftpd_handle_opened(req, r, SH_DIR, &f);
	int rc;

	if (!h)
		return;
	/* Name order lets concurrent listings of one directory share a
	 * single pass; dotfiles and . and .. as sftp-server lists them. */
	struct lk_scan_opts o = {
		.sort = LK_SORT_NAME,
		.flags = LK_SCAN_DOTFILES | LK_SCAN_DOTDOT | LK_SCAN_LOOKUP_ATTRS,
		.dir = &f,
		.cred = s->cred,
		.join_age_ms = s->join_age_ms,
	};
	rc = ftev_scan_open(h, s->ft, s->root, r->path, &o, &h->scan);
	if (rc < 0) {
		r->c->h[h->slot] = NULL;
		talloc_free(h);
		sftpd_status_errno(r, -rc);
		return;
	}
	sftpd_handle_reply(r, h);
}

void sftpd_opendir(struct sreq *r, const char *rel)
{
	struct sftpd *s = r->c->srv;
	int of = O_RDONLY | O_DIRECTORY;
	const struct lk_lookup_opts *lo = sftpd_lopts(r, of);
	struct tevent_req *req = lo ? ftev_lookup_send(r, s->ft, s->root, rel, lo) :
	                         ftev_open_send(r, s->ft, s->root, rel, of, NULL);
	if (!req) {
		sftpd_status(r, SSH_FX_FAILURE, "out of memory");
		return;
	}
	r->path = rel;
	tevent_req_set_callback(req, sftpd__opendir_done, r);
}
