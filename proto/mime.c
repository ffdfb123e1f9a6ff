#include "first.h"

#include "proto/mime.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longer extensions than this are never looked up (nor stored). */
#define EXT_MAX 32

struct slot {
	char *ext;              /* lowercase, NUL-terminated; NULL = empty */
	const char *type;       /* one of m->types */
	bool builtin;
};

struct proto_mime {
	struct slot *slots;
	size_t cap, used;       /* cap is a power of two */
	char **types;           /* every type string ever made; freed last */
	size_t ntypes, captypes;
	char *deftype;
};

/* The common web types, so that a machine without /etc/mime.types (a
 * container) still serves a usable site. */
static const struct {
	const char *ext, *type;
} builtin[] = {
	{ "html", "text/html" }, { "htm", "text/html" },
	{ "css", "text/css" }, { "js", "text/javascript" },
	{ "mjs", "text/javascript" }, { "json", "application/json" },
	{ "map", "application/json" }, { "txt", "text/plain" },
	{ "text", "text/plain" }, { "log", "text/plain" },
	{ "md", "text/markdown" }, { "csv", "text/csv" },
	{ "xml", "application/xml" }, { "xhtml", "application/xhtml+xml" },
	{ "svg", "image/svg+xml" }, { "svgz", "image/svg+xml" },
	{ "png", "image/png" }, { "jpg", "image/jpeg" },
	{ "jpeg", "image/jpeg" }, { "gif", "image/gif" },
	{ "webp", "image/webp" }, { "avif", "image/avif" },
	{ "ico", "image/vnd.microsoft.icon" }, { "bmp", "image/bmp" },
	{ "tif", "image/tiff" }, { "tiff", "image/tiff" },
	{ "pdf", "application/pdf" }, { "wasm", "application/wasm" },
	{ "mp4", "video/mp4" }, { "m4v", "video/mp4" },
	{ "webm", "video/webm" }, { "ogv", "video/ogg" },
	{ "mp3", "audio/mpeg" }, { "m4a", "audio/mp4" },
	{ "ogg", "audio/ogg" }, { "oga", "audio/ogg" },
	{ "opus", "audio/ogg" }, { "wav", "audio/wav" },
	{ "flac", "audio/flac" },
	{ "zip", "application/zip" }, { "gz", "application/gzip" },
	{ "tgz", "application/gzip" }, { "tar", "application/x-tar" },
	{ "xz", "application/x-xz" }, { "zst", "application/zstd" },
	{ "bz2", "application/x-bzip2" }, { "7z", "application/x-7z-compressed" },
	{ "br", "application/x-brotli" },
	{ "woff", "font/woff" }, { "woff2", "font/woff2" },
	{ "ttf", "font/ttf" }, { "otf", "font/otf" },
	{ "webmanifest", "application/manifest+json" },
	{ "rss", "application/rss+xml" }, { "atom", "application/atom+xml" },
	{ "iso", "application/x-iso9660-image" },
	{ "deb", "application/vnd.debian.binary-package" },
	{ "sh", "text/x-sh" }, { "c", "text/x-c" }, { "h", "text/x-c" },
	{ "py", "text/x-python" },
};

/* Whether a type is text that we serve as UTF-8. JSON is left alone:
 * RFC 8259 defines no charset parameter (it is always UTF-8). */
static bool wants_charset(const char *t, size_t len)
{
	const char *slash = memchr(t, '/', len);
	size_t sl;

	if (memchr(t, ';', len) || !slash)
		return false;
	if (slash - t == 4 && !strncasecmp(t, "text", 4))
		return true;
	sl = len - (size_t)(slash + 1 - t);
	slash++;
#define SUB(s) (sl == sizeof(s) - 1 && !strncasecmp(slash, s, sl))
#define END(s) (sl >= sizeof(s) - 1 && !strncasecmp(slash + sl - (sizeof(s) - 1), s, sizeof(s) - 1))
	return SUB("javascript") || SUB("x-javascript") || SUB("ecmascript") ||
	       SUB("xml") || END("+xml");
#undef SUB
#undef END
}

/* Interns "type[; charset=utf-8]". Returns NULL on ENOMEM. */
static const char *make_type(struct proto_mime *m, const char *t, size_t len)
{
	static const char cs[] = "; charset=utf-8";
	bool add = wants_charset(t, len);
	char *s;

	if (m->ntypes == m->captypes) {
		size_t nc = m->captypes ? m->captypes * 2 : 64;
		char **p = realloc(m->types, nc * sizeof *p);

		if (!p)
			return NULL;
		m->types = p;
		m->captypes = nc;
	}
	s = malloc(len + (add ? sizeof cs : 1));
	if (!s)
		return NULL;
	memcpy(s, t, len);
	if (add)
		memcpy(s + len, cs, sizeof cs);
	else
		s[len] = 0;
	m->types[m->ntypes++] = s;
	return s;
}

