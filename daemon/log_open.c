#include "first.h"

#include "daemon/log_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LO_MAX_LINKS 40

int lo_trust_for(struct lo_trust *t, const char *user, const char *group,
                 char msg[LO_MSG])
{
	t->uid = geteuid();
	t->gid = getegid();
	if (user) {
		struct passwd *pw = getpwnam(user);
		if (!pw) {
			snprintf(msg, LO_MSG, "user %s: no such user", user);
			return -ENOENT;
		}
		t->uid = pw->pw_uid;
		t->gid = pw->pw_gid;
	}
	if (user && group) {
		struct group *gr = getgrnam(group);
		if (!gr) {
			snprintf(msg, LO_MSG, "group %s: no such group", group);
			return -ENOENT;
		}
		t->gid = gr->gr_gid;
	}
	return 0;
}

static bool lo_trusted_uid(const struct lo_trust *t, uid_t uid)
{
	return uid == 0 || uid == t->uid;
}

/* Only root can have put an entry in a directory like this. */
static bool lo_root_only(const struct stat *d)
{
	bool sticky = d->st_mode & S_ISVTX;

	return d->st_uid == 0 &&
	       (!(d->st_mode & S_IWGRP) || d->st_gid == 0 || sticky) &&
	       (!(d->st_mode & S_IWOTH) || sticky);
}

/* The directory a log file lives in: root's or the service user's, and
 * nobody else may add or replace entries (a sticky bit stops others
 * from replacing ours; a name they planted first fails the file checks). */
static int lo_check_dir(const struct stat *d, const struct lo_trust *t,
                        char msg[LO_MSG])
{
	bool sticky = d->st_mode & S_ISVTX;

	if (!lo_trusted_uid(t, d->st_uid)) {
		snprintf(msg, LO_MSG, "its directory is owned by uid %u, "
		         "neither root nor the service user", (unsigned)d->st_uid);
		return -EPERM;
	}
	if (((d->st_mode & S_IWGRP) && !sticky && d->st_gid != 0 &&
	     d->st_gid != t->gid) || ((d->st_mode & S_IWOTH) && !sticky)) {
		snprintf(msg, LO_MSG, "its directory (mode %04o, group %u) is "
		         "writable by others than root and the service user",
		         (unsigned)(d->st_mode & 07777), (unsigned)d->st_gid);
		return -EPERM;
	}
	return 0;
}

#define LO_REST (2 * PATH_MAX)

/* A symbolic link met on the way (@fd, O_PATH, named @name in @dfd): its
 * target takes its place at the head of @rest, before @tail. */
static int lo_follow(int fd, const struct stat *st, int dfd, const char *name,
                     const char *tail, char rest[LO_REST], char msg[LO_MSG])
{
	char link[PATH_MAX], next[LO_REST];
	struct stat ds;
	ssize_t n;
	int len;

	if (fstat(dfd, &ds) < 0 || st->st_uid != 0 || !lo_root_only(&ds)) {
		snprintf(msg, LO_MSG, "symbolic link %s in the path could be "
		         "changed by others than root", name);
		return -ELOOP;
	}
	n = readlinkat(fd, "", link, sizeof link - 1);
	if (n < 0) {
		int err = errno;
		snprintf(msg, LO_MSG, "symbolic link %s: %s", name, strerror(err));
		return -err;
	}
	link[n] = 0;
	len = snprintf(next, sizeof next, "%s/%s", link, tail);
	if (len < 0 || (size_t)len >= sizeof next) {
		snprintf(msg, LO_MSG, "symbolic link %s: path too long", name);
		return -ENAMETOOLONG;
	}
	memcpy(rest, next, (size_t)len + 1);
	return 0;
}

/* Opens the directory @path (O_PATH) one component at a time, following
 * a symbolic link only where nobody but root can have made it. */
