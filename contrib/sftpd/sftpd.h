/*
 * fsd-sftp: an SFTP version 3 server on tevent and libfibril's lookup
 * engine. One thread, one tevent loop, one engine; every request of
 * every connection is an operation on the engine, answered when it
 * completes (out of order: SFTP ids allow it).
 */
#ifndef SFTPD_H
#define SFTPD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <talloc.h>
#include <tevent.h>

#include "contrib/sftpd/wire.h"
#include "contrib/tevent/fibril_tevent.h"

/** Requests of one connection in progress at once; beyond, the
 *  connection's input waits. */
#define SFTPD_MAX_PENDING 256
/** Bytes of replies queued for one connection, with those that READs
 *  and READDIRs in progress may still add, before its input waits. */
#define SFTPD_MAX_QUEUED (4u * 1024 * 1024)
/** Open handles per connection. */
#define SFTPD_MAX_HANDLES 512
/** Largest READ answered (a larger one is shortened, as the protocol allows). */
#define SFTPD_MAX_READ (SFTP_MAX_PACKET - 1024)

struct sftpd {
	struct tevent_context *ev;
	struct ftev *ft;
	TALLOC_CTX *conns;        /* every connection is a child */
	lk_root_t *root;
	bool icase;               /* case-insensitive lookups */
	unsigned join_age_ms;     /* -A: lk_scan_opts.join_age_ms */
	bool stdio;               /* serving stdin/stdout: exit when it ends */
	bool done;
	lk_cred_t *cred;          /* -u: every request acts as this user */
	unsigned nconns;
	unsigned closing;         /* descriptors the engine is closing */
	/* The connections on sockets, in an epoll set of their own that
	 * tevent polls as one descriptor (conn.c). */
	int cep;
	struct tevent_fd *cep_fde;
	/* Directory handles with a NAME reply to build (ops_dir.c), in
	 * turn; bulk_fd (an eventfd) is readable while there are any. */
	struct shandle *bulk_head, *bulk_tail;
	void (*bulk_before)(struct sftpd *srv); /* before each piece of bulk work */
	int bulk_fd;
	struct tevent_fd *bulk_fde;
};

struct sconn;
struct sreq;

enum shandle_kind { SH_FILE = 1, SH_DIR };

struct shandle {
	struct sconn *c;
	enum shandle_kind kind;
	uint32_t slot, gen;
	int fd;                   /* file, or the directory itself */
	unsigned busy;            /* reads in flight: close waits */
	bool closed;              /* closed by the client: gone once idle */
	/* directories */
	struct ftev_scan *scan;
	struct lk_entry *ents;    /* the batch being delivered */
	size_t nents, pos;
	bool eof;
	struct sreq *rd_head, *rd_tail;  /* READDIRs waiting, in order */
	bool reading;             /* a scan_next is pending */
	bool queued;              /* on the server's bulk queue */
	struct shandle *bulk_next;
};

struct sconn {
	struct sftpd *srv;
	int rfd, wfd;
	struct tevent_fd *rfde, *wfde;  /* the same object when rfd == wfd */
	uint32_t ep_events;       /* in srv->cep instead (rfde NULL): its events */
	struct tevent_immediate *resume; /* parse input left while throttled */
	uint8_t *in;              /* input, one packet at most beyond what is parsed */
	size_t inlen;
	struct sw_buf out;
	unsigned pending;         /* requests in progress */
	size_t reserved;          /* the sum of their sreq.reserve */
	bool inited;
	bool eof;                 /* input ended or failed: drain and go */
	bool parsing;             /* in sftpd__parse: replies are written after */
	char peer[64];
	struct shandle *h[SFTPD_MAX_HANDLES];
	uint32_t gen;
	uint64_t tl_arr, tl_read; /* timeline.c: the last read's times */
	/* Queues the reply a request built and frees it: set by conn.c,
	 * so that requests complete without calling back into it. */
	void (*req_done)(struct sreq *r);
};

/** One request in progress: a talloc child of its connection, so that a
 *  connection going away frees (and so cancels) all of them. */
struct sreq {
	struct sconn *c;
	uint32_t id;
	uint8_t type;
	struct shandle *h;        /* the handle it uses, if any */
	struct sreq *next;        /* READDIR queue */
	const char *path;         /* OPENDIR: the directory beneath the root */
	uint8_t *data;            /* READ: what was read so far */
	uint32_t got, want;
	uint32_t reserve;         /* bytes its reply may take, held in c->reserved */
	uint64_t off;
	struct lk_lookup_opts lo;
	uint64_t tl_arr, tl_read; /* timeline.c, when it is on */
};

