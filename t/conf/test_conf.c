#include "first.h"

#include "conf/conf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t/tmain.h"

/* Collected "file:line: message" lines of one load. */
static char msgs[16][512];
static int nmsgs;

static void collect(void *arg, const char *msg)
{
	(void)arg;
	if (nmsgs < 16)
		snprintf(msgs[nmsgs++], sizeof msgs[0], "%s", msg);
}

static char path[64];

/* Writes @text to a temp file and loads it into a fresh conf. */
static int load(struct conf *c, const char *text)
{
	int fd;

	snprintf(path, sizeof path, "/tmp/test_conf.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	nmsgs = 0;
	ck_assert_int_eq(conf_init(c), 0);
	int r = conf_load(c, path, collect, NULL);
	if (r >= 0)
		r += conf_validate(c, collect, NULL);
	unlink(path);
	return r;
}

/* Asserts that message @i is "path:line: ..." containing @needle. */
static void expect_msg(int i, int line, const char *needle)
{
	char prefix[96];

	ck_assert_int_gt(nmsgs, i);
	snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
	ck_assert_msg(!strncmp(msgs[i], prefix, strlen(prefix)),
	              "message %d is '%s', expected prefix '%s'", i, msgs[i], prefix);
	ck_assert_msg(strstr(msgs[i], needle), "message '%s' lacks '%s'", msgs[i], needle);
}

START_TEST(defaults)
{
	struct conf c;

	ck_assert_int_eq(conf_init(&c), 0);
	ck_assert_str_eq(c.root, ".");
	ck_assert_uint_eq(c.workers, 1);
	ck_assert_str_eq(c.index, "index.html");
	ck_assert(c.sidecars);
	ck_assert(c.ssl_session_tickets);
	ck_assert(c.listing.enabled);
	ck_assert(c.listing.attrs_from_lookup);
	ck_assert(c.listing.background);
	ck_assert(!c.listing.dotfiles);
	ck_assert_uint_eq(c.listing.window, 256);
	ck_assert_uint_eq(c.listing.local_window, 4096);
	ck_assert_ptr_null(c.access_log);
	ck_assert_uint_eq(c.nlisten, 0);
	ck_assert_uint_eq(c.request_header_max, 8192);
	ck_assert_uint_eq(c.fcache_entries, 2048);
	ck_assert_uint_eq(c.fcache_bytes, 32u << 20);
	ck_assert_uint_eq(c.loopback_sndbuf, 1u << 20);
	conf_free(&c);
}
END_TEST

START_TEST(full_file)
{
	struct conf c;
	int r = load(&c,
	             "# comment\n"
	             "[server]\n"
	             "listen = 127.0.0.1:8081\n"
	             "listen = [::1]:8082\n"
	             "listen = 8083\n"
	             "root = /srv/www\n"
	             "workers = 4\n"
	             "access_log = /tmp/a.log ; inline comment\n"
	             "log_level = debug\n"
	             "sidecars = off\n"
	             "ssl_session_tickets = off\n"
	             "max_ranges = 3\n"
	             "small_file_max = 16k\n"
	             "request_header_max = 16k\n"
	             "fcache_entries = 0\n"
	             "fcache_bytes = 1m\n"
	             "loopback_sndbuf = 0\n"
	             "index = off\n"
	             "[listing]\n"
	             "dotfiles = yes\n"
	             "default_format = ndjson\n"
	             "default_sort = mtime\n"
	             "window = 64\n"
	             "local_window = 512\n"
	             "attrs_from_lookup = off\n"
	             "background = off\n"
	             "[dir \"/private/\"]\n"
	             "listing = off\n"
	             "[dir \"/private/open\"]\n"
	             "listing = on\n");
	ck_assert_msg(r == 0, "errors: %d, first: %s", r, nmsgs ? msgs[0] : "");
	ck_assert_uint_eq(c.nlisten, 3);
	ck_assert_int_eq(c.listen[0].addr.ss_family, AF_INET);
	ck_assert_uint_eq(ntohs(((struct sockaddr_in *)&c.listen[0].addr)->sin_port), 8081);
	ck_assert_int_eq(c.listen[1].addr.ss_family, AF_INET6);
	ck_assert_uint_eq(ntohs(((struct sockaddr_in6 *)&c.listen[1].addr)->sin6_port), 8082);
	ck_assert_uint_eq(((struct sockaddr_in *)&c.listen[2].addr)->sin_addr.s_addr,
	                  htonl(INADDR_ANY));
	ck_assert_str_eq(c.root, "/srv/www");
	ck_assert_uint_eq(c.workers, 4);
	ck_assert_str_eq(c.access_log, "/tmp/a.log");
	ck_assert_int_eq(c.log_level, CONF_LOG_DEBUG);
	ck_assert(!c.sidecars);
	ck_assert(!c.ssl_session_tickets);
	ck_assert_uint_eq(c.max_ranges, 3);
	ck_assert_uint_eq(c.small_file_max, 16384);
	ck_assert_uint_eq(c.request_header_max, 16384);
	ck_assert_uint_eq(c.fcache_entries, 0);
	ck_assert_uint_eq(c.fcache_bytes, 1u << 20);
	ck_assert_uint_eq(c.loopback_sndbuf, 0);
	ck_assert_str_eq(c.index, "");
	ck_assert(c.listing.dotfiles);
	ck_assert_int_eq(c.listing.format, PROTO_FMT_NDJSON);
	ck_assert_int_eq(c.listing.sort, PROTO_SORT_MTIME);
	ck_assert_uint_eq(c.listing.window, 64);
	ck_assert_uint_eq(c.listing.local_window, 512);
	ck_assert(!c.listing.attrs_from_lookup);
	ck_assert(!c.listing.background);

	struct conf_listing l;
	conf_listing_for(&c, "/private/x/", &l);
	ck_assert(!l.enabled);
	ck_assert(l.dotfiles);
	conf_listing_for(&c, "/private/open/y/", &l);
	ck_assert(l.enabled);
	conf_listing_for(&c, "/privateer/", &l);
	ck_assert(l.enabled);
	conf_listing_for(&c, "/private", &l);
	ck_assert(!l.enabled);
	conf_free(&c);
}
END_TEST

START_TEST(errors_have_lines)
{
	struct conf c;
	int r = load(&c,
	             "[server]\n"                       /* 1 */
	             "listen = 1.2.3:99999\n"           /* 2 */
	             "bogus = 1\n"                      /* 3 */
	             "workers = zero\n"                 /* 4 */
	             "\n"                               /* 5 */
	             "[nosuch]\n"                       /* 6 */
	             "a = b\n"                          /* 7 */
	             "[listing]\n"                      /* 8 */
	             "no equals sign here\n"            /* 9 */
	             "enabled = perhaps\n"              /* 10 */
	             "[dir \"/a/../b\"]\n"              /* 11 */
	             "listing = off\n"                  /* 12 */
	             "[server\n");                      /* 13 */
	/* every key's error, then the first syntax error (inih names
	 * only the first: line 13 is not reported) */
	ck_assert_int_eq(r, 7);
	expect_msg(0, 2, "listen");
	expect_msg(1, 3, "unknown key 'bogus'");
	expect_msg(2, 4, "workers");
	expect_msg(3, 6, "unknown section [nosuch]");
	expect_msg(4, 10, "enabled");
	expect_msg(5, 11, "'..'");
	expect_msg(6, 9, "syntax error");
	conf_free(&c);
}
END_TEST

START_TEST(dotfiles_and_targets)
{
	struct conf c;
	struct conf_listing l;
	int r = load(&c,
	             "[listing]\n"                    /* 1 */
	             "dotfiles = serve\n"             /* 2 */
	             "[dir \"/a\"]\n"                 /* 3 */
	             "dotfiles = list\n"              /* 4 */
	             "[dir \"/b\"]\n"                 /* 5 */
	             "dotfiles = off\n"               /* 6 */
	             "[dir \"/c\"]\n"                 /* 7 */
	             "dotfiles = maybe\n"             /* 8 */
	             "[listing]\n"                    /* 9 */
	             "symlink_targets = off\n");      /* 10 */
	ck_assert_int_eq(r, 1);
	expect_msg(0, 8, "dotfiles: expected off, serve or list");
	ck_assert_int_eq(c.listing.dotfiles, CONF_DOT_SERVE);
	ck_assert_int_eq(c.listing.symlink_targets, CONF_TARGETS_OFF);
	conf_listing_for(&c, "/a/x", &l);
	ck_assert_int_eq(l.dotfiles, CONF_DOT_LIST);
	conf_listing_for(&c, "/b", &l);
	ck_assert_int_eq(l.dotfiles, CONF_DOT_OFF);
	conf_listing_for(&c, "/c", &l);
	ck_assert_int_eq(l.dotfiles, CONF_DOT_SERVE);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[listing]\nsymlink_targets = all\n"), 1);
	expect_msg(0, 2, "symlink_targets: expected beneath or off");
	ck_assert_int_eq(c.listing.symlink_targets, CONF_TARGETS_BENEATH);
	conf_free(&c);

	/* built in: /.well-known is served while dotfiles are off; a
	 * section of the file overrides it; boolean words still work */
	ck_assert_int_eq(load(&c, "[listing]\ndotfiles = no\n"), 0);
	conf_listing_for(&c, "/.well-known/acme-challenge/x", &l);
	ck_assert_int_eq(l.dotfiles, CONF_DOT_SERVE);
	conf_listing_for(&c, "/.well-knownx", &l);
	ck_assert_int_eq(l.dotfiles, CONF_DOT_OFF);
	ck_assert_int_eq(c.listing.symlink_targets, CONF_TARGETS_BENEATH);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[dir \"/.well-known/\"]\ndotfiles = off\n"
	                          "[listing]\ndotfiles = on\n"), 0);
	conf_listing_for(&c, "/.well-known/x", &l);
	ck_assert_int_eq(l.dotfiles, CONF_DOT_OFF);
	ck_assert_int_eq(c.listing.dotfiles, CONF_DOT_LIST);
	conf_free(&c);
}
END_TEST

