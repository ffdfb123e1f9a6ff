/*
 * Private to conf/: the state of one conf_load() and what the files
 * that parse its keys share. conf.c calls conf_value.c, conf_listen.c
 * and conf_links.c; conf_links.c calls conf_value.c; nothing calls back.
 */
#ifndef CONF_INT_H
#define CONF_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "conf/conf.h"

/* State of one conf_load(): libinih does not pass line numbers to the
 * handler in Debian's build (INI_HANDLER_LINENO 0), so our own reader
 * counts lines and checks syntax before inih sees a line. */
struct conf__load {
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

#define BAD(...) do { conf__report(ld, ld->line, __VA_ARGS__); return 1; } while (0)
#define OOM() BAD("out of memory")

/* conf_value.c: values, and errors reported as file:line. */
void conf__report(struct conf__load *ld, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int conf__parse_bool(const char *v, bool *out);
int conf__parse_uint(const char *v, unsigned long long lo,
                     unsigned long long hi, bool sized,
                     unsigned long long *out);
/* The index of @v in @names (@n of them, case-insensitive), or -1. */
int conf__pick(const char *v, const char *const *names, int n);
int conf__parse_dotfiles(const char *v);
char *conf__norm_dir(const char *p);
/* Report what is wrong with @v and return -1, or set *out and return 0. */
int conf__set_uint(struct conf__load *ld, const char *name, const char *v,
                   unsigned long long lo, unsigned long long hi,
                   bool sized, unsigned long long *out);
int conf__set_bool(struct conf__load *ld, const char *name, const char *v, bool *out);

/* conf_links.c: symlinks and allow trees. */
extern const char *const conf__link_policies[4];
void conf__allow_key(struct conf__load *ld, const char *v);

#endif
