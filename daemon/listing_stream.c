#include "first.h"

/*
 * The streamed part of a listing: a chunked MHD response whose content
 * reader renders batches from lk_scan_next_cb() on the worker's loop
 * thread. The reader never blocks and never parks (it is not on a
 * fibril).
 *
 * When the next entry's statx is still in flight, the reader has nothing
 * to give. libmicrohttpd 0.9.75 lets a content reader return 0 in
 * external polling mode, but then calls it again on every MHD_run() of
 * the daemon, i.e. on every event of the worker: a busy loop while the
 * file system is slow (microhttpd.h: "0 is legal unless MHD is started
 * in internal sockets polling mode (since this would cause
 * busy-waiting)"). So before returning 0 the reader suspends the
 * connection (allowed from a content reader, microhttpd.h on
 * MHD_suspend_connection), and the scan's callback resumes it when the
 * next batch is ready; MHD's inter-thread channel (MHD_ALLOW_SUSPEND_
 * RESUME) makes the epoll fd readable, so the worker's loop runs MHD
 * again. Other connections on the worker are served meanwhile.
 *
 * A connection waits at most request_timeout seconds for the file
 * system; then its scan is cancelled and the response ends with an
 * error (the client sees a truncated chunked body, never a wrong one).
 */

#include "daemon/lcache.h"
#include "daemon/listing_int.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include <fibril/fibril.h>

/* Rendered output kept in memory ahead of the client. */
#define LST_AHEAD_BYTES (256u * 1024)
/* A client that takes less than LST_AHEAD_BYTES in this long (about
 * 5 MB/s) is slow: its stream's scan then runs to its end, the output
 * past LST_AHEAD_BYTES going to the spill file. */
#define LST_SLOW_MS 50

struct lst_stream {
	struct lst_run r;
	struct fsd_req *rq;  /* counts what is given, until it ends */
	struct fsd_worker *w;
	struct MHD_Connection *conn;
	struct MHD_Response *resp;
	struct event *timer;
	struct event *slow;  /* armed while LST_AHEAD_BYTES wait for the client */
	uint64_t given, given_then;  /* bytes handed over; when slow was armed */
	bool spilling;       /* the client was slow */
	bool suspended;
	bool unflushed;     /* the compressor holds input not yet flushed */
	bool done, failed;
	bool waiting;       /* a scan callback is pending */
	bool asked;         /* the reader was called: the header is out */
	/* The body is spill[spill_off, spill_len) then r.out[r.out_off, len) */
	int spill;          /* unlinked temporary file, or -1 */
	uint64_t spill_len, spill_off;
	int sock;           /* a plain connection's socket, else -1 */
	bool corked;
	struct lst_fill_watch *fw;  /* the fill's names being watched */
	struct lst_stream *prev, *next;
};

/* The names of a fill begun for a stream's directory, watched by a
 * fibril of their own once the prologue is on its way; the stream's
 * scan opens when they are all in place. */
struct lst_fill_watch {
	struct lst_stream *s;       /* NULL once the stream is gone */
	struct lc_dir *d;
	int fd;
	struct statx stx;
	char *what;
};

/* This thread's streams (a worker thread owns its streams). */
static __thread struct lst_stream *live;

static void advance(struct lst_stream *s);
static void cork(struct lst_stream *s, bool on);

static void wake(struct lst_stream *s)
{
	if (!s->suspended)
		return;
	s->suspended = false;
	evtimer_del(s->timer);
	MHD_resume_connection(s->conn);
	/* libmicrohttpd 0.9.75 in external epoll mode has no inter-thread
	 * channel in its epoll set here (MHD_resume_connection() writes
	 * nothing), so a resume is only noticed at the next MHD_run():
	 * make the worker run MHD now rather than at its next timer. */
	for (size_t i = 0; i < s->w->nmhd; i++)
		if (s->w->mhd_ev && s->w->mhd_ev[i])
			event_active(s->w->mhd_ev[i], EV_READ, 0);
}

static void ready(void *arg)
{
	struct lst_stream *s = arg;

	s->waiting = false;
	advance(s);
	wake(s);
}