/* symlinks and allow: the list forms, normalised paths, the errors. */
START_TEST(symlinks_and_allow)
{
	struct conf c;

	ck_assert_int_eq(load(&c, "[server]\n"
	                          "allow = /mnt/nfs//data/ \"/srv/my data\"\n"
	                          "allow = /\n"), 0);
	ck_assert_int_eq(c.symlinks, CONF_LINKS_BENEATH);
	ck_assert_uint_eq(c.nallow, 3);
	ck_assert_str_eq(c.allow[0].path, "/mnt/nfs/data");
	ck_assert_str_eq(c.allow[1].path, "/srv/my data");
	ck_assert_str_eq(c.allow[2].path, "/");
	ck_assert_int_eq(c.allow[2].line, 3);
	conf_free(&c);

	ck_assert_int_eq(load(&c, "[server]\nsymlinks = IF_OWNER_MATCH\n"), 0);
	ck_assert_int_eq(c.symlinks, CONF_LINKS_OWNER);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nsymlinks = never\n"), 0);
	ck_assert_int_eq(c.symlinks, CONF_LINKS_NEVER);
	conf_free(&c);

	ck_assert_int_eq(load(&c, "[server]\n"
	                          "symlinks = maybe\n"
	                          "allow = data\n"
	                          "allow = /a/../b\n"
	                          "allow = \"/unterminated\n"
	                          "allow =\n"), 5);
	expect_msg(0, 2, "symlinks: expected beneath, follow, if_owner_match or never, got 'maybe'");
	expect_msg(1, 3, "allow: expected an absolute directory path, got 'data'");
	expect_msg(2, 4, "'.' and '..' segments");
	expect_msg(3, 5, "unterminated quote");
	expect_msg(4, 6, "allow: empty value");
	conf_free(&c);

	ck_assert_int_eq(load(&c, "[server]\nallow = /srv\nsymlinks = follow\n"), 1);
	expect_msg(0, 2, "allow: only used with symlinks = beneath (symlinks = follow)");
	conf_free(&c);
}
END_TEST

