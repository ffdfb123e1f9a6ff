/*
 * fileserverd internals shared by the files of daemon/ (not installed).
 *
 * Threads: main() parses the configuration, binds the sockets, drops
 * privileges, then starts one worker thread per -w; each worker owns an
 * event_base, an async engine, a fibril scheduler and one MHD daemon per
 * listen address, and everything hanging off a request belongs to the
 * worker that accepted it. The only cross-thread paths are the stop
 * eventfd and its flags (main → worker), the log queue (worker → log
 * thread), the worker's drain flags that main() polls (worker →
 * main), the counters a status request reads from every worker
 * (metrics.h), and the table of connections per client address that
 * all workers share under a mutex (conn.c).
 *
 * A reload (SIGHUP) builds a second struct fsd_server from the file
 * and starts its workers on the listening sockets it shares with the
 * old one (dup'ed: each server closes its own); the old workers stop
 * accepting, finish the request each connection is on, and exit, and
 * main() frees the old server once it has joined them.
 *
 * Files, each calling only those below it:
 *
 *   main.c            arguments, user, signals, reloads
 *   servers.c         a server built from the configuration, its sockets
 *                     and workers, started, drained and freed
 *   worker.c          a worker's thread and loop, libmicrohttpd set-up
 *   request.c         a request's life cycle (the MHD callbacks, its fibril)
 *   conn.c            connections: accepted, counted per address, swept
 *                     for timeouts and slow readers
 *   status.c          /metrics, /status, /healthz (status.h)
 *   reqhdr.c          request headers copied and checked (proto/reqcheck)
 *   static.c          what a path is: file, directory, index, redirect,
 *                     sidecar, cache, listing
 *   paths.c           where a path may lead: the symlinks policy
 *   listing*.c        directory listings (listing_int.h)
 *   lcache*.c         the listing cache (lcache.h; lcache_watch.c: a
 *                     fill's names and watches off the worker)
 *   body.c            file bodies: in memory, sendfile, multipart
 *   fcache*.c         the file cache: small files' bytes, large files
 *                     open or mapped (fcache.h)
 *   resident.c        whether a file's pages are in the page cache
 *   respond.c         every response: status, headers, errors, redirects,
 *                     validators and preconditions, Content-Range
 *   sent.c            bytes sent (access log), sendfile bodies watched
 *   worker_susp.c     a worker's suspended requests and its kick
 *   mime.c            content types and sidecar names
 *   log*.c            error and access logs (log.h)
 *   tls.c             HTTPS: certificate and key, libmicrohttpd's options
 *   metrics.c         the workers' counters, summed (metrics.h)
 *   server.c          struct fsd_server fsd
 *   notify.c          readiness, reloads and stops told to systemd (notify.h)
 *   priv.c            the root helper: logs, key files, low ports after
 *                     privileges are dropped (priv.h)
 */
#ifndef FSD_DAEMON_H
#define FSD_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "conf/conf.h"
#include "proto/cond.h"

struct event;
struct event_base;
typedef struct fibril fibril_t;
typedef struct async_engine async_engine_t;

/* Header fields a request may carry (431 beyond, as Apache's
 * LimitRequestFields). */
#define FSD_MAX_FIELDS 100
/* libmicrohttpd's per-connection pool is conf.request_header_max plus
 * this: room for its bookkeeping of each field (a 56-byte record in
 * 0.9.75, placed on 64) and for the response headers it builds there.
 * A head within both limits then always leaves room for its answer.
 * The pool is cleared after every request (0.9.75 memsets all of it),
 * so its size is a per-request cost: 32 KiB (MHD's default) cost ~6% of
 * the CPU time of a small-file hit. */
#define FSD_POOL_SLACK (FSD_MAX_FIELDS * 64 + 2048)

/* ---- the server: a configuration and what it opened; read-only once
 * workers run ---- */
