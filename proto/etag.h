/*
 * proto/etag.h: entity tags (RFC 9110 8.8.3). Pure, any thread.
 */
#ifndef PROTO_ETAG_H
#define PROTO_ETAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Quotes + 3 x 16 hex digits + 2 dashes + a suffix of <= 15 + NUL. */
#define PROTO_ETAG_MAX 72

/** What a file's ETag is made of. */
enum proto_etag_kind {
	/** inode, size and mtime in nanoseconds: changes when the file is
	 *  replaced even by one of the same size and time, but differs
	 *  between two copies of a file. */
	PROTO_ETAG_INODE = 0,
	/** mtime in seconds and size, nginx's "%x-%x": the same on every
	 *  copy that kept its mtime (cp -a, rsync -a), so that replicas
	 *  behind one name validate each other's tags. */
	PROTO_ETAG_MTIME_SIZE,
};

/**
 * Writes the strong ETag of a file, with its quotes. PROTO_ETAG_INODE:
 * "\"<ino hex>-<size hex>-<mtime ns hex>\"" (mtime ns = sec * 10^9 +
 * nsec, as unsigned 64-bit); it changes whenever the file is replaced
 * (inode), resized or written (mtime; nanoseconds, so two writes in one
 * second differ on filesystems that keep them). PROTO_ETAG_MTIME_SIZE:
 * "\"<mtime sec hex>-<size hex>\"" (a negative mtime as its 64-bit two's
 * complement); @ino and @mtime_nsec are not used, since copies need not
 * keep either, and two same-sized writes within one second share a tag,
 * as they share Last-Modified.
 * @suffix (NULL or up to 15 etagc bytes, e.g. "-br") is appended inside
 * the quotes: a different representation of the same file (a
 * precompressed sidecar) must carry a different strong tag.
 * Returns the length written (without the NUL), or -EINVAL for a bad
 * suffix or kind.
 */
int proto_etag_make(enum proto_etag_kind kind, uint64_t ino, uint64_t size,
                    int64_t mtime_sec, uint32_t mtime_nsec, const char *suffix,
                    char out[PROTO_ETAG_MAX]);

/**
 * Matches entity tag @etag (with quotes, strong; "W/..." is accepted
 * and is weak) against a header value that is "*" or a comma-separated
 * list of entity tags, with optional whitespace and empty elements
 * (RFC 9110 5.6.1). @weak selects the weak comparison (If-None-Match)
 * instead of the strong one (If-Match, If-Range): strong needs both
 * tags strong and equal; weak compares the opaque parts only.
 * "*" matches any current representation (@etag not NULL).
 * Returns 1 (match), 0 (no match), or -EINVAL when the list is not
 * syntactically valid; the caller decides what that means (cond.h
 * treats it as no match). @list need not be NUL-terminated.
 */
int proto_etag_match(const char *list, size_t len, const char *etag,
                     bool weak);

#endif
