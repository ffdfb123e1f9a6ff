#include "first.h"

#include "conf/conf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* State of one conf_load(): libinih does not pass line numbers to the
 * handler in Debian's build (INI_HANDLER_LINENO 0), so our own reader
 * counts lines and checks syntax before inih sees a line. */
struct load {
	struct conf *c;
	const char *path;
	FILE *f;
	int line;
	int errors;
	bool indented;          /* the line being parsed starts with blanks */
	char last_key[64];      /* the key of this section's last name=value */
	conf_err_fn *err;
	void *arg;
	char section[128];      /* last section seen, for [dir] bookkeeping */
	struct conf_dir *dir;   /* current [dir] section, or NULL */
};

static void report(struct load *ld, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(struct load *ld, int line, const char *fmt, ...)
{
	char msg[512], full[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(full, sizeof full, "%s:%d: %s", ld->path, line, msg);
	else
		snprintf(full, sizeof full, "%s: %s", ld->path, msg);
	ld->errors++;
	if (ld->err)
		ld->err(ld->arg, full);
}

int conf_set_str(char **slot, const char *value)
{
	char *s = strdup(value);

	if (!s)
		return -ENOMEM;
	free(*slot);
	*slot = s;
	return 0;
}

/* /.well-known (RFC 8615) holds files other parties fetch by name
 * (ACME http-01 challenges, security.txt): served, though hidden from
 * listings, while dotfiles are off elsewhere. */
static int add_builtin_dirs(struct conf *c)
{
	c->dirs = calloc(1, sizeof *c->dirs);
	if (!c->dirs || !(c->dirs[0].path = strdup("/.well-known")))
		return -ENOMEM;
	c->dirs[0].listing = -1;
	c->dirs[0].dotfiles = CONF_DOT_SERVE;
	c->ndirs = 1;
	return 0;
}

int conf_init(struct conf *c)
{
	memset(c, 0, sizeof *c);
	c->workers = 1;
	c->log_level = CONF_LOG_NOTICE;
	c->sidecars = true;
	c->etag = PROTO_ETAG_INODE;
	c->max_ranges = 16;
	c->request_timeout = 30;
	c->connection_timeout = 60;
	c->max_connections = 4096;
	c->max_connections_per_ip = 256;
	c->header_timeout = 10;
	c->shutdown_timeout = 30;
	c->min_send_rate = 1024;
	c->max_listings = 8;
	c->listing_queue = 64;
	c->listing_queue_timeout = 10;
	c->listing_cache_bytes = 64u << 20;
	c->small_file_max = 65536;
	c->request_header_max = 8192;
	c->fcache_entries = 2048;
	c->fcache_bytes = 32u << 20;
	c->listing.enabled = true;
	c->listing.dotfiles = CONF_DOT_OFF;
	c->listing.symlink_targets = CONF_TARGETS_BENEATH;
	c->listing.format = PROTO_FMT_HTML;
	c->listing.sort = PROTO_SORT_NAME;
	c->listing.window = 256;
	c->listing.local_window = 4096;
	c->listing.attrs_from_lookup = true;
	c->listing.background = true;
	if (conf_set_str(&c->root, ".") || conf_set_str(&c->error_log, "-") ||
	    conf_set_str(&c->index, "index.html") ||
	    conf_set_str(&c->mime_types, "/etc/mime.types") ||
	    conf_set_str(&c->default_type, "application/octet-stream") ||
	    add_builtin_dirs(c) < 0) {
		conf_free(c);
		return -ENOMEM;
	}
	return 0;
}

void conf_free(struct conf *c)
{
	for (size_t i = 0; i < c->nlisten; i++)
		free(c->listen[i].text);
	free(c->listen);
	for (size_t i = 0; i < c->ndirs; i++)
		free(c->dirs[i].path);
	free(c->dirs);
	for (size_t i = 0; i < c->nallow; i++)
		free(c->allow[i].path);
	free(c->allow);
	free(c->root);
	free(c->user);
	free(c->group);
	free(c->access_log);
	free(c->error_log);
	free(c->index);
	free(c->mime_types);
	free(c->default_type);
	free(c->ssl_certificate);
	free(c->ssl_certificate_key);
	memset(c, 0, sizeof *c);
}

static int parse_port(const char *s, in_port_t *out)
{
	char *end;
	long v;

	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 65535)
		return -EINVAL;
	*out = htons((in_port_t)v);
	return 0;
}

static int parse_addr(const char *text, struct sockaddr_storage *ss,
                      socklen_t *len);

/* The address is what comes before the first blank: flags follow it. */
int conf_parse_listen(const char *text, struct sockaddr_storage *ss,
                      socklen_t *len)
{
	char addr[INET6_ADDRSTRLEN + 16];
	size_t n = strcspn(text, " \t");

	if (n >= sizeof addr)
		return -EINVAL;
	memcpy(addr, text, n);
	addr[n] = 0;
	return parse_addr(addr, ss, len);
}

static int parse_addr(const char *text, struct sockaddr_storage *ss,
                      socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *port;
	in_port_t p;

	memset(ss, 0, sizeof *ss);
	if (text[0] == '[') {
		const char *rb = strchr(text, ']');
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (!rb || rb[1] != ':' || (size_t)(rb - text - 1) >= sizeof host)
			return -EINVAL;
		memcpy(host, text + 1, (size_t)(rb - text - 1));
		host[rb - text - 1] = 0;
		if (parse_port(rb + 2, &p) < 0 ||
		    inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = p;
		*len = sizeof *s6;
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	colon = strrchr(text, ':');
	if (!colon) {
		host[0] = 0;
		port = text;
	} else {
		if ((size_t)(colon - text) >= sizeof host)
			return -EINVAL;
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = 0;
		port = colon + 1;
	}
	if (parse_port(port, &p) < 0)
		return -EINVAL;
	s4->sin_family = AF_INET;
	s4->sin_port = p;
	if (!host[0] || !strcmp(host, "*"))
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (!strcmp(host, "localhost"))
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	*len = sizeof *s4;
	return 0;
}

/* One flag of a listen value; false for an unknown word. */
static bool listen_flag(struct conf_listen *l, const char *word, size_t len)
{
	if (len == 3 && !memcmp(word, "ssl", 3))
		l->ssl = true;      /* nginx's way: "0.0.0.0:443 ssl" */
	else if (len == 6 && !memcmp(word, "status", 6))
		l->status = true;
	else
		return false;
	return true;
}

static int add_listen(struct conf *c, const char *text, bool status_only)
{
	struct conf_listen *l, nl = { .status = status_only, .status_only = status_only };
	size_t alen = strcspn(text, " \t");
	const char *p = text + alen;

	if (status_only && p[strspn(p, " \t")])
		return -EINVAL;
	while (*p) {
		size_t n;
		p += strspn(p, " \t");
		n = strcspn(p, " \t");
		if (n && !listen_flag(&nl, p, n))
			return -ENOENT;
		p += n;
	}
	nl.text = strndup(text, alen);
	if (!nl.text)
		return -ENOMEM;
	if (conf_parse_listen(text, &nl.addr, &nl.addrlen) < 0) {
		free(nl.text);
		return -EINVAL;
	}
	l = realloc(c->listen, (c->nlisten + 1) * sizeof *l);
	if (!l) {
		free(nl.text);
		return -ENOMEM;
	}
	c->listen = l;
	l[c->nlisten++] = nl;
	return 0;
}

int conf_add_listen(struct conf *c, const char *text)
{
	return add_listen(c, text, false);
}

int conf_add_status_listen(struct conf *c, const char *text)
{
	return add_listen(c, text, true);
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = true, 0;
		if (!strcasecmp(v, no[i]))
			return *out = false, 0;
	}
	return -EINVAL;
}

/* Unsigned integer in [lo, hi] with an optional k/m/g suffix if @sized. */
static int parse_uint(const char *v, unsigned long long lo,
                      unsigned long long hi, bool sized,
                      unsigned long long *out)
{
	unsigned long long n;
	char *end;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno)
		return -EINVAL;
	if (sized && *end) {
		unsigned shift = 0;
		switch (tolower((unsigned char)*end)) {
		case 'k': shift = 10; break;
		case 'm': shift = 20; break;
		case 'g': shift = 30; break;
		default: return -EINVAL;
		}
		if (n > (ULLONG_MAX >> shift))
			return -EINVAL;
		n <<= shift;
		end++;
	}
	if (*end || n < lo || n > hi)
		return -EINVAL;
	*out = n;
	return 0;
}

static const char *const levels[] = {
	[CONF_LOG_ERR] = "error", [CONF_LOG_WARNING] = "warning",
	[CONF_LOG_NOTICE] = "notice", [CONF_LOG_INFO] = "info",
	[CONF_LOG_DEBUG] = "debug",
};

static int pick(const char *v, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcasecmp(v, names[i]))
			return i;
	return -1;
}

