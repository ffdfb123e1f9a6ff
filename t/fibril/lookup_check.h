/* Helpers shared by t/fibril/test_lookup_*.c (header-only, static). */
#ifndef T_FIBRIL_LOOKUP_CHECK_H
#define T_FIBRIL_LOOKUP_CHECK_H

#include <check.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fibril/fibril.h"
#include "fibril/async.h"
#include "fibril/lookup.h"
#include "t/tmain.h"

#define TL_FN static __attribute__((unused))

static char tl_dir[256];

TL_FN void tl_rm_rf(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", dir);
}

/* Around the run (.before and .after of TMAIN_SUITE): every test
 * directory goes below one private directory, removed at the end even
 * when a forked test failed before its teardown. Without it the tests
 * still run, in $TMPDIR itself. */
static char tl_run_dir[256];

TL_FN int tl_run_dir_begin(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(tl_run_dir, sizeof(tl_run_dir), "%s/lkrun.XXXXXX",
		 t && *t ? t : "/tmp");
	if (mkdtemp(tl_run_dir))
		setenv("TMPDIR", tl_run_dir, 1);
	else
		tl_run_dir[0] = 0;
	return 0;
}

TL_FN void tl_run_dir_end(void)
{
	if (tl_run_dir[0])
		tl_rm_rf(tl_run_dir);
}

/* A fresh directory under $TMPDIR (or /tmp); removed by tl_teardown. */
TL_FN void tl_setup(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(tl_dir, sizeof(tl_dir), "%s/lktest.XXXXXX", t && *t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tl_dir));
}

TL_FN void tl_teardown(void)
{
	if (tl_dir[0])
		tl_rm_rf(tl_dir);
}

/* The fixture of suites that look up tl_dir through one root, named
 * root: defines it and the setup() and teardown() that open and close
 * it around tl_setup() and tl_teardown(). */
#define TL_ROOT_FIXTURE                                                 \
	static lk_root_t *root;                                         \
	static void setup(void)                                         \
	{                                                               \
		tl_setup();                                             \
		ck_assert_int_eq(lk_root_open(tl_dir, NULL, &root), 0); \
	}                                                               \
	static void teardown(void)                                      \
	{                                                               \
		lk_root_close(root);                                    \
		root = NULL;                                            \
		tl_teardown();                                          \
	}

TL_FN void tl_mkfile(const char *rel, const char *content)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", tl_dir, rel);
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	ck_assert_msg(fd >= 0, "create %s: %s", p, strerror(errno));
	if (content)
		ck_assert_int_eq(write(fd, content, strlen(content)),
				 (long)strlen(content));
	close(fd);
}

TL_FN void tl_mkdir(const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", tl_dir, rel);
	ck_assert_msg(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
}

TL_FN void tl_symlink(const char *target, const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", tl_dir, rel);
	ck_assert_msg(symlink(target, p) == 0, "symlink %s: %s", p,
		      strerror(errno));
}

/* Runs fn(arg) on a fibril with a fresh scheduler and engine, driving
 * both until everything is done. */
TL_FN void tl_run_fibril(void (*fn)(void *), void *arg)
{
	async_engine_t *e;
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
	ck_assert_int_eq(async_engine_create(NULL, &e), 0);
	ck_assert_int_eq(fibril_create(NULL, fn, arg, "test"), 0);
	ck_assert_int_eq(async_engine_run(e), 0);
	async_engine_destroy(e);
	fibril_sched_fini();
}

/* A growable list of names. */
struct tl_names {
	char **v;
	size_t n, cap;
};

TL_FN void tl_names_add(struct tl_names *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		ck_assert_ptr_nonnull(l->v);
	}
	l->v[l->n++] = strdup(s);
}

TL_FN void tl_names_free(struct tl_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* `LC_ALL=C ls -1 <flags> dir` as a list. */
TL_FN void tl_ls(const char *flags, const char *dir, struct tl_names *out)
{
	char cmd[600], line[4096];
	snprintf(cmd, sizeof(cmd), "LC_ALL=C ls -1 %s '%s'", flags, dir);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = 0;
		tl_names_add(out, line);
	}
	ck_assert_int_eq(pclose(p), 0);
}

TL_FN void tl_names_eq(const struct tl_names *got, const struct tl_names *want)
{
	size_t n = got->n < want->n ? got->n : want->n;
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(strcmp(got->v[i], want->v[i]) == 0,
			      "entry %zu: got \"%s\", want \"%s\"", i, got->v[i],
			      want->v[i]);
	ck_assert_uint_eq(got->n, want->n);
}

TL_FN int tl_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

TL_FN void tl_names_sort(struct tl_names *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), tl_strcmp);
}

/* An openat2 of @path beneath @dfd through the engine; *pending says
 * whether it went to a backend (false: it completed inline). */
TL_FN long tl_submit_open(int dfd, const char *path, int flags, bool *pending)
{
	struct open_how how = { .flags = (uint64_t)flags | O_CLOEXEC };
	unsigned long a[4] = { (unsigned long)dfd, (unsigned long)path,
			       (unsigned long)&how, sizeof(how) };
	long res = 0;
	long c = async_submit(0, &res, ASYNC_OPENAT2, a);
	ck_assert_int_ge(c, 0);
	*pending = c > 0;
	return c > 0 ? wait_for_async(c) : res;
}

/* Makes @dir/@sub and an empty file @dir/@file; returns @dir open as a
 * directory. */
TL_FN int tl_dir_with(const char *dir, const char *sub, const char *file)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, sub);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	return dfd;
}

#endif