static int lo_walk(const char *path, char msg[LO_MSG])
{
	char rest[LO_REST], *p = rest;
	int dfd, links = 0;

	if (strlen(path) >= PATH_MAX) {
		snprintf(msg, LO_MSG, "path too long");
		return -ENAMETOOLONG;
	}
	strcpy(rest, path);
	dfd = open(*p == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		goto fail_errno;
	for (;;) {
		struct stat st;
		char *e, save;
		int fd;

		while (*p == '/')
			p++;
		if (!*p)
			return dfd;
		e = strchrnul(p, '/');
		save = *e;
		*e = 0;
		fd = openat(dfd, p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			int err = errno;
			snprintf(msg, LO_MSG, "directory component %s: %s", p, strerror(err));
			if (fd >= 0)
				close(fd);
			close(dfd);
			return -err;
		}
		if (S_ISDIR(st.st_mode)) {
			close(dfd);
			dfd = fd;
			*e = save;
			p = e;
			continue;
		}
		if (!S_ISLNK(st.st_mode)) {
			snprintf(msg, LO_MSG, "directory component %s: not a directory", p);
			close(fd);
			close(dfd);
			return -ENOTDIR;
		}
		if (++links > LO_MAX_LINKS) {
			snprintf(msg, LO_MSG, "symbolic link %s: %s", p, strerror(ELOOP));
			close(fd);
			close(dfd);
			return -ELOOP;
		}
		int r = lo_follow(fd, &st, dfd, p, save ? e + 1 : "", rest, msg);
		close(fd);
		if (r < 0) {
			close(dfd);
			return r;
		}
		p = rest;
		if (*p == '/') {
			close(dfd);
			dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (dfd < 0)
				goto fail_errno;
		}
	}
fail_errno: {
	int err = errno;
	snprintf(msg, LO_MSG, "%s", strerror(err));
	return -err;
}
}

/* The file itself (from lstat before opening, from fstat after). */
static int lo_check_file(const struct stat *st, const struct stat *dir,
                         const struct lo_trust *t, char msg[LO_MSG])
{
	if (S_ISLNK(st->st_mode)) {
		snprintf(msg, LO_MSG, "is a symbolic link (a log is never opened "
		         "through one)");
		return -ELOOP;
	}
	if (S_ISCHR(st->st_mode) && lo_root_only(dir) && st->st_uid == 0)
		return 0;       /* /dev/null, a console */
	if (!S_ISREG(st->st_mode)) {
		snprintf(msg, LO_MSG, "not a regular file");
		return -EINVAL;
	}
	if (!lo_trusted_uid(t, st->st_uid)) {
		snprintf(msg, LO_MSG, "owned by uid %u, neither root nor the "
		         "service user", (unsigned)st->st_uid);
		return -EPERM;
	}
	if (st->st_nlink > 1) {
		snprintf(msg, LO_MSG, "has %lu hard links (a log must have one)",
		         (unsigned long)st->st_nlink);
		return -EMLINK;
	}
	return 0;
}

/* The one-link check on the descriptor could be passed by a link made
 * in the directory to another file and removed between the open and the
 * check (where fs.protected_hardlinks is 0): the name must still be the
 * file that was opened, after the check. */
static int lo_same_name(int dfd, const char *name, const struct stat *st,
                        char msg[LO_MSG])
{
	struct stat again;

	if (fstatat(dfd, name, &again, AT_SYMLINK_NOFOLLOW) == 0 &&
	    again.st_dev == st->st_dev && again.st_ino == st->st_ino)
		return 0;
	snprintf(msg, LO_MSG, "changed while it was being opened");
	return -ESTALE;
}

int lo_open(const char *path, const struct lo_trust *t, char msg[LO_MSG])
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	char dir[PATH_MAX];
	struct stat ds, st;
	int dfd, fd, r;

	msg[0] = 0;
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		snprintf(msg, LO_MSG, "not a file name");
		return -EISDIR;
	}
	if (slash) {
		size_t n = slash == path ? 1 : (size_t)(slash - path);
		if (n >= sizeof dir) {
			snprintf(msg, LO_MSG, "path too long");
			return -ENAMETOOLONG;
		}
		memcpy(dir, path, n);
		dir[n] = 0;
	} else
		strcpy(dir, ".");
	dfd = lo_walk(dir, msg);
	if (dfd < 0)
		return dfd;
	if (fstat(dfd, &ds) < 0) {
		r = -errno;
		snprintf(msg, LO_MSG, "%s", strerror(-r));
		goto out;
	}
	r = lo_check_dir(&ds, t, msg);
	if (r < 0)
		goto out;
	/* Looked at before opening so that a FIFO or a device is never
	 * opened; checked again on the descriptor, which is what counts. */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		r = lo_check_file(&st, &ds, t, msg);
		if (r < 0)
			goto out;
	} else if (errno != ENOENT) {
		r = -errno;
		snprintf(msg, LO_MSG, "%s", strerror(-r));
		goto out;
	}
	fd = openat(dfd, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
	            O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0640);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			snprintf(msg, LO_MSG, "is a symbolic link (a log is never "
			         "opened through one)");
		else
			snprintf(msg, LO_MSG, "%s", strerror(-r));
		goto out;
	}
	if (fstat(fd, &st) < 0)
		r = -errno;
	else
		r = lo_check_file(&st, &ds, t, msg);
	if (r == 0)
		r = lo_same_name(dfd, name, &st, msg);
	if (r == 0 && fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) < 0)
		r = -errno;
	if (r < 0) {
		if (!msg[0])
			snprintf(msg, LO_MSG, "%s", strerror(-r));
		close(fd);
		goto out;
	}
	r = fd;