/* In the order of enum proto_list_format, from PROTO_FMT_HTML. */
static const char *const formats[] = { "html", "json", "ndjson" };

/* off | serve | list; the boolean words of older files still mean off
 * and list. */
static int parse_dotfiles(const char *v)
{
	bool b;

	if (!strcasecmp(v, "serve"))
		return CONF_DOT_SERVE;
	if (!strcasecmp(v, "list"))
		return CONF_DOT_LIST;
	if (parse_bool(v, &b) == 0)
		return b ? CONF_DOT_LIST : CONF_DOT_OFF;
	return -1;
}
/* In the order of enum proto_list_sort, from PROTO_SORT_NAME. */
static const char *const sorts[] = { "name", "size", "mtime", "none" };

#define BAD(...) do { report(ld, ld->line, __VA_ARGS__); return 1; } while (0)
#define OOM() BAD("out of memory")

static int set_uint(struct load *ld, const char *name, const char *v,
                    unsigned long long lo, unsigned long long hi,
                    bool sized, unsigned long long *out)
{
	if (parse_uint(v, lo, hi, sized, out) < 0) {
		report(ld, ld->line, "%s: expected a number from %llu to %llu%s, got '%s'",
		       name, lo, hi, sized ? " (k/m/g suffix allowed)" : "", v);
		return -1;
	}
	return 0;
}

