/*
 * conf: the symlinks policy's names and the allow trees (allow = PATH
 * [PATH...]) symlinks may lead into.
 */
#include "first.h"

#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"

/* In the order of enum conf_symlinks. */
const char *const conf__link_policies[] = { "beneath", "follow", "if_owner_match", "never" };

/* One allow path (@n bytes at @p), absolute, kept normalised. */
static int add_allow(struct conf__load *ld, const char *p, size_t n)
{
	struct conf *c = ld->c;
	char buf[4096];
	struct conf_allow *a;

	if (n >= sizeof buf || p[0] != '/') {
		conf__report(ld, ld->line, "allow: expected an absolute directory path, got '%.*s'",
		             (int)(n > 200 ? 200 : n), p);
		return -1;
	}
	memcpy(buf, p, n);
	buf[n] = 0;
	char *norm = conf__norm_dir(buf);
	if (!norm) {
		conf__report(ld, ld->line, "allow: '%s': '.' and '..' segments are not allowed", buf);
		return -1;
	}
	a = realloc(c->allow, (c->nallow + 1) * sizeof *a);
	if (!a) {
		free(norm);
		conf__report(ld, ld->line, "out of memory");
		return -1;
	}
	c->allow = a;
	c->allow[c->nallow++] = (struct conf_allow){ .path = norm, .line = ld->line };
	return 0;
}

/* allow = PATH [PATH...]: separated by blanks, each may be quoted
 * ("/mnt/my data"); the key may be repeated. */
void conf__allow_key(struct conf__load *ld, const char *v)
{
	if (!*v) {
		conf__report(ld, ld->line, "allow: empty value");
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
				conf__report(ld, ld->line, "allow: unterminated quote in '%s'", v);
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
