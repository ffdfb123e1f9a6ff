#include "first.h"

#include "daemon/listing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fibril/lookup.h>

/*
 * Placeholder listing (the real one belongs to issue 7): a plain HTML
 * list of links, sorted by name, built in memory. Enough for browsers
 * and `wget -r`.
 */

struct buf {
	char *p;
	size_t len, cap;
};

static int put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

static int put_html(struct buf *b, const char *s)
{
	int r = 0;
	for (; *s && !r; s++) {
		switch (*s) {
		case '<': r = put(b, "&lt;", 4); break;
		case '>': r = put(b, "&gt;", 4); break;
		case '&': r = put(b, "&amp;", 5); break;
		case '"': r = put(b, "&quot;", 6); break;
		case '\'': r = put(b, "&#39;", 5); break;
		default: r = put(b, s, 1);
		}
	}
	return r;
}

static int put_href(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int r = 0;
	for (; *s && !r; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~!$'()*+,;=:@", ch))
			r = put(b, (const char *)&ch, 1);
		else {
			char e[3] = { '%', hex[ch >> 4], hex[ch & 15] };
			r = put(b, e, 3);
		}
	}
	return r;
}

int fsd_listing_handle(struct fsd_req *rq, struct lk_file *dir,
                       const char *urlpath, const char *relpath,
                       const struct conf_listing *cfg)
{
	struct lk_scan_opts o = {
		.sort = LK_SORT_NAME,
		.flags = LK_SCAN_NO_LINKS | (cfg->dotfiles ? LK_SCAN_DOTFILES : 0),
		.window = cfg->window,
		.group = rq->group,
		.dir = dir,
	};
	const struct lk_entry *ents;
	struct buf b = { 0 };
	lk_scan_t *s;
	size_t n;
	int r;

	if (!cfg->enabled) {
		close(dir->fd);
		return -ENOSYS;
	}
	r = lk_scan_open(fsd.lkroot, relpath, &o, &s);
	close(dir->fd);
	if (r < 0) {
		fsd_log_fs_req(rq, "scan", relpath, r);
		return 0;
	}
	put(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ", 66);
	put_html(&b, urlpath);
	put(&b, "</title></head><body><h1>Index of ", 34);
	put_html(&b, urlpath);
	put(&b, "</h1><ul>\n", 10);
	if (strcmp(urlpath, "/"))
		put(&b, "<li><a href=\"../\">../</a></li>\n", 31);
	while ((r = lk_scan_next(s, &ents, &n)) > 0) {
		for (size_t i = 0; i < n; i++) {
			bool isdir = S_ISDIR(ents[i].stx.stx_mode);
			put(&b, "<li><a href=\"", 13);
			put_href(&b, ents[i].name);
			if (isdir)
				put(&b, "/", 1);
			put(&b, "\">", 2);
			put_html(&b, ents[i].name);
			if (isdir)
				put(&b, "/", 1);
			put(&b, "</a></li>\n", 10);
		}
	}
	lk_scan_close(s);
	if (r < 0 || put(&b, "</ul></body></html>\n", 20) < 0) {
		free(b.p);
		if (r < 0)
			fsd_log_fs_req(rq, "scan", relpath, r);
		else
			fsd_req_error(rq, 500);
		return 0;
	}
	struct MHD_Response *resp = MHD_create_response_from_buffer(b.len, b.p,
	                                                            MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(b.p);
		fsd_req_error(rq, 500);
		return 0;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
	fsd_req_respond(rq, MHD_HTTP_OK, resp, b.len);
	return 0;
}