static int set_bool(struct load *ld, const char *name, const char *v, bool *out)
{
	if (parse_bool(v, out) < 0) {
		report(ld, ld->line, "%s: expected on or off, got '%s'", name, v);
		return -1;
	}
	return 0;
}

static int listing_key(struct load *ld, struct conf_listing *l,
                       const char *name, const char *v)
{
	unsigned long long n;
	int i;

	if (!strcmp(name, "enabled"))
		set_bool(ld, name, v, &l->enabled);
	else if (!strcmp(name, "dotfiles")) {
		if ((i = parse_dotfiles(v)) < 0)
			BAD("dotfiles: expected off, serve or list, got '%s'", v);
		l->dotfiles = (enum conf_dotfiles)i;
	} else if (!strcmp(name, "symlink_targets")) {
		if (!strcasecmp(v, "beneath"))
			l->symlink_targets = CONF_TARGETS_BENEATH;
		else if (!strcasecmp(v, "off"))
			l->symlink_targets = CONF_TARGETS_OFF;
		else
			BAD("symlink_targets: expected beneath or off, got '%s'", v);
	}
	else if (!strcmp(name, "attrs_from_lookup"))
		set_bool(ld, name, v, &l->attrs_from_lookup);
	else if (!strcmp(name, "background"))
		set_bool(ld, name, v, &l->background);
	else if (!strcmp(name, "default_format")) {
		if ((i = pick(v, formats, 3)) < 0)
			BAD("default_format: expected html, json or ndjson, got '%s'", v);
		l->format = (enum proto_list_format)(PROTO_FMT_HTML + i);
	} else if (!strcmp(name, "default_sort")) {
		if ((i = pick(v, sorts, 4)) < 0)
			BAD("default_sort: expected name, size, mtime or none, got '%s'", v);
		l->sort = (enum proto_list_sort)(PROTO_SORT_NAME + i);
	} else if (!strcmp(name, "window")) {
		if (!set_uint(ld, name, v, 1, 65536, false, &n))
			l->window = (unsigned)n;
	} else if (!strcmp(name, "local_window")) {
		if (!set_uint(ld, name, v, 1, 4096, false, &n))
			l->local_window = (unsigned)n;
	} else
		BAD("unknown key '%s' in [listing]", name);
	return 1;
}

