/* libFuzzer harness: proto_range_parse and the multipart helpers.
 * First 8 bytes: the representation size; the rest: the header. */
#include "first.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/range.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_range r[8];
	uint64_t len = 0;
	unsigned n = 99;
	enum proto_range_result res;

	if (size < 8)
		return 0;
	memcpy(&len, data, 8);
	if (data[0] & 1)
		len &= 0xffff;          /* small sizes often */
	res = proto_range_parse((const char *)data + 8, size - 8, len, r, 8, &n);
	if (res != PROTO_RANGE_OK) {
		if (n != 0)
			abort();
		return 0;
	}
	if (n < 1 || n > 8)
		abort();
	for (unsigned i = 0; i < n; i++) {
		if (r[i].first > r[i].last || r[i].last >= len)
			abort();
		/* sorted, disjoint and not touching (coalesced) */
		if (i && r[i].first <= r[i - 1].last + 1)
			abort();
	}
	char b[PROTO_BOUNDARY_MAX], h[256];
	uint64_t total = 0;
	proto_multipart_boundary(len, b);
	for (unsigned i = 0; i < n; i++)
		total += proto_multipart_part_header(h, sizeof h, b, "a/b", &r[i], len) +
		         r[i].last - r[i].first + 1;
	total += proto_multipart_trailer(h, sizeof h, b);
	if (total != proto_multipart_length(b, "a/b", r, n, len))
		abort();
	return 0;
}