struct fsd_worker;
struct proto_mime;
struct fsd_server {
	struct conf conf;
	int rootfd;                 /* O_PATH|O_DIRECTORY fd of conf.root */
	struct lk_root *lkroot;     /* lookup engine root, or NULL */
	struct lk_root *lknolinks;  /* the same tree, refusing every symlink */
	struct proto_mime *mime;    /* mime.c */
	int *listen_fds;            /* conf.nlisten sockets, this server's own */
	struct fsd_worker *workers; /* conf.workers */
	unsigned nstarted;          /* workers whose thread runs or is to be joined */
	char *tls_cert, *tls_key;   /* PEM of the ssl listeners, or NULL (tls.c) */
	struct fsd_paths *paths;    /* the symlinks policy's other roots (paths.h) */
};
/* The server this thread serves: main() sets its own, each worker its
 * worker's (worker.c), so that workers started with a new configuration
 * and workers still finishing under the old one each see their own. */
extern __thread const struct fsd_server *fsd;

/* The command line: overrides the configuration file. */
struct fsd_args {
	const char *config, *root;
	char **listen;
	int nlisten, workers;
	bool test;
};

/* servers.c, main thread only */
/* Reads the configuration (the file, @a over it) and opens the root and
 * the MIME table. *errors: how many problems were reported (on stderr,
 * or in the error log when @reload); the server is not to be used
 * unless 0. NULL: out of memory, or the file could not be read. */
struct fsd_server *fsd_server_new(const struct fsd_args *a, bool reload,
                                  int *errors);
/* The listening sockets: those of @old (NULL at start-up) for the
 * addresses it has too, the others bound (fsd_priv_bind). 0 or -errno
 * (reported). */
int fsd_server_bind(struct fsd_server *s, const struct fsd_server *old);
/* Starts the workers and waits until each serves. 0, or -errno once
 * they are stopped again (reported). */
int fsd_server_start(struct fsd_server *s);
/* Every worker drains (fsd_worker_stop). */
void fsd_server_stop(struct fsd_server *s, bool now);
/* Closes the listening sockets once no worker accepts, and joins the
 * workers once all have exited: returns true then. Never blocks. */
bool fsd_server_reap(struct fsd_server *s);
void fsd_server_free(struct fsd_server *s);

/* ---- requests ---- */
enum fsd_method { FSD_M_OTHER = 0, FSD_M_GET, FSD_M_HEAD, FSD_M_OPTIONS };

enum fsd_rq_state {
	RQ_NEW = 0,     /* URI seen, access handler not called yet */
	RQ_RUNNING,     /* the fibril has not finished */
	RQ_DONE,        /* rq->resp is ready to queue */
	RQ_QUEUED,      /* handed to MHD */
};

/* Request headers the handlers use, copied out of MHD's connection
 * memory so that a fibril that outlives its connection (deadline passed)
 * never touches freed memory. NULL when absent. */
struct fsd_hdrs {
	const char *host, *range, *if_range, *if_match, *if_none_match,
		*if_modified_since, *if_unmodified_since, *accept_encoding,
		*accept, *referer, *user_agent;
};

struct fsd_worker;
struct fsd_body_watch;

struct lst_stream;

struct fsd_req {
	struct fsd_worker *w;
	struct MHD_Connection *conn;   /* NULL once abandoned */
	char *uri;                     /* raw request-target (uri_mem) */
	const char *method_str;        /* for the log: static, or owned if method_owned */
	bool method_owned;
	char version[12];
	enum fsd_method method;
	enum fsd_rq_state state;
	unsigned refs;                 /* connection + running fibril */
	bool suspended;
	bool abandoned;                /* deadline or stop: fibril runs on alone */
	struct lk_group *group;        /* the fibril's lookups, cancelled together */
	long cookie;                   /* the fibril's pending raw async call, or 0 */
	uint64_t deadline_ns;
	struct fsd_req *prev, *next;   /* worker's suspended list */

	struct fsd_hdrs h;
	char *hdr_mem;                 /* owns the strings of h, unless they fit hdr_inline */
	char hdr_inline[256];

