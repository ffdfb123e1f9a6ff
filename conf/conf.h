/*
 * fileserverd configuration: defaults, the INI-style file (libinih),
 * validation. Pure data; no I/O beyond reading the file.
 *
 * Threading: build a struct conf on one thread (conf_init, conf_load,
 * conf_validate); afterwards it is read-only and may be shared by every
 * worker without locks. conf_free() releases it.
 */
#ifndef FSD_CONF_H
#define FSD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "proto/etag.h"
#include "proto/listing_opts.h"

/** Names starting with '.': hidden (listed no, served no: 404), served
 *  when asked for by name but not listed, or listed and served. Ordered
 *  from the most to the least restrictive. */
enum conf_dotfiles { CONF_DOT_OFF = 0, CONF_DOT_SERVE, CONF_DOT_LIST };
/** Symlink targets in listings: shown when the link resolves beneath
 *  the root, or never. */
enum conf_symlink_targets { CONF_TARGETS_BENEATH = 0, CONF_TARGETS_OFF };

/** How symlinks on a served path are treated (symlinks = ...). */
enum conf_symlinks {
	CONF_LINKS_BENEATH = 0,   /**< followed while they stay beneath the root,
	                               or lead into an allow tree (default) */
	CONF_LINKS_FOLLOW,        /**< followed wherever they lead */
	CONF_LINKS_OWNER,         /**< followed when the link's owner owns its target */
	CONF_LINKS_NEVER          /**< any symlink on the path refuses it */
};

/** One `allow` tree: an absolute path, normalised. */
struct conf_allow {
	char *path;
	int line;                     /**< where it was given */
};

/** One `listen` value, resolved. */
struct conf_listen {
	char *text;                   /**< the address as written, e.g. "127.0.0.1:8080" (no flags) */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool ssl;                     /**< "ssl" flag: TLS (ssl_certificate, ssl_certificate_key) */
	bool status;                  /**< "status" flag: serves /metrics, /status, /healthz */
	bool status_only;             /**< ... and nothing else (status_listen) */
	int line;                     /**< where the file gives it (0: the command
	                                   line, -1: the default address) */
};

/** Listing settings; [listing] gives the defaults, [dir "/x"] overrides. */
struct conf_listing {
	bool enabled;                 /**< listings on (default true) */
	enum conf_dotfiles dotfiles;  /**< names starting with '.' (default off) */
	enum conf_symlink_targets symlink_targets; /**< (default beneath) */
	enum proto_list_format format; /**< default_format (default html) */
	enum proto_list_sort sort;    /**< default_sort (default name) */
	unsigned window;              /**< statx window (default 256) */
	unsigned local_window;        /**< ... on local file systems (default 4096) */
	bool attrs_from_lookup;       /**< statx with AT_STATX_DONT_SYNC (default true) */
	bool background;              /**< the scan's I/O at SCHED_IDLE (default true) */
};

/** A [dir "/path"] section: settings for a URL path prefix. */
struct conf_dir {
	char *path;                   /**< normalised, starts with '/', no trailing '/' (except "/") */
	int line;                     /**< where the section starts */
	int listing;                  /**< -1 unset, else 0/1 */
	int dotfiles;                 /**< -1 unset, else an enum conf_dotfiles */
};

enum conf_log_level { CONF_LOG_ERR = 3, CONF_LOG_WARNING = 4,
                      CONF_LOG_NOTICE = 5, CONF_LOG_INFO = 6,
                      CONF_LOG_DEBUG = 7 };

