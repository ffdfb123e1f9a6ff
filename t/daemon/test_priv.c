#include "first.h"

/*
 * The root helper of daemon/priv.c, as the daemon uses it: started as
 * root, then the process switches to nobody and asks. It must open and
 * bind what the configuration file names, as it is now, and nothing
 * else: no other file, no write access, no FIFO that would hang it, no
 * other port.
 */

#include "daemon/priv.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t/tmain.h"

static char dir[64], cfg[128], key[128], other[128], fifo[128];
static char svc[128], planted[160], rootlink[128];
static int low, low2;

static int write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	return chmod(path, mode);
}

/* A free loopback port below 1024, other than @not. */
static int free_low_port(int not)
{
	for (int p = 1023; p > 600; p--) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((in_port_t)p),
		                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int ok = p != not && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
		close(fd);
		if (ok)
			return p;
	}
	return -1;
}

static void write_conf(const char *named)
{
	char text[1024];

	snprintf(text, sizeof text, "[server]\nuser = nobody\nlisten = 127.0.0.1:%d\n"
	         "ssl_certificate = %s\nssl_certificate_key = %s\nroot = %s\n"
	         "mime_types = %s\n", low, named, fifo, dir, other);
	ck_assert_int_eq(write_file(cfg, text, 0644), 0);
}

static void start_helper(void)
{
	struct conf c;

	write_conf(key);
	ck_assert_int_eq(conf_init(&c), 0);
	ck_assert_int_eq(conf_load(&c, cfg, NULL, NULL), 0);
	ck_assert_int_eq(fsd_priv_start(cfg, NULL, 0, &c), 0);
	ck_assert(fsd_priv_running());
	conf_free(&c);
}

/* The helper is started as root, then this process becomes nobody. */
static void start_as_nobody(void)
{
	struct passwd *pw = getpwnam("nobody");

	ck_assert_ptr_nonnull(pw);
	start_helper();
	ck_assert_int_eq(setgroups(1, &pw->pw_gid), 0);
	ck_assert_int_eq(setgid(pw->pw_gid), 0);
	ck_assert_int_eq(setuid(pw->pw_uid), 0);
}

START_TEST(opens_what_the_file_names)
{
	char buf[16] = "";
	int fd;

	start_as_nobody();
	ck_assert_int_eq(open(key, O_RDONLY), -1);      /* nobody cannot */
	fd = fsd_priv_open(key, O_RDONLY, NULL);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof buf - 1), 7);
	ck_assert_str_eq(buf, "secret\n");
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	/* the file is read again on each request */
	ck_assert_int_eq(fsd_priv_open(other, O_RDONLY, NULL), -EPERM);
	fsd_priv_stop();
}
END_TEST

START_TEST(refuses_the_rest)
{
	start_as_nobody();
	ck_assert_int_eq(fsd_priv_open(other, O_RDONLY, NULL), -EPERM);
	ck_assert_int_eq(fsd_priv_open("/etc/shadow", O_RDONLY, NULL), -EPERM);
	ck_assert_int_eq(fsd_priv_open(key, O_RDWR, NULL), -EPERM);
	ck_assert_int_eq(fsd_priv_open(key, O_WRONLY | O_APPEND, NULL), -EPERM);
	ck_assert_int_eq(fsd_priv_open(key, O_RDONLY | O_CREAT, NULL), -EPERM);
	/* named, but a FIFO: refused at once (opening it must not block) */
	ck_assert_int_eq(fsd_priv_open(fifo, O_RDONLY, NULL), -EINVAL);
	/* the same file by another name */
	char alias[160];
	snprintf(alias, sizeof alias, "%s/./key.pem", dir);
	ck_assert_int_eq(fsd_priv_open(alias, O_RDONLY, NULL), -EPERM);
	fsd_priv_stop();
}
END_TEST

START_TEST(binds_what_the_file_names)
{
	struct conf_listen l = { 0 };
	char text[32];
	int fd;

	start_as_nobody();
	snprintf(text, sizeof text, "127.0.0.1:%d", low);
	l.text = text;
	ck_assert_int_eq(conf_parse_listen(text, &l.addr, &l.addrlen), 0);
	fd = fsd_priv_bind(&l, NULL);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	ck_assert_int_eq(ntohs(sa.sin_port), low);
	close(fd);

	snprintf(text, sizeof text, "127.0.0.1:%d", low2);
	ck_assert_int_eq(conf_parse_listen(text, &l.addr, &l.addrlen), 0);
	ck_assert_int_eq(fsd_priv_bind(&l, NULL), -EPERM);
	fsd_priv_stop();
}
END_TEST

START_TEST(follows_the_file)
{
	int fd;

	start_helper();
	ck_assert_int_eq(fsd_priv_open(other, O_RDONLY, NULL), -EPERM);
	/* root edits the file (a reload is coming): it names other now */
	write_conf(other);
	fd = fsd_priv_open(other, O_RDONLY, NULL);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(fsd_priv_open(key, O_RDONLY, NULL), -EPERM);
	fsd_priv_stop();
}
END_TEST

