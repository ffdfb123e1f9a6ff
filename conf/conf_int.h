/*
 * Private to conf/: the state of one conf_load() and what the files
 * that parse its keys share. conf.c calls conf_read.c, conf_value.c,
 * conf_listen.c and conf_links.c; conf_read.c and conf_links.c call
 * conf_value.c; nothing calls back.
 */
#ifndef CONF_INT_H
#define CONF_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "conf/conf.h"

/* The section a line is in: none yet, one whose header is reported
 * (its keys are skipped), [server], [listing], or [dir] number
 * sect - CONF__SECT_DIR of conf.dirs. */
enum { CONF__SECT_NONE = -2, CONF__SECT_BAD = -1, CONF__SECT_SERVER = 0,
       CONF__SECT_LISTING = 1, CONF__SECT_DIR = 2 };

/* Where a key was set, in the section @sect. */
struct conf__seen {
	int sect;
	int line;
	char key[32];           /* longer names are no key's */
};

/* State of one conf_load(): libinih does not pass line numbers to the
 * handler in Debian's build (INI_HANDLER_LINENO 0), so our own reader
 * counts lines, and follows the section headers (conf_read.c). */
struct conf__load {
	struct conf *c;
	const char *path;
	FILE *f;
	int line;
	int errors;
	bool indented;          /* the line being parsed starts with blanks */
	bool key_since_header;  /* inih then reads an indented line as more
	                           of the last key's value */
	bool unknown;           /* the key just handled is no key of its section */
	char last_key[64];      /* the key of this section's last name=value */
	conf_err_fn *err;
	void *arg;
	char section[256];      /* the last header's name, for messages */
	int sect;               /* ... and what it is: CONF__SECT_* */
	struct conf__seen *seen; /* the single-value keys set so far */
	size_t nseen;
};

#define BAD(...) do { conf__report(ld, ld->line, __VA_ARGS__); return 1; } while (0)
#define OOM() BAD("out of memory")
/* A key its section does not have: reported, and not remembered. */
#define UNKNOWN(...) do { ld->unknown = true; BAD(__VA_ARGS__); } while (0)

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

/* conf_read.c: inih's reader, and the keys each section has set. */
char *conf__reader(char *str, int num, void *stream);
/* The line where the current section set @name, or 0. */
int conf__seen_at(const struct conf__load *ld, const char *name);
void conf__remember(struct conf__load *ld, const char *name);

/* conf_listen.c: reports each listen or status_listen address that an
 * earlier one keeps from being bound; through @cmd (its path the
 * program's name) where neither has a line of the file. */
void conf__check_listen(struct conf__load *ld, struct conf__load *cmd);

/* conf_links.c: symlinks and allow trees. */
extern const char *const conf__link_policies[4];
void conf__allow_key(struct conf__load *ld, const char *v);

#endif