static char *norm_dir(const char *p);

/* In the order of enum conf_symlinks. */
static const char *const link_policies[] = { "beneath", "follow", "if_owner_match", "never" };

/* One allow path (@n bytes at @p), absolute, kept normalised. */
static int add_allow(struct load *ld, const char *p, size_t n)
{
	struct conf *c = ld->c;
	char buf[4096];
	struct conf_allow *a;

	if (n >= sizeof buf || p[0] != '/') {
		report(ld, ld->line, "allow: expected an absolute directory path, got '%.*s'",
		       (int)(n > 200 ? 200 : n), p);
		return -1;
	}
	memcpy(buf, p, n);
	buf[n] = 0;
	char *norm = norm_dir(buf);
	if (!norm) {
		report(ld, ld->line, "allow: '%s': '.' and '..' segments are not allowed", buf);
		return -1;
	}
	a = realloc(c->allow, (c->nallow + 1) * sizeof *a);
	if (!a) {
		free(norm);
		report(ld, ld->line, "out of memory");
		return -1;
	}
	c->allow = a;
	c->allow[c->nallow++] = (struct conf_allow){ .path = norm, .line = ld->line };
	return 0;
}

/* allow = PATH [PATH...]: separated by blanks, each may be quoted
 * ("/mnt/my data"); the key may be repeated. */
static void allow_key(struct load *ld, const char *v)
{
	if (!*v) {
		report(ld, ld->line, "allow: empty value");
		return;
	}
	while (*v) {
		const char *p, *end;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!*v)
			break;
		if (*v == '"') {
			p = v + 1;
			end = strchr(p, '"');
			if (!end) {
				report(ld, ld->line, "allow: unterminated quote in '%s'", v);
				return;
			}
			v = end + 1;
		} else {
			p = v;
			end = p + strcspn(p, " \t");
			v = end;
		}
		if (add_allow(ld, p, (size_t)(end - p)) < 0)
			return;
	}
}

/* listen, status_listen */
static int listen_key(struct load *ld, const char *name, const char *v)
{
	bool st = name[0] == 's';
	int r = st ? conf_add_status_listen(ld->c, v) : conf_add_listen(ld->c, v);

	if (r == -ENOMEM)
		OOM();
	if (r == -ENOENT)
		BAD("listen: unknown flag in '%s' (known: ssl, status)", v);
	if (r < 0)
		BAD("%s: expected ADDR:PORT, [IPV6]:PORT or PORT%s, got '%s'",
		    name, st ? "" : " [ssl] [status]", v);
	if (ld->c->listen[ld->c->nlisten - 1].ssl && !ld->c->ssl_line)
		ld->c->ssl_line = ld->line;
	return 1;
}