	/* result, set by the fibril */
	unsigned status;
	struct MHD_Response *resp;
	/* A shared response (fsd_req_respond_shared): resp is not ours to
	 * change or destroy; resp_put(resp_arg) drops our hold on it. */
	void (*resp_put)(void *arg);
	void *resp_arg;
	uint64_t body_len;             /* for the access log */
	/* Body bytes logged and counted beside body_len, which the
	 * connection's accounting (sent.h, tls.c) reads as a file body's:
	 * an error or redirect page, and what a streamed listing handed to
	 * libmicrohttpd (stream, until either of the two ends). */
	uint32_t page_len;
	struct lst_stream *stream;
	uint64_t stream_bytes;
	/* Counting a body cut short (sent.h): bytes written on the socket
	 * before this response, and the length of its header. */
	bool sock0_set;
	uint64_t sock0;
	size_t hdr_len;
	struct fsd_body_watch *watch;  /* a sendfile body in flight (sent.c) */
	bool close;                    /* framing can't be trusted: close after */

	/* for the access log */
	char addr[48];
	int64_t start_s;
	uint64_t start_ns;             /* for the latency histogram (metrics.h) */

	char uri_mem[];                /* the request-target, NUL-terminated */
};

/* ---- worker ---- */
struct fsd_worker {
	unsigned id;
	const struct fsd_server *srv;
	pthread_t thread;
	struct event_base *base;
	async_engine_t *engine;
	size_t nmhd;
	struct MHD_Daemon **mhd;
	int *listen_fds;
	struct event **mhd_ev;
	struct event *timer, *stop_ev, *kick_ev;
	int stop_efd;
	struct fsd_req *susp_head;     /* suspended requests, oldest first */
	struct fsd_req *susp_tail;
	unsigned listings;             /* listings in progress */
	bool stopping;                 /* draining: not accepting, finishing requests */
	bool resumed;                  /* a connection was resumed since the last MHD_run */
	uint64_t stop_deadline_ns;
	/* main → worker: set before the stop eventfd is written */
	atomic_bool stop_now;          /* cut what is in flight at once */
	/* worker → main */
	atomic_int started;            /* 1: serving, -1: failed to set up */
	atomic_bool accept_stopped;    /* no longer watches the listening sockets */
	atomic_bool exited;            /* the thread is done: join it */

	/* conn.c */
	struct fsd_conn *conns;        /* open connections */
	unsigned nconns;
	struct event **accept_ev;      /* one per shared listening socket */
	uint64_t next_sweep_ns;
	struct {                       /* logged and reset by each sweep */
		unsigned refused, refused_fds, refused_ip, head_closed, slow_closed;
		uint8_t refused_ip_addr[16];
	} cs;
};

/* worker.c */
int fsd_worker_start(struct fsd_worker *w);
/* From main, asynchronous: drains (up to shutdown_timeout), or with
 * @now cuts every connection at once. */
void fsd_worker_stop(struct fsd_worker *w, bool now);
void fsd_worker_join(struct fsd_worker *w);
/* worker_susp.c */
/* Puts @rq on the suspended list with its deadline. */
void fsd_worker_track(struct fsd_worker *w, struct fsd_req *rq);
void fsd_worker_untrack(struct fsd_worker *w, struct fsd_req *rq);
/* After MHD_resume_connection(): have the loop run MHD now. */
void fsd_worker_kick(struct fsd_worker *w);

/* conn.c: accepting (the workers share the listening sockets) and the
 * per-connection limits: max_connections, max_connections_per_ip,
 * header_timeout, min_send_rate. */
int fsd_conn_start(struct fsd_worker *w);         /* after the MHD daemons */
void fsd_conn_stop_accepting(struct fsd_worker *w);
/* While the worker drains: ends the connections waiting for a next
 * request (the one each was on is answered). */
void fsd_conn_drain(struct fsd_worker *w);
/* Deadlines and the log of refusals; runs at most once a second. */
void fsd_conn_sweep(struct fsd_worker *w);
/* MHD_OPTION_NOTIFY_CONNECTION (cls is the worker); calls reqhdr.c's
 * fsd_conn_notify_cb() first. */
void fsd_conn_track_cb(void *cls, struct MHD_Connection *mc, void **ctx,
                       enum MHD_ConnectionNotificationCode code);
/* The request head is complete / its response is queued / the
 * response is done (the next head's deadline starts). @body_len: the
 * bytes after the response's header, 0 if none or not known (under TLS
 * the header's record waits for them, tls.c). */
void fsd_conn_head_done(struct MHD_Connection *mc);
void fsd_conn_sending(struct MHD_Connection *mc, uint64_t body_len);
void fsd_conn_request_done(struct MHD_Connection *mc);