out:
	close(dfd);
	return r;
}

/* A link at the end of @cur (@lfd, O_PATH, named @name in @dfd, whose
 * path is @dir): @cur becomes its target, under lo_follow()'s rule. */
static int lo_next(char cur[PATH_MAX], const char *dir, int dfd, int lfd,
                   const struct stat *st, const char *name, char msg[LO_MSG])
{
	char rest[LO_REST];
	size_t n;
	int r = lo_follow(lfd, st, dfd, name, "", rest, msg);

	if (r < 0)
		return r;
	for (n = strlen(rest); n > 1 && rest[n - 1] == '/'; n--)
		rest[n - 1] = 0;
	r = rest[0] == '/' ? snprintf(cur, PATH_MAX, "%s", rest) :
	    snprintf(cur, PATH_MAX, "%s/%s", dir, rest);
	if (r < 0 || r >= PATH_MAX) {
		snprintf(msg, LO_MSG, "symbolic link %s: path too long", name);
		return -ENAMETOOLONG;
	}
	return 0;
}

int lo_open_read(const char *path, int flags, char msg[LO_MSG])
{
	char cur[PATH_MAX], dir[PATH_MAX];

	msg[0] = 0;
	if (strlen(path) >= sizeof cur) {
		snprintf(msg, LO_MSG, "path too long");
		return -ENAMETOOLONG;
	}
	strcpy(cur, path);
	for (int links = 0;; links++) {
		const char *slash = strrchr(cur, '/'), *name = slash ? slash + 1 : cur;
		size_t n = !slash ? 0 : slash == cur ? 1 : (size_t)(slash - cur);
		struct stat st;
		int dfd, fd, r;

		if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
			snprintf(msg, LO_MSG, "not a file name");
			return -EISDIR;
		}
		memcpy(dir, cur, n);
		strcpy(dir + n, n ? "" : ".");
		dfd = lo_walk(dir, msg);
		if (dfd < 0)
			return dfd;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode)) {
			fd = links < LO_MAX_LINKS ?
			     openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
			r = links >= LO_MAX_LINKS ? -ELOOP : fd < 0 ? -errno :
			    lo_next(cur, dir, dfd, fd, &st, name, msg);
			if (fd >= 0)
				close(fd);
			close(dfd);
			if (r < 0) {
				if (!msg[0])
					snprintf(msg, LO_MSG, "%s", strerror(-r));
				return r;
			}
			continue;
		}
		/* O_NOFOLLOW: a link put there since fstatat() fails here */
		fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
		r = fd < 0 ? -errno : fd;
		close(dfd);
		if (r < 0)
			snprintf(msg, LO_MSG, "%s", strerror(-r));
		return r;
	}
}