/* log.c */
void sftpd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* conn.c */
/** Sets up the epoll set of connections; 0 or -errno. */
int sftpd_conns_init(struct sftpd *srv);
/** Serves the connections that are ready now, without waiting. */
void sftpd_conns_poll(struct sftpd *srv);
int sftpd_conn_new(struct sftpd *srv, int rfd, int wfd, const char *peer);

/** Queues the reply that @r built in its connection's output buffer and
 *  frees @r. */
static inline void sftpd_req_done(struct sreq *r)
{
	r->c->req_done(r);
}

/* ops.c */
/** Handles one packet (type, id and the rest in @rd); the packet's
 *  bytes stay valid only during the call. */
void sftpd_dispatch(struct sconn *c, uint8_t type, struct sw_reader *rd);

/* reply.c */
void sftpd_status(struct sreq *r, uint32_t code, const char *msg);
void sftpd_status_errno(struct sreq *r, int err);
void sftpd_put_attrs(struct sw_buf *w, const struct statx *stx);
/** The path beneath the root for a client's path ("." for the root),
 *  ".." resolved lexically and never above the root. */
char *sftpd_relpath(TALLOC_CTX *mem, const char *path);

/** The lookup options of a request on a path (credentials,
 *  case-insensitive names), or NULL when there are none. */
const struct lk_lookup_opts *sftpd_lopts(struct sreq *r, int oflags);

/* handle.c */
struct shandle *sftpd_handle_get(struct sconn *c, struct sw_reader *rd,
                                 enum shandle_kind kind);
struct shandle *sftpd_handle_new(struct sconn *c, enum shandle_kind kind, int fd);
/** Takes an ftev_open's result into @f (and frees @req) as a new handle
 *  of @kind, which owns f->fd; on failure answers @r's status and
 *  returns NULL. */
struct shandle *sftpd_handle_opened(struct tevent_req *req, struct sreq *r,
                                    enum shandle_kind kind, struct lk_file *f);
/** Answers @r with SSH_FXP_HANDLE naming @h, and ends @r. */
void sftpd_handle_reply(struct sreq *r, const struct shandle *h);
void sftpd_handle_release(struct shandle *h);

/** The server's queue of handles with bulk work (a NAME reply to
 * build, a batch to fetch): queues @h once, takes it off (when it
 * goes), and arms or disarms the queue's eventfd. */
void sftpd_bulk_add(struct shandle *h);
void sftpd_bulk_forget(struct shandle *h);
void sftpd_bulk_arm(struct sftpd *srv, bool on);

/* close.c */
/** Closes @fd (if >= 0) through the engine, never waiting on the loop. */
void sftpd_close_fd(struct sftpd *srv, int fd);
/** Closes @fd likewise and answers @r with the result once it is done. */
void sftpd_close_reply(struct sreq *r, int fd);

/* timeline.c: off unless FSD_SFTP_TIMELINE names a file */
extern bool sftpd_tl_on;
int sftpd_tl_start(struct tevent_context *ev);
void sftpd_tl_finish(void);
/** Appends the summary so far to the file and starts a new one. */
void sftpd_tl_dump(void);
uint64_t sftpd_tl_now(void);
bool sftpd_tl_cheap(uint8_t type);
/** The loop turn in progress is a connection's. */
void sftpd_tl_conn(void);
/** The loop turn in progress builds a NAME reply of the bulk queue. */
void sftpd_tl_bulk(void);
/** @ns of the turn in progress went into building NAME replies. */
void sftpd_tl_marshal(uint64_t ns);
/** @ns of the turn in progress went into writing replies. */
void sftpd_tl_write(uint64_t ns);
/** Replies recorded from here on (while parsing) are written by the
 *  write that sftpd_tl_written(mark) follows. */
size_t sftpd_tl_mark(void);
void sftpd_tl_written(size_t mark);
void sftpd_tl_req(uint8_t type, uint64_t arr, uint64_t read, uint64_t built,
                  uint64_t written);

/* ops_dir.c */
/** Sets up the queue of NAME replies to build; 0 or -errno. */
int sftpd_bulk_init(struct sftpd *srv);
void sftpd_opendir(struct sreq *r, const char *rel);
void sftpd_readdir(struct sreq *r, struct shandle *h);
void sftpd_dir_closed(struct shandle *h);

#endif