static uint64_t hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* Lowercases ext into buf; false if it cannot be an extension. */
static bool lower(const char *ext, size_t len, char buf[EXT_MAX + 1])
{
	if (!len || len > EXT_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)ext[i];

		if (!c || c == '/')
			return false;
		buf[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	buf[len] = 0;
	return true;
}

static struct slot *find(const struct proto_mime *m, const char *lc, size_t len)
{
	size_t i = (size_t)hash(lc, len) & (m->cap - 1);

	while (m->slots[i].ext && strcmp(m->slots[i].ext, lc))
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

static int grow(struct proto_mime *m)
{
	struct slot *old = m->slots;
	size_t oc = m->cap, nc = oc ? oc * 2 : 256;

	m->slots = calloc(nc, sizeof *m->slots);
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = nc;
	for (size_t i = 0; i < oc; i++)
		if (old[i].ext)
			*find(m, old[i].ext, strlen(old[i].ext)) = old[i];
	free(old);
	return 0;
}

/* Maps ext to type. Returns 1 if stored, 0 if kept the old one. */
static int put(struct proto_mime *m, const char *ext, size_t len,
               const char *type, bool is_builtin)
{
	char lc[EXT_MAX + 1];
	struct slot *s;

	if (!lower(ext, len, lc))
		return 0;
	if ((m->used + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	s = find(m, lc, len);
	if (s->ext) {
		/* the file replaces a built-in; within the file the first
		 * mapping wins */
		if (s->builtin && !is_builtin) {
			s->type = type;
			s->builtin = false;
			return 1;
		}
		return 0;
	}
	s->ext = strdup(lc);
	if (!s->ext)
		return -ENOMEM;
	s->type = type;
	s->builtin = is_builtin;
	m->used++;
	return 1;
}

int proto_mime_new(struct proto_mime **out, const char *default_type)
{
	struct proto_mime *m = calloc(1, sizeof *m);

	*out = NULL;
	if (!m)
		return -ENOMEM;
	m->deftype = strdup(default_type ? default_type
	                                 : "application/octet-stream");
	if (!m->deftype || grow(m) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++) {
		const char *t = make_type(m, builtin[i].type,
		                          strlen(builtin[i].type));

		if (!t || put(m, builtin[i].ext, strlen(builtin[i].ext), t,
		              true) < 0)
			goto fail;
	}
	*out = m;
	return 0;
fail:
	proto_mime_free(m);
	return -ENOMEM;
}

static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

int proto_mime_load(struct proto_mime *m, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int added = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q, *t;
		const char *type = NULL;
		size_t tl;

		if (!eol)
			eol = end;
		q = p;
		while (q < eol && space(*q))
			q++;
		t = q;
		while (q < eol && !space(*q) && *q != '#')
			q++;
		tl = (size_t)(q - t);
		/* a type is "x/y" with no odd bytes; skip anything else */
		if (tl && tl < 128 && memchr(t, '/', tl) && *t != '#') {
			bool ok = true;

			for (size_t i = 0; i < tl; i++)
				if ((unsigned char)t[i] <= 0x20 || t[i] == 0x7f ||
				    t[i] == ';' || t[i] == '"')
					ok = false;
			while (ok && q < eol && *q != '#') {
				const char *e;

				while (q < eol && space(*q))
					q++;
				e = q;
				while (q < eol && !space(*q) && *q != '#')
					q++;
				if (q == e)
					break;
				if (!type) {
					type = make_type(m, t, tl);
					if (!type)
						return -ENOMEM;
				}
				int r = put(m, e, (size_t)(q - e), type, false);

				if (r < 0)
					return r;
				added += r;
			}
		}
		p = eol + 1;
	}
	return added;
}

const char *proto_mime_by_ext(const struct proto_mime *m, const char *ext,
                              size_t len)
{
	char lc[EXT_MAX + 1];
	const struct slot *s;

	if (!lower(ext, len, lc))
		return NULL;
	s = find(m, lc, len);
	return s->ext ? s->type : NULL;
}

const char *proto_mime_lookup(const struct proto_mime *m, const char *name,
                              size_t len)
{
	const char *base = name, *dot = NULL, *t;

	for (size_t i = 0; i < len; i++) {
		if (name[i] == '/') {
			base = name + i + 1;
			dot = NULL;
		} else if (name[i] == '.') {
			dot = name + i;
		}
	}
	if (!dot || dot == base)
		return m->deftype;
	t = proto_mime_by_ext(m, dot + 1, (size_t)(name + len - dot - 1));
	return t ? t : m->deftype;
}

void proto_mime_free(struct proto_mime *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].ext);
	for (size_t i = 0; i < m->ntypes; i++)
		free(m->types[i]);
	free(m->slots);
	free(m->types);
	free(m->deftype);
	free(m);
}
