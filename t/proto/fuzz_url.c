/* libFuzzer harness: proto_url_parse and the query helpers.
 * Build: make fuzz-proto (needs clang); run: t/proto/fuzz_url -max_total_time=60 */
#include "first.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[4096 + 2], dec[3 * 4096 + 2], enc[3 * 4096 + 1];
	struct proto_target t;
	struct proto_listq q;

	if (size > 4096)
		return 0;
	if (proto_url_parse((const char *)data, size, buf, sizeof buf, &t) == 0) {
		/* the invariants the lookup relies on */
		if (t.path[0] != '/' || strlen(t.path) != t.pathlen ||
		    strstr(t.path, "//") || strstr(t.path, "/./") ||
		    strstr(t.path, "/../") ||
		    (t.pathlen >= 2 && !strcmp(t.path + t.pathlen - 2, "/.")) ||
		    (t.pathlen >= 3 && !strcmp(t.path + t.pathlen - 3, "/..")) ||
		    t.trailing_slash != (t.path[t.pathlen - 1] == '/'))
			abort();
		if (t.query) {
			char v[64];

			if (strlen(t.query) != t.querylen)
				abort();
			proto_query_get(t.query, t.querylen, "after", v, sizeof v);
			proto_listq_parse(t.query, t.querylen, dec, sizeof dec, &q);
		}
		/* re-encoding the path and parsing it again is the identity */
		size_t n = proto_url_encode(t.path, t.pathlen, enc, sizeof enc,
		                            PROTO_ENC_KEEP_SLASH);
		struct proto_target t2;
		if (n >= sizeof enc ||
		    proto_url_parse(enc, n, dec, sizeof dec, &t2) != 0 ||
		    t2.pathlen != t.pathlen || memcmp(t2.path, t.path, t.pathlen))
			abort();
	}
	/* arbitrary bytes through the query parser as well */
	proto_listq_parse((const char *)data, size, dec, sizeof dec, &q);
	return 0;
}
