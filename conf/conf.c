/*
 * conf: a configuration file read (inih, behind the reader of
 * conf_read.c), its [server], [listing] and [dir] keys, the checks once
 * it is whole, and the listing settings of a path. Values, listen
 * addresses and the symlinks/allow keys are in conf_*.c.
 */
#include "first.h"

#include "conf/conf.h"
#include "conf/conf_int.h"

#include <errno.h>
#include <ini.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	c->ssl_session_tickets = true;
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
	c->fcache_open_files = 16;
	c->fcache_bytes = 32u << 20;
	c->loopback_sndbuf = 1u << 20;
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

static const char *const levels[] = {
	[CONF_LOG_ERR] = "error", [CONF_LOG_WARNING] = "warning",
	[CONF_LOG_NOTICE] = "notice", [CONF_LOG_INFO] = "info",
	[CONF_LOG_DEBUG] = "debug",
};

/* In the order of enum proto_list_format, from PROTO_FMT_HTML. */
static const char *const formats[] = { "html", "json", "ndjson" };

/* In the order of enum proto_list_sort, from PROTO_SORT_NAME. */
static const char *const sorts[] = { "name", "size", "mtime", "none" };

static int listing_key(struct conf__load *ld, struct conf_listing *l,
                       const char *name, const char *v)
{
	unsigned long long n;
	int i;

	if (!strcmp(name, "enabled"))
		conf__set_bool(ld, name, v, &l->enabled);
	else if (!strcmp(name, "dotfiles")) {
		if ((i = conf__parse_dotfiles(v)) < 0)
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
		conf__set_bool(ld, name, v, &l->attrs_from_lookup);
	else if (!strcmp(name, "background"))
		conf__set_bool(ld, name, v, &l->background);
	else if (!strcmp(name, "default_format")) {
		if ((i = conf__pick(v, formats, 3)) < 0)
			BAD("default_format: expected html, json or ndjson, got '%s'", v);
		l->format = (enum proto_list_format)(PROTO_FMT_HTML + i);
	} else if (!strcmp(name, "default_sort")) {
		if ((i = conf__pick(v, sorts, 4)) < 0)
			BAD("default_sort: expected name, size, mtime or none, got '%s'", v);
		l->sort = (enum proto_list_sort)(PROTO_SORT_NAME + i);
	} else if (!strcmp(name, "window")) {
		/* more would be cut to LK_WINDOW_MAX by the listing code */
		if (!conf__set_uint(ld, name, v, 1, 4096, false, &n))
			l->window = (unsigned)n;
	} else if (!strcmp(name, "local_window")) {
		if (!conf__set_uint(ld, name, v, 1, 4096, false, &n))
			l->local_window = (unsigned)n;
	} else
		UNKNOWN("unknown key '%s' in [listing]", name);
	return 1;
}

/* listen, status_listen */
static int listen_key(struct conf__load *ld, const char *name, const char *v)
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
	ld->c->listen[ld->c->nlisten - 1].line = ld->line;
	if (ld->c->listen[ld->c->nlisten - 1].ssl && !ld->c->ssl_line)
		ld->c->ssl_line = ld->line;
	return 1;
}

/* The [server] keys that take a word or a path of their own: 1 when
 * @name is one (handled, or reported), else 0. */
static int server_word_key(struct conf__load *ld, const char *name, const char *v)
{
	struct conf *c = ld->c;
	int i;

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
		if ((i = conf__pick(v, levels, CONF_LOG_DEBUG + 1)) < 0)
			BAD("log_level: expected error, warning, notice, info or debug, got '%s'", v);
		c->log_level = i;
		return 1;
	}
	if (!strcmp(name, "symlinks")) {
		if ((i = conf__pick(v, conf__link_policies, 4)) < 0)
			BAD("symlinks: expected beneath, follow, if_owner_match or never, got '%s'", v);
		c->symlinks = (enum conf_symlinks)i;
		return 1;
	}
	if (!strcmp(name, "allow")) {
		conf__allow_key(ld, v);
		return 1;
	}
	if (!strcmp(name, "sidecars")) {
		conf__set_bool(ld, name, v, &c->sidecars);
		return 1;
	}
	if (!strcmp(name, "ssl_session_tickets")) {
		conf__set_bool(ld, name, v, &c->ssl_session_tickets);
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
	return 0;
}

