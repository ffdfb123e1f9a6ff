/* libFuzzer harness: proto_reqcheck and proto_reqcheck_start. Input:
 * the target on the first line, then "name:value" lines; the method and
 * version come from the input's size. The whole input is also taken as
 * a connection's first bytes. */
#include "first.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/reqcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *nl;
	struct proto_reqcheck c;
	struct proto_verdict v;

	nl = memchr(p, '\n', size);
	if (!nl)
		nl = end;
	static const char *const methods[] = { "GET", "OPTIONS", "POST", "CONNECT" };
	const char *method = methods[size & 3];

	if (proto_reqcheck_start(p, size) != 0 && proto_reqcheck_start(p, size) != 1)
		abort();
	proto_reqcheck_begin(&c, method, size & 4 ? "HTTP/1.1" : "HTTP/1.0", p,
	                     (size_t)(nl - p), 64);
	p = nl < end ? nl + 1 : end;
	while (p < end) {
		const char *colon;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		colon = memchr(p, ':', (size_t)(nl - p));
		if (colon)
			proto_reqcheck_field(&c, p, (size_t)(colon - p), colon + 1,
			                     (size_t)(nl - colon - 1));
		p = nl < end ? nl + 1 : end;
	}
	v = proto_reqcheck_end(&c);
	if (!v.reason || (v.status != 0) != (v.reason[0] != 0))
		abort();
	switch (v.status) {
	case 0: case 400: case 411: case 413: case 414: case 417: case 501:
		break;
	case 405:       /* only for the methods not served */
		if (strcmp(method, "POST"))
			abort();
		break;
	default:
		abort();
	}
	/* a body never read always closes */
	if ((c.has_te || c.content_length > 0) && !v.close_connection)
		abort();
	if (!strcmp(method, "CONNECT") && v.status != 400 && v.status != 501 &&
	    v.status != 414 && v.status != 417)
		abort();
	return 0;
}
