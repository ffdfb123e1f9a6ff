#include "first.h"

#include "daemon/daemon.h"
#include "daemon/fcache.h"
#include "daemon/lcache.h"
#include "daemon/listing.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/reqhdr.h"
#include "daemon/tls.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>
#include <fibril/async.h>
#include <fibril/async_event.h>
#include <fibril/fibril.h>

/* Once the connections are closed: time for abandoned fibrils to see
 * their cancelled calls complete. */
#define FSD_FIBRIL_GRACE_MS 1000

/* MHD must see the raw request-target: proto/ decodes it, and only the
 * raw form tells an encoded "/" or NUL from a literal one. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	(void)cls;
	vsnprintf(buf, sizeof buf, fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	fsd_log(LOG_INFO, "mhd: %s", buf);
}

static void engine_log(int level, const char *msg, void *arg)
{
	struct fsd_worker *w = arg;

	/* The backend line comes once per worker; say it once. */
	if (w->id && strstr(msg, "backend"))
		return;
	fsd_log(level > LOG_NOTICE ? LOG_NOTICE : level, "%s", msg);
}

static void expire(struct fsd_worker *w);

static void schedule(struct fsd_worker *w)
{
	long ms = -1;
	MHD_UNSIGNED_LONG_LONG t;
	int f;

	/* Fibrils woken by completions or wake-ups run before we sleep; they
	 * may finish requests and resume connections. */
	if (fibril_sched_count())
		fibril_sched_run();
	/* Deadlines are checked here, not only on the timer: on a busy
	 * worker every event re-arms the timer below and it never fires. */
	expire(w);
	fsd_conn_sweep(w);
	for (size_t i = 0; i < w->nmhd; i++)
		if (w->mhd[i] && MHD_get_timeout(w->mhd[i], &t) == MHD_YES)
			if (ms < 0 || (long long)t < ms)
				ms = (long)t;
	f = fibril_sched_timeout_ms();
	if (f >= 0 && (ms < 0 || f < ms))
		ms = f;
	if (w->engine) {
		f = async_engine_timeout_ms(w->engine);
		if (f >= 0 && (ms < 0 || f < ms))
			ms = f;
	}
	if (w->susp_head) {
		uint64_t now = fibril_now_ns(), d = w->susp_head->deadline_ns;
		long dm = d <= now ? 0 : (long)((d - now + 999999) / 1000000);
		if (ms < 0 || dm < ms)
			ms = dm;
	}
	/* Access-log lines sit in a thread buffer: flush at least once a second. */
	if (ms < 0 || ms > 1000)
		ms = 1000;
	/* Watches a dropped entry left go some at a time (every 100 ms,
	 * fcache_watch.c), idle or not. */
	if (fsd_fcache_tidy() && ms > 100)
		ms = 100;
	/* Stopping: look every 10 ms whether the last responses are out. */
	if (w->stopping && ms > 10)
		ms = 10;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(w->timer, &tv);
	fsd_metrics_sample(w);
}

/*
 * libmicrohttpd 0.9.75, external epoll: MHD_resume_connection() only
 * marks the connection; nothing becomes readable on MHD's epoll fd (its
 * ITC is not used in external polling mode), so without help the
 * response waited for the next timer (measured: ~1 s). fsd_worker_kick()
 * makes the loop call MHD_run() at once; a resumed connection's socket
 * has nothing new to report (edge-triggered), so the run that moves it
 * back to MHD's lists is followed by one more that handles it.
 */
static void run_mhd(struct fsd_worker *w)
{
	bool again = w->resumed;

	w->resumed = false;
	for (size_t i = 0; i < w->nmhd; i++)
		if (w->mhd[i])
			MHD_run(w->mhd[i]);
	if (again || w->resumed) {
		w->resumed = false;
		for (size_t i = 0; i < w->nmhd; i++)
			if (w->mhd[i])
				MHD_run(w->mhd[i]);
	}
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct fsd_worker *w = arg;
	(void)fd;
	(void)what;
	run_mhd(w);
	schedule(w);
}

static void expire(struct fsd_worker *w)
{
	uint64_t now = fibril_now_ns();

	while (w->susp_head && w->susp_head->deadline_ns <= now) {
		struct fsd_req *rq = w->susp_head;
		fsd_log(LOG_WARNING, "request %s %s: no answer within %us, abandoned",
		        rq->method_str ? rq->method_str : "?", rq->uri ? rq->uri : "?",
		        fsd->conf.request_timeout);
		FSD_M_INC(limited[FSD_M_LIM_TIMEOUT]);
		fsd_req_abandon(rq, 503);
	}
}

static void on_mhd(evutil_socket_t fd, short what, void *arg)
{
	struct fsd_worker *w = arg;
	(void)fd;
	(void)what;
	run_mhd(w);
	schedule(w);
}

/* Draining: true once no connection is left, or when shutdown_timeout
 * has passed (the teardown then cuts what is left). */