static void fill_watch(void *arg)
{
	struct lst_fill_watch *fw = arg;
	int rc = lcache_fill_watch(fw->d, fw->fd, &fw->stx, fw->what);
	struct lst_stream *s = fw->s;

	close(fw->fd);
	free(fw->what);
	if (s) {
		s->fw = NULL;
		if (rc == 0)
			s->r.fill = fw->d;
	} else if (rc == 0) {
		lcache_fill_end(fw->d, false);
	}
	free(fw);
	if (s)
		ready(s);
}

/* Hands the fill's names to fill_watch(); without it, the listing goes
 * on uncached. */
static void fill_watch_start(struct lst_stream *s)
{
	struct lst_fill_watch *fw = malloc(sizeof *fw);
	struct lc_dir *d = s->r.fill;

	s->r.fill = NULL;
	if (fw) {
		*fw = (struct lst_fill_watch){ .s = s, .d = d, .stx = s->r.dir.stx,
		                               .fd = fcntl(s->r.dir.fd, F_DUPFD_CLOEXEC, 0),
		                               .what = strdup(s->r.urlpath) };
		if (fw->fd >= 0 && fw->what &&
		    fibril_create(NULL, fill_watch, fw, "listing fill") == 0) {
			s->fw = fw;
			return;
		}
		if (fw->fd >= 0)
			close(fw->fd);
		free(fw->what);
		free(fw);
	}
	lcache_fill_end(d, false);
}

static void timed_out(evutil_socket_t fd, short what, void *arg)
{
	struct lst_stream *s = arg;

	(void)fd;
	(void)what;
	fsd_log(LOG_WARNING, "listing of /%s: no progress within %us, cancelled",
	        s->r.relpath, fsd->conf.request_timeout);
	if (s->r.scan)
		lk_scan_cancel(s->r.scan);    /* runs ready() */
	else
		s->failed = true;
	wake(s);
}

static void finish(struct lst_stream *s)
{
	char etag[32];

	if (lst_run_finish(&s->r) < 0) {
		s->failed = true;
		return;
	}
	lst_run_etag(&s->r, etag);
	MHD_add_response_footer(s->resp, MHD_HTTP_HEADER_ETAG, etag);
	s->unflushed = false;
	s->done = true;
}

/* The scan is over: its memory and its place in max_listings go now,
 * not when the client has read the last byte. */
static void scan_over(struct lst_stream *s)
{
	if (s->r.scan) {
		lk_scan_close(s->r.scan);
		s->r.scan = NULL;
	}
	lst_slot_put(s->r.slot);
	s->r.slot = NULL;
}

/* Moves the unsent output to the end of the spill file. Synchronous:
 * a temporary file's writes go to the page cache. -1: no file (the
 * stream then waits for its client instead). */
static int spill_out(struct lst_stream *s)
{
	struct proto_buf *o = &s->r.out;

	if (s->spill < 0) {
		const char *dir = getenv("TMPDIR");
		s->spill = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (s->spill < 0)
			return -1;
	}
	while (s->r.out_off < o->len) {
		ssize_t k = pwrite(s->spill, o->data + s->r.out_off, o->len - s->r.out_off,
		                   (off_t)s->spill_len);
		if (k <= 0) {
			fsd_log_fs(LOG_ERR, "listing spill", s->r.relpath, k < 0 ? errno : EIO);
			s->failed = true;
			return -1;
		}
		s->r.out_off += (size_t)k;
		s->spill_len += (uint64_t)k;
	}
	s->r.out_off = o->len = 0;
	return 0;
}

/* LST_AHEAD_BYTES wait for the client: see what it takes of them. */
static void slow_arm(struct lst_stream *s)
{
	struct timeval tv = { 0, LST_SLOW_MS * 1000 };

	if (evtimer_pending(s->slow, NULL))
		return;
	s->given_then = s->given;
	evtimer_add(s->slow, &tv);
}

static void slow_check(evutil_socket_t fd, short what, void *arg)
{
	struct lst_stream *s = arg;

	(void)fd;
	(void)what;
	if (s->done || s->failed || s->spilling)
		return;
	if (s->r.out.len - s->r.out_off >= LST_AHEAD_BYTES &&
	    s->given - s->given_then < LST_AHEAD_BYTES) {
		s->spilling = true;
		FSD_M_INC(listings_spilled);
	}
	/* The scan goes on either way: a slow client's rest to the spill
	 * file; for one that kept up, the output is topped up, since a
	 * reader whose socket is full is not called to ask for more. A
	 * stream waiting for the file system stays suspended (its
	 * request_timeout running on). */
	advance(s);
	if (s->done || s->failed || s->r.out.len > s->r.out_off ||
	    s->spill_off < s->spill_len)
		wake(s);
}

