#include "first.h"

/*
 * One listing being rendered (struct lst_run, listing_int.h): entries
 * to rows, rows through the compressor, the validator, the headers of
 * its 200 and 304. Used by the hook (listing.c) on the request fibril
 * and by the stream (listing_stream.c) on the worker's loop.
 */

#include "daemon/listing_int.h"
#include "daemon/lcache.h"
#include "daemon/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static enum proto_ftype ftype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return PROTO_FT_REG;
	case S_IFDIR: return PROTO_FT_DIR;
	case S_IFLNK: return PROTO_FT_LNK;
	case S_IFCHR: return PROTO_FT_CHR;
	case S_IFBLK: return PROTO_FT_BLK;
	case S_IFIFO: return PROTO_FT_FIFO;
	case S_IFSOCK: return PROTO_FT_SOCK;
	}
	return PROTO_FT_UNKNOWN;
}

int lst_run_feed(struct lst_run *r, const struct lk_entry *e, size_t n)
{
	struct proto_buf *b = r->p.gzip ? &r->raw : &r->out;

	lcache_fill_add(r->fill, e, n);
	for (size_t i = 0; i < n; i++) {
		if (r->p.q.limit && r->count == r->p.q.limit) {
			r->more = true;   /* the extra entry asked for: not shown */
			break;
		}
		lst_etag_entry(&r->tag, &e[i]);
		if (e[i].err) {
			/* Logged, never shown: the entry is listed as "unknown". */
			char path[4096 + 256];
			snprintf(path, sizeof path, "%s/%s", r->relpath, e[i].name);
			fsd_log_fs(LOG_WARNING, "listing stat", path, e[i].err);
		}
		/* A target only for a link that resolves beneath the root (no
		 * path outside it is ever shown), and none naming a hidden file. */
		const char *tg = e[i].link;
		if (tg && (!e[i].target_mode ||
		           (!r->show_hidden && proto_path_hidden(tg, strlen(tg)))))
			tg = NULL;
		if (r->render) {
			struct proto_entry pe = {
				.name = e[i].name,
				.namelen = e[i].namelen,
				.type = e[i].err ? PROTO_FT_UNKNOWN : ftype(e[i].stx.stx_mode),
				.size = e[i].stx.stx_size,
				.mtime_sec = e[i].stx.stx_mtime.tv_sec,
				.mtime_nsec = e[i].stx.stx_mtime.tv_nsec,
				.mode = e[i].stx.stx_mode,
				.target = tg,
				.targetlen = tg ? strlen(tg) : 0,
			};
			if (proto_listing_entry(&r->l, b, &pe) < 0)
				return -ENOMEM;
		}
		r->count++;
		if (r->p.q.limit && r->count == r->p.q.limit) {
			free(r->cursor);
			r->cursor = strdup(e[i].name);
			if (!r->cursor)
				return -ENOMEM;
		}
	}
	return 0;
}

void lst_run_scanned(struct lst_run *r)
{
	lcache_fill_end(r->fill, true);
	r->fill = NULL;
}

int lst_run_pump(struct lst_run *r, int flush)
{
	if (!r->p.gzip)
		return 0;
	if (!r->raw.len && flush == Z_NO_FLUSH)
		return 0;
	return lst_gz_run(&r->gz, &r->raw, &r->out, flush);
}

bool lst_run_has_next(const struct lst_run *r)
{
	/* A cursor only exists in name order (lk: LK_SORT_NAME without
	 * dirs first). */
	return r->more && r->cursor && r->p.sort == PROTO_SORT_NAME &&
	       !r->p.q.dirs_first;
}

int lst_run_finish(struct lst_run *r)
{
	struct proto_buf *b = r->p.gzip ? &r->raw : &r->out;
	bool next = lst_run_has_next(r);

	if (r->finished)
		return 0;
	if (proto_listing_end(&r->l, b, next ? r->cursor : NULL,
	                      next ? strlen(r->cursor) : 0) < 0)
		return -ENOMEM;
	if (lst_run_pump(r, Z_FINISH) < 0)
		return -ENOMEM;
	r->finished = true;
	return 0;
}

void lst_run_etag(const struct lst_run *r, char *out)
{
	lst_etag_final(&r->tag, r->more, out);
}

void lst_run_headers(const struct lst_run *r, struct MHD_Response *resp)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        proto_listing_content_type(r->p.fmt));
	/* The format may come from Accept, the coding from Accept-Encoding. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY,
	                        r->p.fmt_given ? "Accept-Encoding" : "Accept, Accept-Encoding");
	/* Listings change without the directory's own mtime changing:
	 * caches revalidate every time (the ETag makes that cheap). */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
}

void lst_run_free(struct lst_run *r)
{
	if (r->scan)
		lk_scan_close(r->scan);
	if (r->deferred)
		close(r->dir.fd);
	lst_slot_put(r->slot);
	lcache_fill_end(r->fill, false);
	lst_gz_end(&r->gz);
	proto_buf_free(&r->raw);
	proto_buf_free(&r->out);
	lst_params_free(&r->p);
	free(r->cursor);
	free(r->urlpath);
	free(r->relpath);
	free(r->scanpath);
	if (r->root)
		lk_root_close(r->root);
	memset(r, 0, sizeof *r);
}

void lst_run_scan_opts(struct lst_run *r, const struct conf_listing *cfg,
                       lk_group_t *group, struct lk_scan_opts *o)
{
	*o = (struct lk_scan_opts){
		.sort = r->p.sort == PROTO_SORT_SIZE ? LK_SORT_SIZE
		      : r->p.sort == PROTO_SORT_MTIME ? LK_SORT_MTIME
		      : r->p.sort == PROTO_SORT_NONE ? LK_SORT_NONE : LK_SORT_NAME,
		.window = cfg->window,
		.local_window = cfg->local_window,
		.after = r->p.q.after,
		/* One more than shown: whether a next page exists. */
		.limit = r->p.q.limit ? r->p.q.limit + 1 : 0,
		.group = group,
	};
	if (cfg->dotfiles == CONF_DOT_LIST)
		o->flags |= LK_SCAN_DOTFILES;
	if (cfg->symlink_targets == CONF_TARGETS_OFF)
		o->flags |= LK_SCAN_NO_LINKS;
	if (cfg->attrs_from_lookup)
		o->flags |= LK_SCAN_LOOKUP_ATTRS;
	if (cfg->background)
		o->flags |= LK_SCAN_BACKGROUND;
	if (r->p.q.dirs_first)
		o->flags |= LK_SCAN_DIRS_FIRST;
	if (r->no_share)
		o->flags |= LK_SCAN_NO_SHARE;
	/* order=asc is A-Z, smallest, oldest first. The engine orders
	 * sizes and times largest/newest first (ls -S, ls -t), names A-Z;
	 * LK_SCAN_DESC reverses that. */
	if (r->p.sort == PROTO_SORT_NAME ? r->p.q.desc
	    : (r->p.sort != PROTO_SORT_NONE && !r->p.q.desc))
		o->flags |= LK_SCAN_DESC;
}

int lst_run_open(struct lst_run *r)
{
	int rc;

	r->so.dir = &r->dir;
	rc = lk_scan_open(r->root, r->scanpath, &r->so, &r->scan);
	r->so.dir = NULL;
	close(r->dir.fd);
	r->deferred = false;
	return rc;
}