static bool drained(struct fsd_worker *w)
{
	unsigned conns = 0;

	fsd_conn_drain(w);
	for (size_t i = 0; i < w->nmhd; i++) {
		const union MHD_DaemonInfo *di = w->mhd[i] ?
			MHD_get_daemon_info(w->mhd[i], MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
		if (di)
			conns += di->num_connections;
	}
	conns += fsd_tls_orphans();
	if (conns && fibril_now_ns() < w->stop_deadline_ns)
		return false;
	if (conns && atomic_load(&w->stop_now))
		fsd_log(LOG_NOTICE, "worker %u: %u connection%s cut: stopping now",
		        w->id, conns, conns > 1 ? "s" : "");
	else if (conns)
		fsd_log(LOG_WARNING, "worker %u: %u connection%s cut: still busy after "
		        "shutdown_timeout (%us)", w->id, conns, conns > 1 ? "s" : "",
		        fsd->conf.shutdown_timeout);
	return true;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct fsd_worker *w = arg;
	(void)fd;
	(void)what;
	fsd_log_flush_thread();
	if (w->engine)
		async_engine_process(w->engine, 0);
	fibril_sched_run();
	expire(w);
	fsd_conn_sweep(w);
	run_mhd(w);
	if (w->stopping && drained(w)) {
		event_base_loopbreak(w->base);
		return;
	}
	schedule(w);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	struct fsd_worker *w = arg;
	uint64_t v;
	(void)what;
	if (read(fd, &v, sizeof v) < 0 && errno != EAGAIN)
		return;
	if (atomic_load(&w->stop_now))
		w->stop_deadline_ns = fibril_now_ns();
	if (!w->stopping) {
		w->stopping = true;
		if (!atomic_load(&w->stop_now))
			w->stop_deadline_ns = fibril_now_ns() +
				fsd->conf.shutdown_timeout * 1000000000ull;
		/* The listening sockets are shared by the workers (and with
		 * those of a new configuration): main() closes them once
		 * every worker of this server has let go. */
		fsd_conn_stop_accepting(w);
		atomic_store(&w->accept_stopped, true);
	}
	/* Requests in progress, suspended ones and listings included, go
	 * on; the teardown cuts what is left at the deadline. */
	run_mhd(w);
	schedule(w);
}

/* libmicrohttpd for listen address @i (connections handed to it by
 * conn.c), polled through its epoll fd. */
static int mhd_start(struct fsd_worker *w, size_t i)
{
	const struct conf *c = &fsd->conf;
	const union MHD_DaemonInfo *di;
	struct MHD_OptionItem tls[FSD_TLS_NOPT];
	unsigned tls_flags = fsd_tls_options(fsd, i, tls);

	w->mhd[i] = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO |
		MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | tls_flags,
		0, NULL, NULL, fsd_access_cb, w,
		MHD_OPTION_ARRAY, tls,
		MHD_OPTION_NOTIFY_CONNECTION, fsd_conn_track_cb, w,
		MHD_OPTION_URI_LOG_CALLBACK, fsd_uri_log_cb, w,
		MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
		MHD_OPTION_NOTIFY_COMPLETED, fsd_completed_cb, w,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->connection_timeout,
		/* conn.c refuses first, with a 503; this only guards. */
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)c->max_connections + 16,
		/* Not 1: in 0.9.75 strict mode answers a missing Host with a
		 * malformed response (its headers sent twice); reqhdr.c and
		 * proto/reqcheck.c do the RFC 9112 checks instead
		 * (docs/DESIGN.md, "Request validation"). */
		MHD_OPTION_STRICT_FOR_CLIENT, (int)0,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
		/* main() ignores SIGPIPE; without this 0.9.75 never uses
		 * sendfile and copies fd bodies through its 32 KiB pool. */
		MHD_OPTION_SIGPIPE_HANDLED_BY_APP, (int)1,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)c->request_header_max + FSD_POOL_SLACK,
		MHD_OPTION_END);
	if (!w->mhd[i]) {
		fsd_log(LOG_ERR, "worker %u: libmicrohttpd did not start on %s",
		        w->id, c->listen[i].text);
		return -EINVAL;
	}
	di = MHD_get_daemon_info(w->mhd[i], MHD_DAEMON_INFO_EPOLL_FD);
	if (!di)
		return -EINVAL;
	w->mhd_ev[i] = event_new(w->base, di->epoll_fd, EV_READ | EV_PERSIST,
	                         on_mhd, w);
	if (!w->mhd_ev[i] || event_add(w->mhd_ev[i], NULL) < 0)
		return -ENOMEM;
	return 0;
}