/* Runs the scan ahead of the client by up to LST_AHEAD_BYTES of
 * output, then lets the client take them; once the client has shown
 * itself slow, to the end, through the spill file, so that a slow
 * reader holds neither the scan's memory nor a slot. Spilling what a
 * fast client takes at once would cost the worker a write and a read of
 * the whole body (a 100,000-entry listing to curl on the same host:
 * without them, 11-17% less of the worker's CPU, docs/BENCHMARKS.md). */
static void advance(struct lst_stream *s)
{
	const struct lk_entry *ents;
	size_t n;
	int rc;

	while (!s->done && !s->failed && !s->waiting) {
		if (s->r.out.len - s->r.out_off >= LST_AHEAD_BYTES) {
			if (!s->spilling) {
				slow_arm(s);
				return;
			}
			if (spill_out(s) < 0)
				return;
		}
		if (s->r.deferred) {
			/* The status, headers and prologue leave before the
			 * names are read (the first getdents64 calls of a
			 * cached directory run inline, milliseconds for a
			 * large one): once they are handed over, uncorked.
			 * libmicrohttpd has sent the header when it first asks
			 * for the body. */
			if (s->r.raw.len && lst_run_pump(&s->r, Z_SYNC_FLUSH) < 0) {
				s->failed = true;
				break;
			}
			if (!s->asked || s->r.out.len > s->r.out_off)
				return;
			cork(s, false);
			if (s->fw) {
				s->waiting = true;      /* until fill_watch() */
				return;
			}
			rc = lst_run_open(&s->r);
			if (rc < 0) {
				fsd_log_fs(LOG_ERR, "listing", s->r.relpath, rc);
				s->failed = true;
				break;
			}
		}
		rc = lk_scan_next_cb(s->r.scan, &ents, &n, ready, s);
		if (rc > 0) {
			if (lst_run_feed(&s->r, ents, n) < 0 ||
			    lst_run_pump(&s->r, Z_NO_FLUSH) < 0)
				s->failed = true;
			else
				s->unflushed = s->r.p.gzip;
			continue;
		}
		if (rc == 0) {
			lst_run_scanned(&s->r);
			finish(s);
			break;
		}
		if (rc == -EAGAIN) {
			/* Give the client what the compressor holds before we
			 * wait on the file system. */
			if (s->unflushed) {
				s->unflushed = false;
				if (lst_run_pump(&s->r, Z_SYNC_FLUSH) < 0)
					s->failed = true;
			}
			s->waiting = true;
			return;
		}
		if (rc != -ECANCELED)
			fsd_log_fs(LOG_ERR, "listing", s->r.relpath, rc);
		s->failed = true;
	}
	if (s->done || s->failed)
		scan_over(s);
}

/*
 * libmicrohttpd sends each chunk as it comes, and its chunks are no
 * larger than the room left in the connection's pool (~16 KB with the
 * default request_header_max): a segment and a wake-up of the client
 * for every 16 KB. While there is more to send the socket is corked, so
 * the kernel sends full segments; it is uncorked (what is held goes at
 * once) before the stream waits for the file system and before its end.
 * libmicrohttpd set TCP_NODELAY and uncorked at the start and does not
 * touch the option again.
 */
static void cork(struct lst_stream *s, bool on)
{
	int v = on;

	if (s->sock >= 0 && s->corked != on &&
	    setsockopt(s->sock, IPPROTO_TCP, TCP_CORK, &v, sizeof v) == 0)
		s->corked = on;
}

/* @k bytes handed to libmicrohttpd: they leave in full segments until
 * the stream waits or ends. */
static ssize_t give(struct lst_stream *s, ssize_t k)
{
	cork(s, true);
	s->given += (uint64_t)k;
	if (s->rq)
		s->rq->stream_bytes += (uint64_t)k;
	return k;
}