/* request.c: MHD callbacks (cls is the worker) */
void *fsd_uri_log_cb(void *cls, const char *uri, struct MHD_Connection *c);
enum MHD_Result fsd_access_cb(void *cls, struct MHD_Connection *conn, const char *url,
                  const char *method, const char *version,
                  const char *upload_data, size_t *upload_data_size,
                  void **con_cls);
void fsd_completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe);
/* Deadline passed or the worker stops: answer 503 now, leave the fibril
 * (its calls cancelled) to finish on its own. */
void fsd_req_abandon(struct fsd_req *rq, unsigned status);
/* Cancels the request fibril's pending lookups and async call. */
void fsd_req_cancel_calls(struct fsd_req *rq);

/* respond.c: every response is built and answered here: status,
 * common headers, error pages, redirects, validators and preconditions,
 * Content-Range, and the status of a file-system error. The cache,
 * static files and listings use it; it uses none of them. */

/* Sets rq's result to a small error page (status, optional Allow /
 * Location). Runs on the fibril or in the handler. */
void fsd_req_error(struct fsd_req *rq, unsigned status);
/* Writes the error page for @status to a plain connection's socket
 * itself (the caller then has libmicrohttpd close it): 0, or -errno
 * (-EPROTONOSUPPORT on TLS). For refusing a head too large to leave
 * libmicrohttpd room for the answer. */
int fsd_req_refuse_raw(struct fsd_req *rq, unsigned status);
/* 301/302 to @location (copied). */
void fsd_req_redirect(struct fsd_req *rq, unsigned status, const char *location);
/* OPTIONS: 204 with Allow. */
void fsd_req_options(struct fsd_req *rq);
/* A failed lookup/read: maps -errno to 404/403/414/503, or logs it with
 * the path and answers 500. */
void fsd_req_fs_error(struct fsd_req *rq, const char *what, const char *path, int err);
/* The request's If-Match / If-None-Match / If-(Un)modified-Since
 * against a representation (proto_cond_eval); PROCEED at once when it
 * has none of them. */
enum proto_cond fsd_req_cond(const struct fsd_req *rq, const char *etag,
                             time_t mtime);
/* Sets rq->resp/status; takes ownership of @resp. */
void fsd_req_respond(struct fsd_req *rq, unsigned status,
                     struct MHD_Response *resp, uint64_t body_len);
/* Answers with @resp, a complete response (fsd_resp_common included)
 * that other requests may be sending too: it is queued unchanged, and
 * put(arg) is called once this request holds it no longer (after MHD
 * took its own reference, or when the request ends first). If the
 * request already has an answer, put(arg) is called at once. */
void fsd_req_respond_shared(struct fsd_req *rq, unsigned status,
                            struct MHD_Response *resp, uint64_t body_len,
                            void (*put)(void *arg), void *arg);
/* Adds the headers every response carries (Date is MHD's). */
void fsd_resp_common(struct MHD_Response *resp);
/* The validators of a representation: on its 200 and 206, and its 304. */
struct fsd_validators {
	const char *etag;
	const char *lastmod;    /* HTTP-date, or "" when the time has none */
	bool vary;              /* Accept-Encoding chose it (sidecars on) */
};
void fsd_resp_validators(struct MHD_Response *resp, const struct fsd_validators *v);
/* The request's preconditions (fsd_req_cond) against @v and @mtime
 * (-1: none): when they decide the answer, answers 304 with the
 * validators (and the Content-Length a 200 would have: @len) or 412,
 * and returns true. */
bool fsd_req_preconditions(struct fsd_req *rq, const struct fsd_validators *v,
                           time_t mtime, uint64_t len);
/* Content-Range of a 206 for @r, or of a 416 when @r is NULL. */
struct proto_range;
void fsd_resp_content_range(struct MHD_Response *resp,
                            const struct proto_range *r, uint64_t size);

/* static.c: the request fibril's body */
void fsd_static_handle(struct fsd_req *rq);
/* In the access handler, before any fibril: answers @rq from the
 * small-file cache if it can (returns 0; no lookup, never parks), else
 * returns 1 and fsd_static_handle() serves it on a fibril. */
int fsd_static_from_cache(struct fsd_req *rq);
#endif