static int worker_setup(struct fsd_worker *w)
{
	/* A worker thread serves every connection it holds: no file system
	 * call may ever run on it, even past the engine's limit. */
	struct async_engine_opts eo = { .log = engine_log, .log_arg = w,
	                                .queue_at_limit = 1 };
	int r;

	r = fibril_sched_init(NULL);
	if (r < 0) {
		fsd_log(LOG_ERR, "worker %u: fibril scheduler: %s", w->id, strerror(-r));
		return r;
	}
	r = async_engine_create(&eo, &w->engine);
	if (r < 0) {
		/* fibril_* calls then run the plain system calls. */
		fsd_log(LOG_WARNING, "worker %u: no async engine (%s): file system calls will block",
		        w->id, strerror(-r));
		w->engine = NULL;
	}
	w->base = event_base_new();
	if (!w->base)
		return -ENOMEM;
	fsd_fcache_init();	/* < 0: disabled (logged once), serve without it */
	w->mhd = calloc(w->nmhd, sizeof *w->mhd);
	w->mhd_ev = calloc(w->nmhd, sizeof *w->mhd_ev);
	if (!w->mhd || !w->mhd_ev)
		return -ENOMEM;
	for (size_t i = 0; i < w->nmhd; i++) {
		r = mhd_start(w, i);
		if (r < 0)
			return r;
	}
	if (w->engine) {
		r = async_event_attach(w->engine, w->base);
		if (r < 0)
			return r;
	}
	r = fsd_conn_start(w);
	if (r < 0)
		return r;
	w->stop_ev = event_new(w->base, w->stop_efd, EV_READ | EV_PERSIST, on_stop, w);
	w->timer = evtimer_new(w->base, on_timer, w);
	w->kick_ev = event_new(w->base, -1, 0, on_kick, w);
	if (!w->stop_ev || !w->timer || !w->kick_ev || event_add(w->stop_ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

static void worker_teardown(struct fsd_worker *w)
{
	fsd_conn_stop_accepting(w);
	/* MHD requires every suspended connection resumed before stopping. */
	while (w->susp_head)
		fsd_req_abandon(w->susp_head, 503);
	fsd_listing_stop(w);
	for (size_t i = 0; i < w->nmhd; i++)
		if (w->mhd && w->mhd[i]) {
			MHD_run(w->mhd[i]);
			/* the event watches MHD's epoll fd: drop it first */
			if (w->mhd_ev[i]) {
				event_free(w->mhd_ev[i]);
				w->mhd_ev[i] = NULL;
			}
			MHD_stop_daemon(w->mhd[i]);
			w->mhd[i] = NULL;
		}
	/* Abandoned fibrils finish once their cancelled calls complete. */
	uint64_t until = fibril_now_ns() + FSD_FIBRIL_GRACE_MS * 1000000ull;
	while (fibril_sched_count() && fibril_now_ns() < until) {
		if (w->engine)
			async_engine_process(w->engine, 0);
		if (!fibril_sched_run())
			usleep(1000);
	}
	if (fibril_sched_count())
		fsd_log(LOG_WARNING, "worker %u: %u request fibrils still running at exit",
		        w->id, fibril_sched_count());
	for (size_t i = 0; i < w->nmhd; i++)
		if (w->mhd_ev && w->mhd_ev[i])
			event_free(w->mhd_ev[i]);
	free(w->mhd_ev);
	free(w->mhd);
	if (w->stop_ev)
		event_free(w->stop_ev);
	if (w->timer)
		event_free(w->timer);
	if (w->kick_ev)
		event_free(w->kick_ev);
	if (w->engine) {
		async_event_detach(w->engine);
		async_engine_destroy(w->engine);
	}
	fsd_tls_orphans_free();
	if (w->base)
		event_base_free(w->base);
	fsd_fcache_fini();
	lcache_fini();
	fibril_sched_fini();
	fsd_log_flush_thread();
}

static void *worker_main(void *arg)
{
	struct fsd_worker *w = arg;

	fsd = w->srv;
	fsd_metrics_attach(w);
	if (worker_setup(w) == 0) {
		atomic_store(&w->started, 1);
		schedule(w);
		event_base_dispatch(w->base);
	} else
		atomic_store(&w->started, -1);  /* main() gives up this server */
	worker_teardown(w);
	fsd_metrics_detach();
	atomic_store(&w->accept_stopped, true);
	atomic_store(&w->exited, true);
	return NULL;
}

int fsd_worker_start(struct fsd_worker *w)
{
	int r;

	w->stop_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->stop_efd < 0)
		return -errno;
	r = pthread_create(&w->thread, NULL, worker_main, w);
	if (r) {
		close(w->stop_efd);
		w->stop_efd = -1;
	}
	return -r;
}

void fsd_worker_stop(struct fsd_worker *w, bool now)
{
	uint64_t one = 1;

	if (now)
		atomic_store(&w->stop_now, true);
	if (write(w->stop_efd, &one, sizeof one) < 0)
		fsd_log(LOG_ERR, "worker %u: stop: %s", w->id, strerror(errno));
}

void fsd_worker_join(struct fsd_worker *w)
{
	pthread_join(w->thread, NULL);
	close(w->stop_efd);
}
