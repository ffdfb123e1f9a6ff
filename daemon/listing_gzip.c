#include "first.h"

/*
 * Streaming gzip of a listing (zlib, RFC 1952 framing by deflateInit2
 * with windowBits 15 + 16). Level 1: a listing is repetitive markup that
 * compresses about 8x even at the fastest level, and the compressor runs
 * on the worker's loop thread, so speed matters more than the last few
 * percent (a 100,000-row HTML page is ~15 MB before compression).
 */

#include "daemon/listing_int.h"

#include <errno.h>
#include <stdlib.h>

#define LST_GZ_LEVEL 1

int lst_gz_init(struct lst_gz *g)
{
	g->z = calloc(1, sizeof *g->z);
	if (!g->z)
		return -ENOMEM;
	if (deflateInit2(g->z, LST_GZ_LEVEL, Z_DEFLATED, 15 + 16, 8,
	                 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g->z);
		g->z = NULL;
		return -ENOMEM;
	}
	return 0;
}

int lst_gz_run(struct lst_gz *g, struct proto_buf *in, struct proto_buf *out,
               int flush)
{
	z_stream *z = g->z;
	int zr;

	z->next_in = (Bytef *)in->data;
	z->avail_in = (uInt)in->len;
	for (;;) {
		/* Room for everything at once in the common case. */
		size_t want = deflateBound(z, z->avail_in) + 64;
		if (out->cap - out->len < want && proto_buf_reserve(out, want) < 0)
			return -ENOMEM;
		z->next_out = (Bytef *)out->data + out->len;
		z->avail_out = (uInt)(out->cap - out->len);
		zr = deflate(z, flush);
		out->len = out->cap - z->avail_out;
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		if (flush == Z_FINISH ? zr == Z_STREAM_END
		                      : (z->avail_in == 0 && z->avail_out > 0))
			break;
	}
	in->len = 0;
	return 0;
}

void lst_gz_end(struct lst_gz *g)
{
	if (g->z) {
		deflateEnd(g->z);
		free(g->z);
	}
	g->z = NULL;
}