START_TEST(key_outside_section)
{
	struct conf c;

	ck_assert_int_eq(load(&c, "root = /x\n"), 1);
	expect_msg(0, 1, "outside any section");
	conf_free(&c);
}
END_TEST

START_TEST(missing_file)
{
	struct conf c;

	nmsgs = 0;
	ck_assert_int_eq(conf_init(&c), 0);
	ck_assert_int_lt(conf_load(&c, "/nonexistent/fileserverd.conf", collect, NULL), 0);
	ck_assert_int_eq(nmsgs, 1);
	ck_assert_msg(strstr(msgs[0], "/nonexistent/fileserverd.conf: cannot open"),
	              "got '%s'", msgs[0]);
	conf_free(&c);
}
END_TEST

START_TEST(limits_out_of_range)
{
	struct conf c;

	ck_assert_int_eq(load(&c, "[server]\n"
	                          "request_header_max = 512\n"
	                          "fcache_entries = -1\n"), 2);
	expect_msg(0, 2, "request_header_max: expected a number from 1024 to 1048576");
	expect_msg(1, 3, "fcache_entries");
	ck_assert_uint_eq(c.request_header_max, 8192);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nrequest_header_max = 2m\n"), 1);
	expect_msg(0, 2, "request_header_max");
	ck_assert_uint_eq(c.request_header_max, 8192);
	conf_free(&c);

	ck_assert_int_eq(load(&c, "[listing]\nlocal_window = 0\n"), 1);
	expect_msg(0, 2, "local_window");
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[listing]\nlocal_window = 4097\n"), 1);
	expect_msg(0, 2, "local_window");
	ck_assert_uint_eq(c.listing.local_window, 4096);
	conf_free(&c);

	/* the listing code takes at most LK_WINDOW_MAX (4096) per window */
	static const char *const bad_windows[] = { "0", "4097", "65536" };
	for (size_t i = 0; i < 3; i++) {
		char text[64], want[80];
		snprintf(text, sizeof text, "[listing]\nwindow = %s\n", bad_windows[i]);
		snprintf(want, sizeof want, "window: expected a number from 1 to 4096, got '%s'",
		         bad_windows[i]);
		ck_assert_int_eq(load(&c, text), 1);
		expect_msg(0, 2, want);
		ck_assert_uint_eq(c.listing.window, 256);
		conf_free(&c);
	}
	ck_assert_int_eq(load(&c, "[listing]\nwindow = 4096\n"), 0);
	ck_assert_uint_eq(c.listing.window, 4096);
	conf_free(&c);
}
END_TEST

