/*
 * Directory listings: the hook static.c calls for a directory without an
 * index file; this header is the contract between static.c and
 * daemon/listing*.c.
 *
 * fsd_listing_handle() runs on the request's fibril (it may park: use
 * lk_scan_* with rq->group so that a deadline or a stop cancels the
 * scan). It must answer exactly once through fsd_req_respond() (or
 * fsd_req_error()) before returning 0; the response may be a callback
 * (streamed) response whose reader runs later on the worker's loop
 * thread, from libmicrohttpd, outside any fibril: such a reader must not
 * park and must use lk_scan_next_cb() to get more entries.
 *
 * Arguments:
 *  rq       the request: rq->method (GET or HEAD), rq->uri (raw target,
 *           with the query string: ?format=&sort=&order=&limit=&after=),
 *           rq->h (Accept, Accept-Encoding, If-None-Match... copied).
 *  dir      the directory as opened by lk_open() (fd + statx). The hook
 *           takes ownership of dir->fd (close it, or hand it to a scan).
 *  urlpath  decoded, normalised URL path of the directory, ending in '/'
 *           ("/", "/a/b c/").
 *  relpath  the same path relative to the root, for messages ("." for
 *           the root, "a/b c" otherwise).
 *  root, scanpath
 *           what lk_scan_open() scans (the symlinks policy's choice,
 *           daemon/paths.h): the hook takes its own reference to root.
 *  cfg      the effective [listing]/[dir] settings for urlpath.
 *
 * Returns 0 when answered. Returns -ENOSYS to let the caller answer 403
 * (listing disabled or not supported); dir->fd is then still closed by
 * the hook.
 *
 * The per-worker count of scans in progress is rq->w->listings, bounded
 * by fsd->conf.max_listings (listing_queue.c: identical listings share
 * one place; beyond it they queue, then 503 with Retry-After).
 */
#ifndef FSD_LISTING_H
#define FSD_LISTING_H

#include "daemon/daemon.h"

struct lk_file;
struct lk_root;

int fsd_listing_handle(struct fsd_req *rq, struct lk_file *dir,
                       const char *urlpath, const char *relpath,
                       struct lk_root *root, const char *scanpath,
                       const struct conf_listing *cfg);

/*
 * Streamed listings outlive fsd_listing_handle(): their connection is
 * suspended by the content reader while the next entries are being
 * stat'ed. fsd_listing_stop() cancels every listing of worker @w: each
 * suspended connection is resumed and its response ends (truncated
 * chunked body, connection closed). Call it on the worker's thread when
 * the worker stops, before MHD_stop_daemon() (which must not meet a
 * suspended connection). Idempotent.
 */
void fsd_listing_stop(struct fsd_worker *w);

/* The request @rq ends: its streamed listing, if any, counts into
 * rq->stream_bytes no longer. */
void fsd_listing_detach(struct fsd_req *rq);

#endif
