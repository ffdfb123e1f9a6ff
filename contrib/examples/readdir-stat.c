/*
 * readdir-stat: the readdir-then-stat loop libfibril is built for
 * (docs/DESIGN.md, "Where the idea comes from"): a readdir loop that
 * stats every entry asynchronously, then one wait_for_async().
 * async_stat() takes the directory fd (the names are relative to it)
 * and a result word; wait_for_async(0) waits for everything the thread
 * has outstanding.
 *
 *   readdir-stat DIR  lists DIR (mode, size, name) and checks every stat
 *   readdir-stat      does the same on a scratch directory of its own,
 *                     as a test: exit 0 pass, 1 fail
 */
#include "first.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fibril/async.h"

struct one_entry {
	struct one_entry *next;
	char name[256];
	struct statx stat_buf;
	long result;
};

static struct one_entry *list_dir(const char *path)
{
	DIR *dir = opendir(path);
	if (!dir) {
		perror(path);
		exit(1);
	}
	int dfd = dirfd(dir);

	/* ---- the loop: one async_stat() per entry as readdir() returns
	 * it, nothing waited for inside, then one wait for all of them ---- */
	struct one_entry *prev = NULL;
	struct dirent *de;

	while ((de = readdir(dir)) != NULL) {
		struct one_entry *entry = malloc(sizeof(*entry));

		/* Add it to the list, fill in the name */
		entry->next = prev;
		prev = entry;
		strcpy(entry->name, de->d_name);

		/* Do the stat lookup async */
		async_stat(dfd, entry->name, &entry->stat_buf, &entry->result);
	}
	wait_for_async(0);
	/* every entry's stat_buf and result are filled in now */
	/* ---- end of the loop ---- */

	closedir(dir);
	return prev;
}

/* Every entry's async stat must match a plain statx of it now. */
static int check(const char *path, struct one_entry *list, int print)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY);
	int n = 0, bad = 0;

	for (struct one_entry *e = list; e; e = e->next, n++) {
		struct statx ref;
		const struct statx *s = &e->stat_buf;
		if (statx(dfd, e->name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS,
		          &ref) != 0) {
			fprintf(stderr, "%s: statx: %s\n", e->name, strerror(errno));
			bad++;
			continue;
		}
		if (e->result != 0 || s->stx_ino != ref.stx_ino ||
		    s->stx_mode != ref.stx_mode || s->stx_size != ref.stx_size ||
		    s->stx_nlink != ref.stx_nlink || s->stx_uid != ref.stx_uid ||
		    s->stx_gid != ref.stx_gid ||
		    s->stx_mtime.tv_sec != ref.stx_mtime.tv_sec ||
		    s->stx_mtime.tv_nsec != ref.stx_mtime.tv_nsec) {
			fprintf(stderr, "%s: result %ld ino %llu/%llu mode %o/%o "
			        "size %llu/%llu\n", e->name, e->result,
			        (unsigned long long)s->stx_ino,
			        (unsigned long long)ref.stx_ino, s->stx_mode,
			        ref.stx_mode, (unsigned long long)s->stx_size,
			        (unsigned long long)ref.stx_size);
			bad++;
		}
		if (print)
			printf("%06o %10llu %s\n", s->stx_mode,
			       (unsigned long long)s->stx_size, e->name);
	}
	close(dfd);
	if (print)
		fprintf(stderr, "%d entries, %d mismatches\n", n, bad);
	return bad ? -1 : n;
}

/* More entries than the default parallelism limit (4096), so that a
 * stat submitted while 4096 are in flight, which async_submit() runs
 * synchronously on the caller and reports done at once, can be checked
 * as well as the ones completed asynchronously. */
#define NSCRATCH 5000

static void scratch(char *dir, int make)
{
	char name[64];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < NSCRATCH; i++) {
		snprintf(name, sizeof(name), "e%04d", i);
		if (!make) {
			unlinkat(dfd, name, i % 10 == 1 ? AT_REMOVEDIR : 0);
			continue;
		}
		switch (i % 10) {
		case 1:
			mkdirat(dfd, name, 0755);
			break;
		case 2:
			if (symlinkat("e0000", dfd, name) != 0)
				perror("symlinkat");
			break;
		case 3:
			mkfifoat(dfd, name, 0600);
			break;
		default: {
			int fd = openat(dfd, name, O_CREAT | O_WRONLY, 0640);
			if (fd >= 0) {
				if (ftruncate(fd, i) != 0)
					perror("ftruncate");
				close(fd);
			}
		}
		}
	}
	close(dfd);
	if (!make)
		rmdir(dir);
}

int main(int argc, char **argv)
{
	async_engine_t *e;
	/* A private parent, so that ".." does not change under us while
	 * other tests create files in /tmp. */
	char parent[] = "/tmp/readdir-stat.XXXXXX";
	char dir[sizeof(parent) + 2];
	const char *path = argc > 1 ? argv[1] : dir;

	if (async_engine_create(NULL, &e) < 0) {
		fprintf(stderr, "readdir-stat: no async engine\n");
		return 1;
	}
	if (argc < 2) {
		if (!mkdtemp(parent)) {
			perror("mkdtemp");
			return 1;
		}
		snprintf(dir, sizeof(dir), "%s/d", parent);
		if (mkdir(dir, 0755) != 0) {
			perror(dir);
			return 1;
		}
		scratch(dir, 1);
	}
	struct one_entry *list = list_dir(path);
	int n = check(path, list, argc > 1);
	while (list) {
		struct one_entry *next = list->next;
		free(list);
		list = next;
	}
	async_engine_destroy(e);
	if (argc < 2) {
		scratch(dir, 0);
		rmdir(parent);
		if (n != NSCRATCH + 2) {
			fprintf(stderr, "readdir-stat: %d entries checked, want %d\n", n,
			        NSCRATCH + 2);
			return 1;
		}
	}
	return n < 0 ? 1 : 0;
}