START_TEST(shutdown_timeout)
{
	struct conf c;

	ck_assert_int_eq(conf_init(&c), 0);
	ck_assert_uint_eq(c.shutdown_timeout, 30);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nshutdown_timeout = 0\n"), 0);
	ck_assert_uint_eq(c.shutdown_timeout, 0);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nshutdown_timeout = soon\n"), 1);
	expect_msg(0, 2, "shutdown_timeout: expected a number from 0 to 86400, got 'soon'");
	ck_assert_uint_eq(c.shutdown_timeout, 30);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nshutdown_timeout = 86401\n"), 1);
	expect_msg(0, 2, "shutdown_timeout: expected a number from 0 to 86400, got '86401'");
	conf_free(&c);
}
END_TEST

START_TEST(listen_forms)
{
	struct sockaddr_storage ss;
	socklen_t len;
	static const char *const good[] = { "127.0.0.1:80", "*:8080", "8080",
	                                    ":8080", "[::]:80", "localhost:1" };
	static const char *const bad[] = { "", "host:", "1.2.3.4", "1.2.3.4:x",
	                                   "[::1]", "[::1:80", "1.2.3.4:65536",
	                                   "example.com:80", "-1" };

	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		ck_assert_msg(conf_parse_listen(good[i], &ss, &len) == 0, "'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(conf_parse_listen(bad[i], &ss, &len) < 0, "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(listen_status_flags)
{
	struct conf c;
	int r = load(&c,
	             "[server]\n"                                  /* 1 */
	             "listen = 127.0.0.1:8080 status\n"            /* 2 */
	             "listen = 8081\n"                             /* 3 */
	             "status_listen = 127.0.0.1:8082\n"            /* 4 */
	             "listen = 8083 stat\n"                        /* 5 */
	             "status_listen = 127.0.0.1:8084 status\n");   /* 6 */
	ck_assert_int_eq(r, 2);
	expect_msg(0, 5, "unknown flag");
	expect_msg(1, 6, "status_listen");
	ck_assert_uint_eq(c.nlisten, 3);
	ck_assert_str_eq(c.listen[0].text, "127.0.0.1:8080");
	ck_assert(c.listen[0].status && !c.listen[0].status_only);
	ck_assert(!c.listen[1].status && !c.listen[1].status_only);
	ck_assert_uint_eq(ntohs(((struct sockaddr_in *)&c.listen[2].addr)->sin_port), 8082);
	ck_assert(c.listen[2].status && c.listen[2].status_only);
	conf_free(&c);
}
END_TEST

START_TEST(sample_is_valid)
{
	struct conf c;
	char sample[4096];

	snprintf(sample, sizeof sample, "%s/conf/fileserverd.conf", SRCDIR);
	nmsgs = 0;
	ck_assert_int_eq(conf_init(&c), 0);
	int r = conf_load(&c, sample, collect, NULL);
	ck_assert_msg(r == 0, "%d errors, first: %s", r, nmsgs ? msgs[0] : "");
	conf_free(&c);
}
END_TEST

/* inih judges the syntax; each case alone, since it names only the
 * first syntax error of a file */
START_TEST(syntax_errors)
{
	static const struct { const char *text; int line; const char *msg; } k[] = {
		{ "[server]\nworkers = 2\n[listing\n", 3, "syntax error" },
		{ "[server]\nworkers = 2\n  3\n", 3, "continuation lines are not supported" },
		{ "[server]\n= 2\n", 2, "missing name" },
		{ "[server]\nno equals here\n", 2, "syntax error" },
	};
	struct conf c;

	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
		ck_assert_int_eq(load(&c, k[i].text), 1);
		expect_msg(0, k[i].line, k[i].msg);
		conf_free(&c);
	}
	/* an indented key at the start of a section is a key, not more */
	ck_assert_int_eq(load(&c, "[server]\n  workers = 3\n"), 0);
	ck_assert_uint_eq(c.workers, 3);
	conf_free(&c);
	char big[400];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	char text[512];
	snprintf(text, sizeof text, "[server]\nroot = /%s\n", big);
	ck_assert_int_eq(load(&c, text), 1);
	expect_msg(0, 2, "line too long");
	conf_free(&c);
}
END_TEST

/* listen's flags: "ssl" after the address, blanks around it; text
 * keeps the address alone; an unknown flag is refused with its line. */
START_TEST(listen_flags)
{
	struct conf c;
	struct sockaddr_storage ss;
	socklen_t len;

	ck_assert_int_eq(conf_init(&c), 0);
	ck_assert_int_eq(conf_add_listen(&c, "127.0.0.1:8443 ssl"), 0);
	ck_assert_int_eq(conf_add_listen(&c, "[::1]:8443\t ssl "), 0);
	ck_assert_int_eq(conf_add_listen(&c, "8080"), 0);
	ck_assert_int_eq(conf_add_listen(&c, "8080 sslx"), -ENOENT);
	ck_assert_int_eq(conf_add_listen(&c, "8080 ssl tls"), -ENOENT);
	ck_assert_int_eq(conf_add_listen(&c, "host:80 ssl"), -EINVAL);
	ck_assert_uint_eq(c.nlisten, 3);
	ck_assert(c.listen[0].ssl && c.listen[1].ssl && !c.listen[2].ssl);
	ck_assert_str_eq(c.listen[0].text, "127.0.0.1:8443");
	ck_assert_str_eq(c.listen[1].text, "[::1]:8443");
	ck_assert_int_eq(conf_parse_listen("127.0.0.1:8443 ssl", &ss, &len), 0);
	conf_free(&c);

	ck_assert_int_eq(load(&c, "[server]\nroot = /\nlisten = 127.0.0.1:1 bogus\n"), 1);
	expect_msg(0, 3, "unknown flag");
	conf_free(&c);
	/* an ssl listener needs both files, and each file the other */
	ck_assert_int_eq(load(&c, "[server]\nroot = /\n\nlisten = 127.0.0.1:1 ssl\n"), 1);
	expect_msg(0, 4, "ssl needs ssl_certificate and ssl_certificate_key");
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nroot = /\nssl_certificate_key = /k\n"), 1);
	expect_msg(0, 3, "ssl_certificate_key is set but ssl_certificate is not");
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nssl_certificate = /c\nroot = /\n"), 1);
	expect_msg(0, 2, "ssl_certificate is set but ssl_certificate_key is not");
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nroot = /\nlisten = 1 ssl\n"
	                          "ssl_certificate = /c\nssl_certificate_key = /k\n"), 0);
	conf_free(&c);
}
END_TEST