static int server_key(struct load *ld, const char *name, const char *v)
{
	struct conf *c = ld->c;
	unsigned long long n;
	int i;

#define STR(key, slot) \
	if (!strcmp(name, key)) { \
		if (!*v) BAD("%s: empty value", key); \
		if (conf_set_str(&c->slot, v)) OOM(); \
		return 1; \
	}
#define UINT(key, slot, lo, hi, sized) \
	if (!strcmp(name, key)) { \
		if (!set_uint(ld, key, v, lo, hi, sized, &n)) c->slot = n; \
		return 1; \
	}

	if (!strcmp(name, "listen") || !strcmp(name, "status_listen"))
		return listen_key(ld, name, v);
	STR("root", root)
	STR("user", user)
	STR("group", group)
	STR("error_log", error_log)
	STR("mime_types", mime_types)
	STR("default_type", default_type)
	STR("ssl_certificate", ssl_certificate)
	STR("ssl_certificate_key", ssl_certificate_key)
	if (!strcmp(name, "access_log")) {
		if (!*v)
			BAD("access_log: empty value (use off)");
		if (!strcmp(v, "off")) {
			free(c->access_log);
			c->access_log = NULL;
		} else if (conf_set_str(&c->access_log, v))
			OOM();
		return 1;
	}
	if (!strcmp(name, "index")) {
		if (strchr(v, '/'))
			BAD("index: a file name without '/', got '%s'", v);
		if (conf_set_str(&c->index, strcmp(v, "off") ? v : ""))
			OOM();
		return 1;
	}
	if (!strcmp(name, "log_level")) {
		if ((i = pick(v, levels, CONF_LOG_DEBUG + 1)) < 0)
			BAD("log_level: expected error, warning, notice, info or debug, got '%s'", v);
		c->log_level = i;
		return 1;
	}
	if (!strcmp(name, "symlinks")) {
		if ((i = pick(v, link_policies, 4)) < 0)
			BAD("symlinks: expected beneath, follow, if_owner_match or never, got '%s'", v);
		c->symlinks = (enum conf_symlinks)i;
		return 1;
	}
	if (!strcmp(name, "allow")) {
		allow_key(ld, v);
		return 1;
	}
	if (!strcmp(name, "sidecars")) {
		set_bool(ld, name, v, &c->sidecars);
		return 1;
	}
	if (!strcmp(name, "etag")) {
		if (!strcasecmp(v, "inode"))
			c->etag = PROTO_ETAG_INODE;
		else if (!strcasecmp(v, "mtime-size"))
			c->etag = PROTO_ETAG_MTIME_SIZE;
		else
			BAD("etag: expected inode or mtime-size, got '%s'", v);
		return 1;
	}
	UINT("workers", workers, 1, 1024, false)
	UINT("max_ranges", max_ranges, 1, 1000, false)
	UINT("request_timeout", request_timeout, 1, 86400, false)
	UINT("connection_timeout", connection_timeout, 1, 86400, false)
	UINT("max_connections", max_connections, 1, 1000000, false)
	UINT("max_listings", max_listings, 1, 100000, false)
	UINT("listing_queue", listing_queue, 0, 100000, false)
	UINT("listing_queue_timeout", listing_queue_timeout, 1, 86400, false)
	UINT("listing_cache_bytes", listing_cache_bytes, 0, 1ULL << 40, true)
	UINT("max_connections_per_ip", max_connections_per_ip, 0, 1000000, false)
	UINT("header_timeout", header_timeout, 1, 86400, false)
	UINT("shutdown_timeout", shutdown_timeout, 0, 86400, false)
	UINT("min_send_rate", min_send_rate, 0, 1ULL << 30, true)
	UINT("small_file_max", small_file_max, 0, 1ULL << 30, true)
	UINT("request_header_max", request_header_max, 1024, 1ULL << 20, true)
	UINT("fcache_entries", fcache_entries, 0, 1000000, false)
	UINT("fcache_bytes", fcache_bytes, 0, 1ULL << 40, true)
	UINT("fcache_watches", fcache_watches, 0, 1000000, false)
	BAD("unknown key '%s' in [server]", name);
#undef STR
#undef UINT
}

