#include "first.h"

#include "proto/errpage.h"

#include <stdio.h>

/* Built at compile time so the bodies are static (MHD may keep a
 * pointer to them for as long as it likes). */
#define PAGE(code, reason, text) \
	"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" code " " \
	reason "</title></head>\n<body><h1>" code " " reason "</h1>\n<p>" text \
	"</p></body></html>\n"

static const struct {
	unsigned status;
	const char *body;
	size_t len;
} pages[] = {
#define P(c, r, t) { c, PAGE(#c, r, t), sizeof(PAGE(#c, r, t)) - 1 }
	P(301, "Moved Permanently", "This resource has moved to the address in the Location header."),
	P(400, "Bad Request", "The request could not be understood."),
	P(403, "Forbidden", "You do not have access to this resource."),
	P(404, "Not Found", "The requested resource was not found."),
	P(405, "Method Not Allowed", "This method is not allowed here."),
	P(412, "Precondition Failed", "A precondition of the request failed."),
	P(413, "Content Too Large", "This server does not accept request bodies."),
	P(414, "URI Too Long", "The request target is too long."),
	P(416, "Range Not Satisfiable", "The requested range is not available."),
	P(417, "Expectation Failed", "The expectation cannot be met."),
	P(431, "Request Header Fields Too Large", "The request headers are too large."),
	P(500, "Internal Server Error", "The server failed to handle the request."),
	P(501, "Not Implemented", "The server does not support this request."),
	P(503, "Service Unavailable", "The server is busy; please retry later."),
	P(505, "HTTP Version Not Supported", "This HTTP version is not supported."),
#undef P
};

const char *proto_errpage(unsigned status, size_t *len)
{
	/* One generic page per unknown status, formatted lazily would need
	 * state; a fixed generic body keeps this function pure. */
	static const char generic4[] = PAGE("4xx", "Client Error",
	                                    "The request could not be served.");
	static const char generic5[] = PAGE("5xx", "Server Error",
	                                    "The server could not serve the request.");

	for (size_t i = 0; i < sizeof pages / sizeof *pages; i++)
		if (pages[i].status == status) {
			*len = pages[i].len;
			return pages[i].body;
		}
	if (status >= 500) {
		*len = sizeof generic5 - 1;
		return generic5;
	}
	*len = sizeof generic4 - 1;
	return generic4;
}