/* The daemon's messages about what a value names (a file it cannot
 * read, an address it cannot bind) come later: each value keeps its
 * line, 0 where no file gave it. */
START_TEST(values_keep_their_lines)
{
	struct conf c;

	ck_assert_int_eq(load(&c, "[server]\nroot = /\nlisten = 1 ssl\n\n"
	                          "status_listen = 127.0.0.1:2\nssl_certificate_key = /k\n"
	                          "ssl_certificate = /c\n"), 0);
	ck_assert_uint_eq(c.nlisten, 2);
	ck_assert_int_eq(c.listen[0].line, 3);
	ck_assert_int_eq(c.listen[1].line, 5);
	ck_assert_int_eq(c.ssl_certificate_key_line, 6);
	ck_assert_int_eq(c.ssl_certificate_line, 7);
	ck_assert_int_eq(c.root_line, 2);
	ck_assert_int_eq(c.mime_types_line, 0);
	ck_assert_int_eq(conf_add_listen(&c, "8080"), 0);
	ck_assert_int_eq(c.listen[2].line, 0);
	conf_free(&c);

	ck_assert_int_eq(load(&c, "[server]\nmime_types = /m\n\nuser = u\ngroup = g\n"
	                          "error_log = /e\naccess_log = off\n"), 0);
	ck_assert_int_eq(c.mime_types_line, 2);
	ck_assert_int_eq(c.user_line, 4);
	ck_assert_int_eq(c.group_line, 5);
	ck_assert_int_eq(c.error_log_line, 6);
	ck_assert_int_eq(c.access_log_line, 7);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\nroot = /\n\ngroup = g\n"), 1);
	expect_msg(0, 4, "group is set but user is not");
	conf_free(&c);
}
END_TEST