/* "/a//b/" → "/a/b"; refuses "." and ".." segments. */
static char *norm_dir(const char *p)
{
	size_t n = strlen(p);
	char *out = malloc(n + 2), *o = out;

	if (!out)
		return NULL;
	*o++ = '/';
	while (*p) {
		const char *seg;
		size_t len;

		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - seg);
		if (!len)
			continue;
		if ((len == 1 && seg[0] == '.') || (len == 2 && !memcmp(seg, "..", 2))) {
			free(out);
			errno = EINVAL;
			return NULL;
		}
		if (o[-1] != '/')
			*o++ = '/';
		memcpy(o, seg, len);
		o += len;
	}
	*o = 0;
	return out;
}

/* `dir "/path"` (quotes optional) → a new conf_dir. */
static int begin_dir(struct load *ld, const char *section)
{
	struct conf *c = ld->c;
	const char *p = section + 3;
	char buf[256];
	size_t n;
	struct conf_dir *d;
	char *norm;

	while (*p == ' ' || *p == '\t')
		p++;
	n = strlen(p);
	if (n >= 2 && p[0] == '"' && p[n - 1] == '"') {
		p++;
		n -= 2;
	}
	if (!n || n >= sizeof buf || p[0] != '/') {
		report(ld, ld->line, "[%s]: expected [dir \"/url/path\"]", section);
		return -1;
	}
	memcpy(buf, p, n);
	buf[n] = 0;
	norm = norm_dir(buf);
	if (!norm) {
		report(ld, ld->line, "[%s]: path must not contain '.' or '..' segments", section);
		return -1;
	}
	for (size_t i = 0; i < c->ndirs; i++)
		if (!strcmp(c->dirs[i].path, norm)) {
			ld->dir = &c->dirs[i];
			free(norm);
			return 0;
		}
	d = realloc(c->dirs, (c->ndirs + 1) * sizeof *d);
	if (!d) {
		free(norm);
		report(ld, ld->line, "out of memory");
		return -1;
	}
	c->dirs = d;
	d += c->ndirs++;
	d->path = norm;
	d->line = ld->line;
	d->listing = -1;
	d->dotfiles = -1;
	ld->dir = d;
	return 0;
}

static int handler(void *user, const char *section, const char *name,
                   const char *value)
{
	struct load *ld = user;

	if (!*name)
		BAD("syntax error: missing name before '='");
	/* inih reads an indented line after a key as more of its value */
	if (ld->indented && !strcmp(section, ld->section) &&
	    !strcmp(name, ld->last_key))
		BAD("continuation lines are not supported");
	snprintf(ld->last_key, sizeof ld->last_key, "%s", name);
	if (strcmp(section, ld->section)) {
		snprintf(ld->section, sizeof ld->section, "%s", section);
		ld->dir = NULL;
		if (!strncmp(section, "dir", 3) &&
		    (section[3] == ' ' || section[3] == '\t'))
			if (begin_dir(ld, section) < 0)
				return 1;
	}
	if (!strcmp(section, "server"))
		return server_key(ld, name, value);
	if (!strcmp(section, "listing"))
		return listing_key(ld, &ld->c->listing, name, value);
	if (ld->dir) {
		bool b;
		if (!strcmp(name, "listing")) {
			if (!set_bool(ld, name, value, &b))
				ld->dir->listing = b;
		} else if (!strcmp(name, "dotfiles")) {
			int d = parse_dotfiles(value);
			if (d < 0)
				BAD("dotfiles: expected off, serve or list, got '%s'", value);
			ld->dir->dotfiles = d;
		} else
			BAD("unknown key '%s' in [%s]", name, section);
		return 1;
	}
	if (!strncmp(section, "dir", 3) && (section[3] == ' ' || section[3] == '\t'))
		return 1;       /* bad [dir] header, already reported */
	if (!*section)
		BAD("'%s' outside any section (start with [server])", name);
	BAD("unknown section [%s]", section);
}

/* inih's reader: one line per call, counted, so that the handler knows
 * the line of each key (Debian's libinih is built without
 * INI_HANDLER_LINENO). The syntax is inih's to judge. */
