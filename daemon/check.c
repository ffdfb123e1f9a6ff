#include "first.h"

#include "daemon/check.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void fail(struct fsd_check *c, unsigned status, bool close)
{
	if (!c->status)
		c->status = status;
	c->close |= close;
}

void fsd_check_begin(struct fsd_check *c, const char *method,
                     const char *version, const char *target)
{
	(void)method;
	memset(c, 0, sizeof *c);
	c->version = version;
	c->cl = -1;
	if (!target || (target[0] != '/' && strcmp(target, "*")))
		fail(c, 400, false);
}

static bool tchar(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
	       (ch >= 'A' && ch <= 'Z') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

void fsd_check_field(struct fsd_check *c, const char *name, size_t nlen,
                     const char *value, size_t vlen)
{
	if (!nlen)
		fail(c, 400, true);
	for (size_t i = 0; i < nlen; i++)
		if (!tchar((unsigned char)name[i]))
			fail(c, 400, true);
	for (size_t i = 0; i < vlen; i++) {
		unsigned char ch = (unsigned char)value[i];
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			fail(c, 400, true);
	}
	if (!strcasecmp(name, "Host")) {
		if (++c->hosts > 1)
			fail(c, 400, false);
		for (size_t i = 0; i < vlen; i++)
			if (strchr(" \t/\\@?#", value[i]))
				fail(c, 400, false);
	} else if (!strcasecmp(name, "Content-Length")) {
		char *end;
		long long v = strtoll(value, &end, 10);
		c->cls++;
		if (!vlen || *end || v < 0 || (c->cl >= 0 && c->cl != v))
			fail(c, 400, true);
		c->cl = v;
		if (v > 0)
			fail(c, 400, true);     /* no body on a GET/HEAD server */
	} else if (!strcasecmp(name, "Transfer-Encoding")) {
		fail(c, 400, true);
	} else if (!strcasecmp(name, "Expect")) {
		if (strcasecmp(value, "100-continue"))
			fail(c, 417, false);
	}
}

int fsd_check_end(struct fsd_check *c, bool *close)
{
	if (!c->hosts && c->version && !strcmp(c->version, "HTTP/1.1"))
		fail(c, 400, false);
	*close = c->close;
	return (int)c->status;
}