/* The keys whose value the daemon opens or looks up later: a failure
 * there names the line. */
static void note_line(struct conf__load *ld, const char *name)
{
	static const struct { const char *key; size_t off; } k[] = {
		{ "root", offsetof(struct conf, root_line) },
		{ "user", offsetof(struct conf, user_line) },
		{ "group", offsetof(struct conf, group_line) },
		{ "mime_types", offsetof(struct conf, mime_types_line) },
		{ "error_log", offsetof(struct conf, error_log_line) },
		{ "access_log", offsetof(struct conf, access_log_line) },
		{ "ssl_certificate", offsetof(struct conf, ssl_certificate_line) },
		{ "ssl_certificate_key", offsetof(struct conf, ssl_certificate_key_line) },
	};

	for (size_t i = 0; i < sizeof k / sizeof *k; i++)
		if (!strcmp(name, k[i].key))
			*(int *)((char *)ld->c + k[i].off) = ld->line;
}

static int server_key(struct conf__load *ld, const char *name, const char *v)
{
	struct conf *c = ld->c;
	unsigned long long n;

#define STR(key, slot) \
	if (!strcmp(name, key)) { \
		if (!*v) BAD("%s: empty value", key); \
		if (conf_set_str(&c->slot, v)) OOM(); \
		return 1; \
	}
#define UINT(key, slot, lo, hi, sized) \
	if (!strcmp(name, key)) { \
		if (!conf__set_uint(ld, key, v, lo, hi, sized, &n)) c->slot = n; \
		return 1; \
	}

	if (!strcmp(name, "listen") || !strcmp(name, "status_listen"))
		return listen_key(ld, name, v);
	note_line(ld, name);
	STR("root", root)
	STR("user", user)
	STR("group", group)
	STR("error_log", error_log)
	STR("mime_types", mime_types)
	STR("default_type", default_type)
	STR("ssl_certificate", ssl_certificate)
	STR("ssl_certificate_key", ssl_certificate_key)
	if (server_word_key(ld, name, v))
		return 1;
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
	UINT("loopback_sndbuf", loopback_sndbuf, 0, 1ULL << 30, true)
	UINT("header_timeout", header_timeout, 1, 86400, false)
	UINT("shutdown_timeout", shutdown_timeout, 0, 86400, false)
	UINT("min_send_rate", min_send_rate, 0, 1ULL << 30, true)
	UINT("small_file_max", small_file_max, 0, 1ULL << 30, true)
	UINT("request_header_max", request_header_max, 1024, 1ULL << 20, true)
	UINT("fcache_entries", fcache_entries, 0, 1000000, false)
	UINT("fcache_bytes", fcache_bytes, 0, 1ULL << 40, true)
	UINT("fcache_watches", fcache_watches, 0, 1000000, false)
	UNKNOWN("unknown key '%s' in [server]", name);
#undef STR
#undef UINT
}

/* [dir "/path"] */
static int dir_key(struct conf__load *ld, struct conf_dir *d, const char *name,
                   const char *v)
{
	bool b;
	int i;

	if (!strcmp(name, "listing")) {
		if (!conf__set_bool(ld, name, v, &b))
			d->listing = b;
	} else if (!strcmp(name, "dotfiles")) {
		if ((i = conf__parse_dotfiles(v)) < 0)
			BAD("dotfiles: expected off, serve or list, got '%s'", v);
		d->dotfiles = i;
	} else
		UNKNOWN("unknown key '%s' in [%s]", name, ld->section);
	return 1;
}

