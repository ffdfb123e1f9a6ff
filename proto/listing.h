/*
 * proto/listing.h: directory listings rendered piece by piece (begin,
 * one call per entry, end) into a caller's growable buffer, so a
 * listing can be streamed while the directory is still being read.
 * Formats: HTML (a page for people, sortable by clicking the column
 * headers: the links reload the page with ?sort=&order= and the server
 * sorts; no script), JSON and NDJSON (for programs).
 *
 * HTML layout: a header row of links (Name, Size, Last modified; Type),
 * a "../" row except at "/", then one `<div class=r>` per entry: the
 * name link (text HTML-escaped, href percent-encoded, "/" appended for
 * directories; symlinks add " -> target" when the caller gives one: the
 * daemon gives it only for a link that resolves beneath its root, so
 * that no path outside the root is ever shown), the size human-readable
 * with the exact byte count in its title, the mtime as "YYYY-MM-DD
 * HH:MM:SS" (UTC), the type word. Rows are grouped in blocks of 256
 * with content-visibility:auto: a browser lays out only the blocks on
 * screen, which keeps a 100,000-row page usable (a <table> of that
 * size was measured far slower in Chromium). Pure: no I/O; any thread; one
 * struct proto_listing per response.
 *
 * Every function returns 0 or -ENOMEM; on -ENOMEM the buffer holds
 * exactly what it held before the call (so the call can be retried).
 *
 * Escaping:
 *  - HTML: names are HTML-escaped (& < > " ') for display; hrefs are the
 *    raw bytes percent-encoded (url.h), so every name, whatever bytes it
 *    holds, links to itself. Invalid UTF-8 and control bytes display as
 *    U+FFFD (the page is utf-8; the link stays exact).
 *  - JSON/NDJSON: RFC 8259 strings: '"', '\\' and control bytes escaped
 *    (\n \t ... \u00XX). Valid UTF-8 passes through, so such names come
 *    back byte-exact from any JSON parser. Each byte that is not part of
 *    valid UTF-8 (overlong forms, surrogates, > U+10FFFF, stray
 *    continuation bytes) becomes \ufffd, and the entry then also carries
 *    "name_pct" (resp. "target_pct"; "path_pct" for the document's
 *    path): the exact bytes, percent-encoded as in an href, from which
 *    the name can be recovered.
 *
 * JSON shape (one document):
 *   {"path":"/dir/","entries":[
 *   {"name":"a","type":"file","size":3,"mtime":1700000000,
 *    "mtime_ns":123456789,"mode":33188},
 *   {"name":"l","type":"symlink",...,"target":"a"}
 *   ],"next":null}
 * "next" is the cursor for ?after= (the name to continue after) or null.
 * type is one of file dir symlink char block fifo socket unknown; mode is
 * the st_mode as given (type and permission bits), mtime seconds since
 * the epoch (UTC), mtime_ns the nanoseconds within that second.
 * NDJSON: the same entry objects, one per line ("\n" after each), no
 * header and no footer (the next cursor travels in the Link header).
 */
#ifndef PROTO_LISTING_H
#define PROTO_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/url.h"

enum proto_ftype {
	PROTO_FT_UNKNOWN = 0,
	PROTO_FT_REG,
	PROTO_FT_DIR,
	PROTO_FT_LNK,
	PROTO_FT_CHR,
	PROTO_FT_BLK,
	PROTO_FT_FIFO,
	PROTO_FT_SOCK,
};

/** One directory entry, as the caller learned it. Only read during the
 *  call. @name need not be NUL-terminated. */
struct proto_entry {
	const char *name;
	size_t namelen;
	enum proto_ftype type;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t mode;           /* st_mode */
	const char *target;      /* symlink target to show, NULL for none */
	size_t targetlen;
};

/** Per-response state. Set the public fields, then call begin. */
struct proto_listing {
	enum proto_list_format format;   /* DEFAULT means HTML */
	/* The decoded URL path of the directory, ending in '/' ("/a b/"):
	 * the page title and "path". Must stay valid until end. */
	const char *path;
	size_t pathlen;
	/* The order the entries come in (marks the HTML column headers and
	 * makes their links toggle asc/desc). */
	enum proto_list_sort sort;
	bool desc;
	bool dirs_first;         /* kept in the HTML column-header links */
	/* limit=N to keep in the HTML column-header and next-page links
	 * (0: none); pages exist only in name order without dirs_first, so
	 * the other columns' links drop it. */
	unsigned long long limit;
	/* private */
	unsigned long long proto__count;
	bool proto__dated;       /* proto__date holds the date of proto__day */
	int64_t proto__day;
	char proto__date[10];
};

/** Starts the document (HTML head, header row, parent link unless
 *  path is "/"; JSON '{"path":...,"entries":['; nothing for NDJSON). */
int proto_listing_begin(struct proto_listing *l, struct proto_buf *b);

/** Appends one entry (an HTML row, or an object with the comma
 *  handled). Directories get a trailing '/' in the HTML name and href. */
int proto_listing_entry(struct proto_listing *l, struct proto_buf *b,
                        const struct proto_entry *e);

/**
 * Ends the document. @next (@nextlen bytes) is the pagination cursor
 * (the last name of this page) when there are more entries, else NULL:
 * JSON "next", and in HTML a "next page" link to
 * ?sort=..&order=..&limit=..&after=<encoded cursor>.
 */
int proto_listing_end(struct proto_listing *l, struct proto_buf *b,
                      const char *next, size_t nextlen);

/**
 * Appends the URL of the next page, for a "Link: <URL>; rel=\"next\""
 * header (RFC 8288): the directory's path percent-encoded, then
 * "?sort=S&order=O[&limit=N]&after=CURSOR" with the cursor (@next,
 * @nextlen bytes) percent-encoded; format=json/ndjson is kept. Plain
 * ASCII, no HTML escaping. 0 or -ENOMEM (buffer unchanged).
 */
int proto_listing_next_url(const struct proto_listing *l, struct proto_buf *b,
                           const char *next, size_t nextlen);

/** The Content-Type for a format ("text/html; charset=utf-8",
 *  "application/json", "application/x-ndjson"). */
const char *proto_listing_content_type(enum proto_list_format f);

/** What a whole listing of @entries rows, whose names total
 *  @name_bytes, takes in @l's format in the common case (names that
 *  need no escape, sizes below a gigabyte): a size to reserve at once,
 *  not a bound. */
size_t proto_listing_size_hint(const struct proto_listing *l, size_t entries,
                               size_t name_bytes);

/**
 * Chooses a format from an Accept header value (NULL: absent) when the
 * query named none: the one whose media type (text/html,
 * application/json, application/x-ndjson or application/ndjson) Accept
 * weighs highest, @dflt (the configured default_format; DEFAULT means
 * HTML) on a tie and when none is acceptable.
 */
enum proto_list_format proto_listing_negotiate(const char *accept,
                                               enum proto_list_format dflt);

/** Whether a '/'-separated path (@len bytes, relative or absolute)
 *  names something hidden: one of its components starts with '.' and
 *  is neither "." nor "..". */
bool proto_path_hidden(const char *path, size_t len);

/* JSON and HTML escaping helpers (appending; 0 or -ENOMEM). */
/** Appends @s as a JSON string with its quotes. *invalid is set true
 *  when an invalid UTF-8 byte was replaced (may be NULL). */
int proto_json_string(struct proto_buf *b, const char *s, size_t len,
                      bool *invalid);
/** Appends @s HTML-escaped (text or attribute value), invalid UTF-8 and
 *  control bytes as U+FFFD. */
int proto_html_escape(struct proto_buf *b, const char *s, size_t len);

#endif
