/* libFuzzer harness: proto_httpdate_parse; what parses formats back to
 * a date that parses to the same time. */
#include "first.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/httpdate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	time_t t, t2;
	char b[PROTO_HTTPDATE_LEN];

	if (proto_httpdate_parse((const char *)data, size, 1796256000, &t))
		return 0;
	if (proto_httpdate_format(t, b) == 29 &&
	    (proto_httpdate_parse(b, 29, 0, &t2) || t2 != t))
		abort();
	return 0;
}