/* The configuration names a file in a directory the service user owns:
 * that user must not make the helper open something else through a
 * symbolic link put there; a link root made where only root writes
 * (certbot's live/ → archive/) is followed. */
START_TEST(follows_root_links_only)
{
	struct passwd *pw = getpwnam("nobody");
	char buf[16] = "";
	int fd;

	ck_assert_ptr_nonnull(pw);
	start_helper();
	write_conf(rootlink);
	fd = fsd_priv_open(rootlink, O_RDONLY, NULL);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof buf - 1), 7);
	ck_assert_str_eq(buf, "secret\n");
	close(fd);

	write_conf(planted);
	ck_assert_int_eq(setgroups(1, &pw->pw_gid), 0);
	ck_assert_int_eq(setgid(pw->pw_gid), 0);
	ck_assert_int_eq(setuid(pw->pw_uid), 0);
	ck_assert_int_eq(symlink(key, planted), 0);
	ck_assert_int_eq(fsd_priv_open(planted, O_RDONLY, NULL), -ELOOP);
	fsd_priv_stop();
}
END_TEST

/* A refusal comes back with the helper's reason, not a bare errno: the
 * daemon's message must say what is wrong with the file. */
START_TEST(says_why)
{
	struct conf_listen l = { 0 };
	char why[LO_MSG], text[32];
	struct passwd *pw = getpwnam("nobody");

	ck_assert_ptr_nonnull(pw);
	start_helper();
	ck_assert_int_eq(fsd_priv_open(other, O_RDONLY, why), -EPERM);
	ck_assert_str_eq(why, "not named by ssl_certificate or ssl_certificate_key");
	write_conf(dir);
	ck_assert_int_eq(fsd_priv_open(dir, O_RDONLY, why), -EISDIR);
	ck_assert_str_eq(why, "is a directory");
	write_conf(fifo);
	ck_assert_int_eq(fsd_priv_open(fifo, O_RDONLY, why), -EINVAL);
	ck_assert_str_eq(why, "not a regular file");
	snprintf(text, sizeof text, "127.0.0.1:%d", low2);
	l.text = text;
	ck_assert_int_eq(conf_parse_listen(text, &l.addr, &l.addrlen), 0);

	write_conf(planted);
	ck_assert_int_eq(setgroups(1, &pw->pw_gid), 0);
	ck_assert_int_eq(setgid(pw->pw_gid), 0);
	ck_assert_int_eq(setuid(pw->pw_uid), 0);
	ck_assert_int_eq(fsd_priv_bind(&l, why), -EPERM);
	ck_assert_str_eq(why, "not named in the configuration");
	unlink(planted);
	ck_assert_int_eq(symlink(key, planted), 0);
	ck_assert_int_eq(fsd_priv_open(planted, O_RDONLY, why), -ELOOP);
	ck_assert_str_eq(why, "symbolic link key.pem in the path could be changed "
	                 "by others than root");
	fsd_priv_stop();
}
END_TEST

static void after(void)
{
	unlink(planted);
	rmdir(svc);
	unlink(rootlink);
	unlink(cfg);
	unlink(key);
	unlink(other);
	unlink(fifo);
	rmdir(dir);
}

static int before(void)
{
	if (geteuid() != 0 || !getpwnam("nobody")) {
		printf("SKIP: needs root and a user nobody\n");
		return 77;
	}
	low = free_low_port(-1);
	low2 = free_low_port(low);
	if (low < 0 || low2 < 0) {
		printf("SKIP: no free port below 1024\n");
		return 77;
	}
	snprintf(dir, sizeof dir, "/tmp/test_priv.XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
		return 99;
	snprintf(cfg, sizeof cfg, "%s/c.conf", dir);
	snprintf(key, sizeof key, "%s/key.pem", dir);
	snprintf(other, sizeof other, "%s/other.pem", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(svc, sizeof svc, "%s/svc", dir);
	snprintf(planted, sizeof planted, "%s/key.pem", svc);
	snprintf(rootlink, sizeof rootlink, "%s/live.pem", dir);
	if (write_file(key, "secret\n", 0600) < 0 ||
	    write_file(other, "other\n", 0600) < 0 || mkfifo(fifo, 0600) < 0 ||
	    mkdir(svc, 0755) < 0 || chown(svc, getpwnam("nobody")->pw_uid, 0) < 0 ||
	    symlink("key.pem", rootlink) < 0) {
		after();
		return 99;
	}
	return 0;
}

static Suite *suite(void)
{
	const TTest *tests[] = { opens_what_the_file_names, refuses_the_rest,
	                         binds_what_the_file_names, follows_the_file,
	                         follows_root_links_only, says_why };
	return tmain_one_tcase("priv", tests, sizeof tests / sizeof *tests);
}

TMAIN_SUITE(.suite = suite, .before = before, .after = after);