struct conf {
	const char *file;             /**< the file loaded, or NULL (borrowed) */
	struct conf_listen *listen;   /**< nlisten entries */
	size_t nlisten;
	char *root;                   /**< document root (default ".") */
	unsigned workers;             /**< worker threads (default 1) */
	char *user, *group;           /**< drop privileges to these (NULL: don't) */
	char *access_log;             /**< path, "-" for stderr, "off" → NULL */
	char *error_log;              /**< path, "-" (default) for stderr */
	int log_level;                /**< syslog level (default CONF_LOG_NOTICE) */
	char *index;                  /**< index file name (default "index.html"; "" off) */
	char *mime_types;             /**< mime.types path (default /etc/mime.types) */
	char *default_type;           /**< default "application/octet-stream" */
	bool sidecars;                /**< precompressed .br/.zst/.gz (default on) */
	enum proto_etag_kind etag;    /**< what file ETags are made of (default inode) */
	unsigned max_ranges;          /**< ranges per request (default 16) */
	unsigned request_timeout;     /**< seconds for a suspended request (default 30) */
	unsigned connection_timeout;  /**< idle keep-alive seconds (default 60) */
	unsigned max_connections;     /**< per worker (default 4096, lowered to fit RLIMIT_NOFILE) */
	unsigned max_connections_per_ip; /**< per client address, all workers (default 256; 0: no limit) */
	size_t loopback_sndbuf;       /**< send buffer of a connection from this host (default 1 MiB; 0: the kernel's) */
	unsigned header_timeout;      /**< seconds for a whole request head (default 10) */
	unsigned shutdown_timeout;    /**< seconds a stop or reload lets requests finish (default 30) */
	size_t min_send_rate;         /**< bytes/s a client must take a response at (default 1024; 0: off) */
	unsigned max_listings;        /**< listings in progress per worker (default 8) */
	unsigned listing_queue;       /**< listings waiting for a place, per worker (default 64; 0: refuse at once) */
	unsigned listing_queue_timeout; /**< seconds one may wait there (default 10) */
	size_t listing_cache_bytes;   /**< listing cache per worker, 0: off (default 64 MiB) */
	size_t small_file_max;        /**< bodies up to this are read into memory (default 65536) */
	size_t request_header_max;    /**< request line + header fields, bytes; more: 431 (default 8192) */
	unsigned fcache_entries;      /**< small-file cache entries per worker, 0: off (default 2048) */
	size_t fcache_bytes;          /**< small-file cache body bytes per worker (default 32 MiB) */
	unsigned fcache_watches;      /**< small-file cache inotify watches per worker, 0: derived (default) */
	unsigned fcache_open_files;   /**< open files the cache may keep per worker: not a
	                                   setting, derived from RLIMIT_NOFILE at start (default 16) */
	char *ssl_certificate;        /**< PEM certificate chain for ssl listeners, or NULL */
	char *ssl_certificate_key;    /**< PEM private key for ssl listeners, or NULL */
	bool ssl_session_tickets;     /**< TLS resumption by tickets (default on) */
	int ssl_line;                 /**< line of the first ssl listener (0: command line) */
	/** Where the file sets a key whose value is opened or looked up
	 *  later, for the messages of a failure there (0: not there). */
	int ssl_certificate_line, ssl_certificate_key_line;
	int root_line, user_line, group_line, mime_types_line;
	int error_log_line, access_log_line;
	enum conf_symlinks symlinks;  /**< (default beneath) */
	struct conf_allow *allow;     /**< nallow trees symlinks may lead into */
	size_t nallow;
	struct conf_listing listing;
	struct conf_dir *dirs;        /**< ndirs [dir] sections, longest path first after validate */
	size_t ndirs;
};

/** Receives one "file:line: message" (no newline). */
typedef void conf_err_fn(void *arg, const char *msg);

/** Fills @c with the built-in defaults (no listen address yet: the
 *  daemon adds 127.0.0.1:8080 when none is given). Returns 0 or -ENOMEM. */
int conf_init(struct conf *c);

/** Reads @path into @c (on top of what is there). Every problem is
 *  reported through @err as "path:line: message"; parsing continues
 *  after an error so that all of them are reported.
 *  Returns the number of errors (0: success), or -errno if the file
 *  cannot be opened (also reported through @err). */
int conf_load(struct conf *c, const char *path, conf_err_fn *err, void *arg);

/** Adds a listen address ("ADDR:PORT", "[V6]:PORT", ":PORT" or "PORT"),
 *  optionally followed by flags separated by blanks ("ssl", "status").
 *  Returns 0, -EINVAL for a malformed address, -ENOENT for an unknown
 *  flag, -ENOMEM. */
int conf_add_listen(struct conf *c, const char *text);

/** Adds a `status_listen` address: one that serves only the status
 *  endpoints. No flags. Returns as conf_add_listen(). */
int conf_add_status_listen(struct conf *c, const char *text);

/** Parses a listen value's address without storing it (flags after it
 *  are conf_add_listen's to check). Returns 0 or -EINVAL. */
int conf_parse_listen(const char *text, struct sockaddr_storage *ss,
                      socklen_t *len);

/** Replaces a string setting (copies @value). Returns 0 or -ENOMEM. */
int conf_set_str(char **slot, const char *value);

/** Checks cross-field rules (root set, group with user, both TLS
 *  files, listen addresses given once) and orders the [dir] sections.
 *  Problems go through @err as "file:line: message" ("file: message"
 *  when no line of the file applies). Returns the number of errors. */
int conf_validate(struct conf *c, conf_err_fn *err, void *arg);

/** Listing settings effective for URL path @path (decoded, normalised,
 *  starting with '/'): [listing] overridden by the longest matching
 *  [dir] prefix. The built-in defaults include [dir "/.well-known"]
 *  dotfiles = serve (RFC 8615: ACME challenges and the like), which a
 *  [dir "/.well-known"] section of the file overrides. */
void conf_listing_for(const struct conf *c, const char *path,
                      struct conf_listing *out);

/** Frees everything @c owns and zeroes it. */
void conf_free(struct conf *c);

#endif