START_TEST(etag_kinds)
{
	struct conf c;

	ck_assert_int_eq(load(&c, "[server]\n"), 0);
	ck_assert_int_eq(c.etag, PROTO_ETAG_INODE);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\netag = mtime-size\n"), 0);
	ck_assert_int_eq(c.etag, PROTO_ETAG_MTIME_SIZE);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\netag = inode\n"), 0);
	ck_assert_int_eq(c.etag, PROTO_ETAG_INODE);
	conf_free(&c);
	ck_assert_int_eq(load(&c, "[server]\n\netag = mtime\n"), 1);
	expect_msg(0, 3, "etag: expected inode or mtime-size, got 'mtime'");
	ck_assert_int_eq(c.etag, PROTO_ETAG_INODE);
	conf_free(&c);
}
END_TEST

/* A key that sets one value may be given once per section (a section
 * given twice is one); those that add to a list, as often as wanted. */
START_TEST(keys_given_twice)
{
	struct conf c;

	ck_assert_int_eq(load(&c, "[server]\n"                    /* 1 */
	                          "root = /a\n"                   /* 2 */
	                          "workers = 2\n"                 /* 3 */
	                          "root = /b\n"                   /* 4 */
	                          "[listing]\n"                   /* 5 */
	                          "window = 8\n"                  /* 6 */
	                          "[server]\n"                    /* 7 */
	                          "workers = 3\n"                 /* 8 */
	                          "[listing]\n"                   /* 9 */
	                          "window = 9\n"), 3);            /* 10 */
	expect_msg(0, 4, "root: already set at line 2");
	expect_msg(1, 8, "workers: already set at line 3");
	expect_msg(2, 10, "window: already set at line 6");
	ck_assert_str_eq(c.root, "/a");
	ck_assert_uint_eq(c.workers, 2);
	ck_assert_uint_eq(c.listing.window, 8);
	conf_free(&c);

	/* [dir] sections of one path are one section, whatever their
	 * spelling; the built-in /.well-known is not the file's */
	ck_assert_int_eq(load(&c, "[dir \"/a\"]\n"                 /* 1 */
	                          "listing = off\n"               /* 2 */
	                          "[dir /a/]\n"                   /* 3 */
	                          "dotfiles = list\n"             /* 4 */
	                          "listing = on\n"                /* 5 */
	                          "[dir \"/b\"]\n"                 /* 6 */
	                          "listing = on\n"                /* 7 */
	                          "[dir \"/.well-known\"]\n"       /* 8 */
	                          "dotfiles = off\n"), 1);        /* 9 */
	expect_msg(0, 5, "listing: already set at line 2");
	conf_free(&c);

	/* a bad value counts as given; an unknown key is no key */
	ck_assert_int_eq(load(&c, "[server]\n"
	                          "max_ranges = lots\n"
	                          "max_ranges = 4\n"
	                          "frobnicate = 1\n"
	                          "frobnicate = 2\n"), 4);
	expect_msg(0, 2, "max_ranges: expected a number");
	expect_msg(1, 3, "max_ranges: already set at line 2");
	expect_msg(2, 4, "unknown key 'frobnicate'");
	expect_msg(3, 5, "unknown key 'frobnicate'");
	conf_free(&c);

	/* lists */
	ck_assert_int_eq(load(&c, "[server]\n"
	                          "listen = 127.0.0.1:1\n"
	                          "listen = 127.0.0.1:2\n"
	                          "status_listen = 127.0.0.1:3\n"
	                          "status_listen = 127.0.0.1:4\n"
	                          "allow = /x\n"
	                          "allow = /y\n"
	                          "[server]\n"
	                          "allow = /z\n"), 0);
	ck_assert_uint_eq(c.nlisten, 4);
	ck_assert_uint_eq(c.nallow, 3);
	conf_free(&c);

	/* "listen" is a list in [server] only */
	ck_assert_int_eq(load(&c, "[listing]\nlisten = 1\nlisten = 2\n"), 2);
	expect_msg(0, 2, "unknown key 'listen' in [listing]");
	expect_msg(1, 3, "unknown key 'listen' in [listing]");
	conf_free(&c);
}
END_TEST

