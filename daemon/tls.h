/*
 * daemon/tls.h: HTTPS (tls.c): the certificate and key of the ssl
 * listeners, read with each configuration (start-up, reload), and the
 * libmicrohttpd options that make a listener speak TLS through GnuTLS.
 */
#ifndef FSD_TLS_H
#define FSD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "conf/conf.h"

struct fsd_server;

/* When a listener of srv->conf has ssl: reads ssl_certificate and
 * ssl_certificate_key into @srv (through fsd_priv_open: a reload after
 * privileges are dropped still reads a key only root may) and checks
 * them with GnuTLS (PEM, the key matches the certificate). Each problem goes to @err as
 * "FILE: ssl_certificate PATH: why". Returns the number of errors. */
int fsd_tls_load(struct fsd_server *srv, conf_err_fn *err, void *arg);
/* Forgets (and wipes) what fsd_tls_load() read. */
void fsd_tls_free(struct fsd_server *srv);

/* libmicrohttpd options of listener @i: fills @opt (FSD_TLS_NOPT items
 * at most, MHD_OPTION_END last) and returns the flags to add to
 * MHD_start_daemon's (MHD_USE_TLS), or 0 for a plain listener. */
#define FSD_TLS_NOPT 4
unsigned fsd_tls_options(const struct fsd_server *srv, size_t i,
                         struct MHD_OptionItem *opt);

/* Whether @conn came in on an ssl listener. */
bool fsd_tls_conn(struct MHD_Connection *conn);

/* The application bytes in @wire bytes that @conn wrote to its socket
 * since a record boundary (@wire itself on a plain connection): less
 * each record's overhead, the records full but the last. Exact to
 * within one record's overhead (22 bytes for TLS 1.3 with AES-GCM). */
uint64_t fsd_tls_plain_bytes(struct MHD_Connection *conn, uint64_t wire);

/* The transport of one TLS connection (socket @fd, whose worker runs
 * @base): a read-ahead buffer, and responses sent in as few records and
 * writes as they fit (tls.c). NULL if it cannot be set up: GnuTLS's own
 * transport serves then. */
struct fsd_tls_io;
struct event_base;
struct fsd_tls_io *fsd_tls_attach(struct MHD_Connection *mc, int fd,
                                  struct event_base *base);
/* A response is queued with @body_len bytes after its header (0: none,
 * or not known yet). Under 15 KiB header and body leave as one record
 * at fsd_tls_sent(); larger, the header record leaves with the body's
 * first. */
void fsd_tls_sending(struct fsd_tls_io *io, uint64_t body_len);
/* libmicrohttpd reports the response complete. */
void fsd_tls_sent(struct fsd_tls_io *io);
/* Closed connections whose last response is still being written (at
 * most connection_timeout each), on this worker; and their end, at the
 * worker's. */
unsigned fsd_tls_orphans(void);
void fsd_tls_orphans_free(void);
/* At the close of the connection; @io may be NULL. Bytes of a response
 * the socket has not taken yet are still written. */
void fsd_tls_detach(struct MHD_Connection *mc, struct fsd_tls_io *io);

#endif
