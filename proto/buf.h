/*
 * proto/buf.h: a growable byte buffer that the renderers append to.
 *
 * The caller owns the struct and its memory (data is malloc'd; free it
 * with proto_buf_free or take it over). A zeroed struct is an empty
 * buffer. Appending never truncates: on allocation failure the buffer
 * is left exactly as it was and -ENOMEM is returned, so a streaming
 * caller can retry later or fail the response. data is not
 * NUL-terminated unless a function says so. Not thread-safe; one buffer
 * belongs to one thread at a time. No I/O.
 */
#ifndef PROTO_BUF_H
#define PROTO_BUF_H

#include <stddef.h>

struct proto_buf {
	char *data;
	size_t len;     /* bytes used */
	size_t cap;     /* bytes allocated */
};

/** Makes room for @extra more bytes. 0 or -ENOMEM (or -EOVERFLOW). */
int proto_buf_reserve(struct proto_buf *b, size_t extra);
/** Appends @n bytes. 0 or -ENOMEM. */
int proto_buf_append(struct proto_buf *b, const void *p, size_t n);
/** Appends a NUL-terminated string (without its NUL). 0 or -ENOMEM. */
int proto_buf_puts(struct proto_buf *b, const char *s);
/** printf-style append (without a NUL). 0, -ENOMEM or -EINVAL. */
int proto_buf_printf(struct proto_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/** Frees data and zeroes the struct. */
void proto_buf_free(struct proto_buf *b);

#endif