/* Headers are checked where they are, keys under them or not. */
START_TEST(section_headers)
{
	struct conf c;
	struct conf_listing l;

	ck_assert_int_eq(load(&c, "[server]\n"                    /* 1 */
	                          "[bogus]\n"                     /* 2 */
	                          "[listing]\n"                   /* 3 */
	                          "[dir foo]\n"                   /* 4 */
	                          "[dir \"/a/../b\"]\n"            /* 5 */
	                          "[serverx]\n"                   /* 6 */
	                          "workers = 2\n"                 /* 7 */
	                          "root = /x\n"                   /* 8 */
	                          "[dir]\n"), 5);                 /* 9 */
	expect_msg(0, 2, "unknown section [bogus]");
	expect_msg(1, 4, "[dir foo]: expected [dir \"/url/path\"]");
	expect_msg(2, 5, "'..'");
	expect_msg(3, 6, "unknown section [serverx]");
	expect_msg(4, 9, "unknown section [dir]");
	/* the keys of a bad section are not taken */
	ck_assert_uint_eq(c.workers, 1);
	conf_free(&c);

	/* a comment after the header; a byte order mark before the first;
	 * a path longer than inih keeps of a section's name */
	ck_assert_int_eq(load(&c, "\xEF\xBB\xBF[server] ; main\nworkers = 2\n"
	                          "[dir \"/a/very/long/path/beyond/forty/nine/characters/x\"]\n"
	                          "listing = off\n"), 0);
	ck_assert_uint_eq(c.workers, 2);
	conf_listing_for(&c, "/a/very/long/path/beyond/forty/nine/characters/x/y", &l);
	ck_assert(!l.enabled);
	conf_free(&c);

	/* an indented header after a key is more of the key's value to
	 * inih: one error, and the section goes on */
	ck_assert_int_eq(load(&c, "[server]\nworkers = 2\n  [bogus]\nroot = /x\n"), 1);
	expect_msg(0, 3, "continuation lines are not supported");
	ck_assert_str_eq(c.root, "/x");
	conf_free(&c);
	/* ... but a header before any key of its section */
	ck_assert_int_eq(load(&c, "[server]\n  [bogus]\n"), 1);
	expect_msg(0, 2, "unknown section [bogus]");
	conf_free(&c);
	/* a ']' after an inline comment does not end the name: a syntax
	 * error, as inih sees it, and no section */
	ck_assert_int_eq(load(&c, "[server]\n[bogus ;x]\n"), 1);
	expect_msg(0, 2, "syntax error");
	conf_free(&c);
}
END_TEST

