#include "first.h"

#include "proto/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int proto_buf_reserve(struct proto_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX - b->len)
		return -EOVERFLOW;
	need = b->len + extra;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int proto_buf_append(struct proto_buf *b, const void *p, size_t n)
{
	int r;

	if (!n)
		return 0;
	r = proto_buf_reserve(b, n);
	if (r < 0)
		return r;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int proto_buf_puts(struct proto_buf *b, const char *s)
{
	return proto_buf_append(b, s, strlen(s));
}

int proto_buf_printf(struct proto_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	/* Try in the room there is; grow once if it did not fit. */
	va_start(ap, fmt);
	n = vsnprintf(b->data ? b->data + b->len : NULL,
	              b->data ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < (b->data ? b->cap - b->len : 0)) {
		b->len += (size_t)n;
		return 0;
	}
	r = proto_buf_reserve(b, (size_t)n + 1);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void proto_buf_free(struct proto_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