void fsd_listing_detach(struct fsd_req *rq)
{
	if (rq->stream)
		rq->stream->rq = NULL;
	rq->stream = NULL;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct lst_stream *s = cls;
	struct proto_buf *o = &s->r.out;

	(void)pos;
	s->asked = true;
	for (int round = 0; round < 2; round++) {
		if (s->spill_off < s->spill_len) {
			uint64_t left = s->spill_len - s->spill_off;
			ssize_t k = pread(s->spill, buf, left < max ? (size_t)left : max,
			                  (off_t)s->spill_off);
			if (k <= 0) {
				fsd_log_fs(LOG_ERR, "listing spill", s->r.relpath, k < 0 ? errno : EIO);
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
			s->spill_off += (uint64_t)k;
			return give(s, k);
		}
		size_t have = o->len - s->r.out_off;
		if (have) {
			size_t n = have < max ? have : max;
			memcpy(buf, o->data + s->r.out_off, n);
			s->r.out_off += n;
			if (s->r.out_off == o->len)
				s->r.out_off = o->len = 0;
			return give(s, (ssize_t)n);
		}
		if (s->done || s->failed) {
			cork(s, false);
			return s->done ? MHD_CONTENT_READER_END_OF_STREAM
			               : MHD_CONTENT_READER_END_WITH_ERROR;
		}
		advance(s);
	}
	/* Nothing until the file system answers: wait without spinning. */
	cork(s, false);
	MHD_suspend_connection(s->conn);
	s->suspended = true;
	struct timeval tv = { (time_t)fsd->conf.request_timeout, 0 };
	evtimer_add(s->timer, &tv);
	return 0;
}

static void stream_free(void *cls)
{
	struct lst_stream *s = cls;

	if (s->rq)
		s->rq->stream = NULL;
	if (s->fw)
		s->fw->s = NULL;
	if (s->prev)
		s->prev->next = s->next;
	else
		live = s->next;
	if (s->next)
		s->next->prev = s->prev;
	if (s->timer)
		event_free(s->timer);
	if (s->slow)
		event_free(s->slow);
	lst_run_free(&s->r);
	if (s->spill >= 0)
		close(s->spill);
	free(s);
}

struct MHD_Response *lst_stream_response(struct fsd_req *rq, struct lst_run *r)
{
	struct lst_stream *s = calloc(1, sizeof *s);
	struct MHD_Response *resp = NULL;

	if (s) {
		s->timer = evtimer_new(rq->w->base, timed_out, s);
		s->slow = evtimer_new(rq->w->base, slow_check, s);
	}
	if (s && s->timer && s->slow)
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
		                                         reader, s, stream_free);
	if (!resp) {
		if (s && s->timer)
			event_free(s->timer);
		if (s && s->slow)
			event_free(s->slow);
		free(s);
		lst_run_free(r);
		return NULL;
	}
	/* From here on stream_free() releases everything. */
	s->r = *r;
	memset(r, 0, sizeof *r);
	s->w = rq->w;
	s->rq = rq;
	rq->stream = s;
	s->conn = rq->conn;
	s->resp = resp;
	s->spill = -1;
	s->sock = -1;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci && !fsd_tls_conn(rq->conn))
		s->sock = ci->connect_fd;
	s->next = live;
	if (live)
		live->prev = s;
	live = s;
	lst_run_headers(&s->r, resp);
	if (s->r.p.gzip)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	/* The validator of a streamed listing is known only at its end: it
	 * follows the body as a trailer field (RFC 9110 6.5), announced
	 * here. Recipients may ignore trailers (browsers do); a client that
	 * keeps it and sends it back in If-None-Match gets 304. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_TRAILER, MHD_HTTP_HEADER_ETAG);
	if (s->r.fill && s->r.deferred)
		fill_watch_start(s);
	/* The scan runs from now on (a deferred one once its header and
	 * prologue are handed over), whatever pace the client reads at. */
	advance(s);
	return resp;
}

void lst_stream_cancel_all(struct fsd_worker *w)
{
	for (struct lst_stream *s = live; s; s = s->next)
		if (s->w == w) {
			if (s->r.scan)
				lk_scan_cancel(s->r.scan);
			else if (!s->done)
				s->failed = true;       /* not started yet */
			wake(s);
		}
}