/* The keys that add to a list rather than set a value. */
static bool repeatable(const struct conf__load *ld, const char *name)
{
	return ld->sect == CONF__SECT_SERVER &&
	       (!strcmp(name, "listen") || !strcmp(name, "status_listen") ||
	        !strcmp(name, "allow"));
}

/* @section is not looked at: the reader follows the headers (inih cuts
 * their names short). */
static int handler(void *user, const char *section, const char *name,
                   const char *value)
{
	struct conf__load *ld = user;
	/* inih reads an indented line after a key as more of its value */
	bool more = ld->indented && ld->key_since_header && !strcmp(name, ld->last_key);
	bool once;
	int at;

	(void)section;
	ld->key_since_header = *name != 0;
	if (!*name)
		BAD("syntax error: missing name before '='");
	if (more)
		BAD("continuation lines are not supported");
	snprintf(ld->last_key, sizeof ld->last_key, "%s", name);
	if (ld->sect == CONF__SECT_NONE)
		BAD("'%s' outside any section (start with [server])", name);
	if (ld->sect == CONF__SECT_BAD)
		return 1;       /* its header is reported */
	once = !repeatable(ld, name);
	if (once && (at = conf__seen_at(ld, name)))
		BAD("%s: already set at line %d", name, at);
	ld->unknown = false;
	if (ld->sect == CONF__SECT_SERVER)
		server_key(ld, name, value);
	else if (ld->sect == CONF__SECT_LISTING)
		listing_key(ld, &ld->c->listing, name, value);
	else
		dir_key(ld, &ld->c->dirs[ld->sect - CONF__SECT_DIR], name, value);
	if (once && !ld->unknown)
		conf__remember(ld, name);
	return 1;
}

int conf_load(struct conf *c, const char *path, conf_err_fn *err, void *arg)
{
	struct conf__load ld = { .c = c, .path = path, .err = err, .arg = arg,
	                         .sect = CONF__SECT_NONE };
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
	r = ini_parse_stream(conf__reader, &ld, handler, &ld);
	fclose(ld.f);
	free(ld.seen);
	/* inih goes on after a syntax error but names only the first */
	if (r > 0)
		conf__report(&ld, r, "syntax error: expected [section] or name = value");
	else if (r < 0)
		conf__report(&ld, 0, "parse failed");
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
	struct conf__load ld = { .c = c, .path = c->file ? c->file : "fileserverd",
	                   .err = err, .arg = arg };
	struct conf__load cmd = { .c = c, .path = "fileserverd", .err = err, .arg = arg };

	if (!c->root || !*c->root)
		conf__report(&ld, 0, "root: not set");
	if (c->group && !c->user)
		conf__report(&ld, c->group_line, "group is set but user is not");
	for (size_t i = 0; i < c->nlisten; i++)
		if (c->listen[i].ssl) {
			if (!c->ssl_certificate && !c->ssl_certificate_key)
				conf__report(&ld, c->ssl_line, "listen %s ssl: ssl needs ssl_certificate "
				             "and ssl_certificate_key in [server]", c->listen[i].text);
			break;
		}
	if (!c->ssl_certificate != !c->ssl_certificate_key)
		conf__report(&ld, c->ssl_certificate ? c->ssl_certificate_line :
		             c->ssl_certificate_key_line, "%s is set but %s is not",
		             c->ssl_certificate ? "ssl_certificate" : "ssl_certificate_key",
		             c->ssl_certificate ? "ssl_certificate_key" : "ssl_certificate");
	/* allow widens beneath only: under the other policies it would
	 * silently do nothing */
	for (size_t i = 0; i < c->nallow && c->symlinks != CONF_LINKS_BENEATH; i++)
		conf__report(&ld, c->allow[i].line, "allow: only used with symlinks = beneath "
		             "(symlinks = %s)", conf__link_policies[c->symlinks]);
	conf__check_listen(&ld, &cmd);
	if (c->ndirs)
		qsort(c->dirs, c->ndirs, sizeof *c->dirs, dir_cmp);
	return ld.errors + cmd.errors;
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