static char *reader(char *str, int num, void *stream)
{
	struct load *ld = stream;
	char line[4096];
	size_t n;

	if (!fgets(line, sizeof line, ld->f))
		return NULL;
	ld->line++;
	n = strlen(line);
	if (n >= (size_t)num || (n == sizeof line - 1 && line[n - 1] != '\n')) {
		if (line[n - 1] != '\n') {
			int ch;
			while ((ch = fgetc(ld->f)) != EOF && ch != '\n')
				;
		}
		report(ld, ld->line, "line too long (at most %d characters)", num - 2);
		str[0] = '\n';
		str[1] = 0;
		return str;
	}
	ld->indented = line[0] == ' ' || line[0] == '\t';
	memcpy(str, line, n + 1);
	return str;
}

int conf_load(struct conf *c, const char *path, conf_err_fn *err, void *arg)
{
	struct load ld = { .c = c, .path = path, .err = err, .arg = arg };
	int r;

	ld.f = fopen(path, "r");
	if (!ld.f) {
		r = -errno;
		char msg[512];
		snprintf(msg, sizeof msg, "%s: cannot open: %s", path, strerror(-r));
		if (err)
			err(arg, msg);
		return r;
	}
	c->file = path;
	r = ini_parse_stream(reader, &ld, handler, &ld);
	fclose(ld.f);
	/* inih goes on after a syntax error but names only the first */
	if (r > 0)
		report(&ld, r, "syntax error: expected [section] or name = value");
	else if (r < 0)
		report(&ld, 0, "parse failed");
	return ld.errors;
}

static int dir_cmp(const void *a, const void *b)
{
	const struct conf_dir *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);

	return lx < ly ? 1 : lx > ly ? -1 : strcmp(x->path, y->path);
}

int conf_validate(struct conf *c, conf_err_fn *err, void *arg)
{
	struct load ld = { .c = c, .path = c->file ? c->file : "fileserverd",
	                   .err = err, .arg = arg };

	if (!c->root || !*c->root)
		report(&ld, 0, "root: not set");
	if (c->group && !c->user)
		report(&ld, 0, "group is set but user is not");
	for (size_t i = 0; i < c->nlisten; i++)
		if (c->listen[i].ssl) {
			if (!c->ssl_certificate && !c->ssl_certificate_key)
				report(&ld, c->ssl_line, "listen %s ssl: ssl needs ssl_certificate "
				       "and ssl_certificate_key in [server]", c->listen[i].text);
			break;
		}
	if (!c->ssl_certificate != !c->ssl_certificate_key)
		report(&ld, 0, "%s is set but %s is not",
		       c->ssl_certificate ? "ssl_certificate" : "ssl_certificate_key",
		       c->ssl_certificate ? "ssl_certificate_key" : "ssl_certificate");
	/* allow widens beneath only: under the other policies it would
	 * silently do nothing */
	for (size_t i = 0; i < c->nallow && c->symlinks != CONF_LINKS_BENEATH; i++)
		report(&ld, c->allow[i].line, "allow: only used with symlinks = beneath "
		       "(symlinks = %s)", link_policies[c->symlinks]);
	if (c->ndirs)
		qsort(c->dirs, c->ndirs, sizeof *c->dirs, dir_cmp);
	return ld.errors;
}

static bool prefix_of(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	if (n == 1)
		return true;    /* "/" */
	return !strncmp(dir, path, n) && (path[n] == 0 || path[n] == '/');
}

void conf_listing_for(const struct conf *c, const char *path,
                      struct conf_listing *out)
{
	int have_l = 0, have_d = 0;

	*out = c->listing;
	/* dirs are sorted longest first: the first match of each key wins */
	for (size_t i = 0; i < c->ndirs && !(have_l && have_d); i++) {
		const struct conf_dir *d = &c->dirs[i];
		if (!prefix_of(d->path, path))
			continue;
		if (!have_l && d->listing >= 0) {
			out->enabled = d->listing;
			have_l = 1;
		}
		if (!have_d && d->dotfiles >= 0) {
			out->dotfiles = d->dotfiles;
			have_d = 1;
		}
	}
}
