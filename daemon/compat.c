#include "first.h"

#include "daemon/compat.h"
#include "daemon/daemon.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

int fsd_url_path(const char *t, char *out, size_t outsz)
{
	size_t o = 0;

	if (t[0] != '/')
		return -400;
	for (; *t && *t != '?' && *t != '#'; t++) {
		int ch = (unsigned char)*t;
		if (ch == '%') {
			int h = hexval((unsigned char)t[1]), l = h < 0 ? -1 : hexval((unsigned char)t[2]);
			if (l < 0)
				return -400;
			ch = h * 16 + l;
			if (!ch || ch == '/')
				return -400;
			t += 2;
		}
		if (o + 2 >= outsz)
			return -414;
		out[o++] = (char)ch;
		/* dot segments */
		if (ch == '/' || !t[1] || t[1] == '?' || t[1] == '#') {
			size_t end = o;
			if (out[end - 1] == '/')
				end--;
			size_t s = end;
			while (s && out[s - 1] != '/')
				s--;
			if (end - s == 1 && out[s] == '.')
				o = s;
			else if (end - s == 2 && out[s] == '.' && out[s + 1] == '.') {
				if (s <= 1)
					return -400;
				s--;
				while (s && out[s - 1] != '/')
					s--;
				o = s;
			} else if (end - s == 0 && ch == '/' && o >= 2 && out[o - 2] == '/')
				o--;
		}
	}
	if (!o)
		out[o++] = '/';
	out[o] = 0;
	return 0;
}

void fsd_httpdate(time_t t, char buf[32])
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, 32, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

void fsd_etag(const struct statx *st, const char *suffix, char buf[80])
{
	snprintf(buf, 80, "\"%llx-%llx-%llx%s\"", (unsigned long long)st->stx_ino,
	         (unsigned long long)st->stx_size,
	         (unsigned long long)st->stx_mtime.tv_sec * 1000000000ull + st->stx_mtime.tv_nsec,
	         suffix ? suffix : "");
}

static const struct { const char *ext, *type; } builtin[] = {
	{ "html", "text/html; charset=utf-8" }, { "htm", "text/html; charset=utf-8" },
	{ "txt", "text/plain; charset=utf-8" }, { "css", "text/css" },
	{ "js", "text/javascript" }, { "json", "application/json" },
	{ "png", "image/png" }, { "jpg", "image/jpeg" }, { "gif", "image/gif" },
	{ "svg", "image/svg+xml" }, { "pdf", "application/pdf" },
};

int fsd_mime_load(const char *path)
{
	(void)path;
	return 0;
}

const char *fsd_mime_type(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (dot && !strchr(dot, '/'))
		for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++)
			if (!strcasecmp(dot + 1, builtin[i].ext))
				return builtin[i].type;
	return fsd.conf.default_type;
}