/* Addresses one socket each cannot both be bound: refused with both
 * lines, before any bind is tried. */
START_TEST(listen_clashes)
{
	struct conf c;

	ck_assert_int_eq(load(&c, "[server]\n"                         /* 1 */
	                          "listen = 127.0.0.1:8080\n"          /* 2 */
	                          "listen = 8081\n"                    /* 3 */
	                          "listen = 127.0.0.1:8080 status\n"   /* 4 */
	                          "listen = 127.0.0.1:8081\n"          /* 5 */
	                          "listen = [::1]:8080\n"              /* 6 */
	                          "status_listen = [::]:8080\n"        /* 7 */
	                          "listen = *:8081\n"), 4);            /* 8 */
	expect_msg(0, 4, "listen 127.0.0.1:8080: the same address as listen at line 2");
	expect_msg(1, 5, "listen 127.0.0.1:8081: the same port as listen at line 3 (8081), "
	              "one of them on every address");
	expect_msg(2, 7, "status_listen [::]:8080: the same port as listen at line 6 ([::1]:8080)");
	expect_msg(3, 8, "listen *:8081: the same address as listen at line 3");
	conf_free(&c);

	/* IPv6 sockets are IPV6_V6ONLY; port 0 takes a free port for each */
	ck_assert_int_eq(load(&c, "[server]\nlisten = 8080\nlisten = [::]:8080\n"
	                          "listen = 127.0.0.1:0\nlisten = 127.0.0.1:0\n"
	                          "listen = 127.0.0.2:8080\n"), 1);
	expect_msg(0, 6, "the same port as listen at line 2 (8080)");
	conf_free(&c);

	/* from the command line: no line of the file to name */
	nmsgs = 0;
	ck_assert_int_eq(conf_init(&c), 0);
	ck_assert_int_eq(conf_add_listen(&c, "127.0.0.1:9"), 0);
	ck_assert_int_eq(conf_add_listen(&c, "127.0.0.1:9 ssl"), 0);
	c.ssl_certificate = strdup("/c");
	c.ssl_certificate_key = strdup("/k");
	ck_assert_int_eq(conf_validate(&c, collect, NULL), 1);
	ck_assert_str_eq(msgs[0], "fileserverd: --listen 127.0.0.1:9: the same address as --listen");
	conf_free(&c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, full_file);
	tcase_add_test(tc, errors_have_lines);
	tcase_add_test(tc, key_outside_section);
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, limits_out_of_range);
	tcase_add_test(tc, listen_forms);
	tcase_add_test(tc, listen_status_flags);
	tcase_add_test(tc, sample_is_valid);
	tcase_add_test(tc, dotfiles_and_targets);
	tcase_add_test(tc, syntax_errors);
	tcase_add_test(tc, shutdown_timeout);
	tcase_add_test(tc, listen_flags);
	tcase_add_test(tc, values_keep_their_lines);
	tcase_add_test(tc, symlinks_and_allow);
	tcase_add_test(tc, etag_kinds);
	tcase_add_test(tc, keys_given_twice);
	tcase_add_test(tc, section_headers);
	tcase_add_test(tc, listen_clashes);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = suite);
