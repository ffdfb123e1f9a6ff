/*
 * conf: what inih does not tell its handler. Our reader hands inih one
 * line at a time and counts them, so that every message has its line
 * (Debian's libinih is built without INI_HANDLER_LINENO). It also
 * follows the section headers itself: inih calls the handler for
 * name = value lines only, so a header with no key under it would pass
 * unchecked, and it cuts a section's name at 49 characters. The syntax
 * stays inih's to judge: a line is taken for a header only where inih
 * takes it for one. Last, the keys each section has set, so that one
 * given twice is an error rather than the last value silently winning.
 */
#include "first.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"

/* `dir "/path"` (quotes optional): the index of its conf_dir, made if
 * the path has none yet, or -1 (reported). */
static int begin_dir(struct conf__load *ld, const char *section)
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
		conf__report(ld, ld->line, "[%s]: expected [dir \"/url/path\"]", section);
		return -1;
	}
	memcpy(buf, p, n);
	buf[n] = 0;
	norm = conf__norm_dir(buf);
	if (!norm) {
		conf__report(ld, ld->line, "[%s]: path must not contain '.' or '..' segments", section);
		return -1;
	}
	for (size_t i = 0; i < c->ndirs; i++)
		if (!strcmp(c->dirs[i].path, norm)) {
			free(norm);
			return (int)i;
		}
	d = realloc(c->dirs, (c->ndirs + 1) * sizeof *d);
	if (!d) {
		free(norm);
		conf__report(ld, ld->line, "out of memory");
		return -1;
	}
	c->dirs = d;
	d += c->ndirs;
	d->path = norm;
	d->line = ld->line;
	d->listing = -1;
	d->dotfiles = -1;
	return (int)c->ndirs++;
}

static void begin_section(struct conf__load *ld, const char *name, size_t len)
{
	int i;

	snprintf(ld->section, sizeof ld->section, "%.*s", (int)len, name);
	ld->key_since_header = false;
	if (!strcmp(ld->section, "server"))
		ld->sect = CONF__SECT_SERVER;
	else if (!strcmp(ld->section, "listing"))
		ld->sect = CONF__SECT_LISTING;
	else if (!strncmp(ld->section, "dir", 3) &&
	         (ld->section[3] == ' ' || ld->section[3] == '\t'))
		ld->sect = (i = begin_dir(ld, ld->section)) < 0 ? CONF__SECT_BAD
		                                                 : CONF__SECT_DIR + i;
	else {
		conf__report(ld, ld->line, "unknown section [%s]", ld->section);
		ld->sect = CONF__SECT_BAD;
	}
}

/* The name of the header on @line, as inih reads it, or NULL: a '['
 * first (after a byte order mark on line 1, and blanks, unless those
 * blanks follow a key: then the line is more of its value), the name
 * up to the first ']' that is not after an inline comment (" ;"). */
static const char *header_name(const struct conf__load *ld, const char *line,
                               size_t *len)
{
	const char *p = line, *e;
	bool was_space = false;

	if (ld->line == 1 && !strncmp(p, "\xEF\xBB\xBF", 3))
		p += 3;
	while (isspace((unsigned char)*p))
		p++;
	if (*p != '[' || (p > line && ld->key_since_header))
		return NULL;
	for (e = p + 1; *e && *e != ']' && !(was_space && *e == ';'); e++)
		was_space = isspace((unsigned char)*e);
	if (*e != ']')
		return NULL;
	*len = (size_t)(e - p - 1);
	return p + 1;
}

char *conf__reader(char *str, int num, void *stream)
{
	struct conf__load *ld = stream;
	char line[4096];
	const char *name;
	size_t n, len;

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
		conf__report(ld, ld->line, "line too long (at most %d characters)", num - 2);
		str[0] = '\n';
		str[1] = 0;
		return str;
	}
	ld->indented = line[0] == ' ' || line[0] == '\t';
	if ((name = header_name(ld, line, &len)))
		begin_section(ld, name, len);
	memcpy(str, line, n + 1);
	return str;
}

int conf__seen_at(const struct conf__load *ld, const char *name)
{
	for (size_t i = 0; i < ld->nseen; i++)
		if (ld->seen[i].sect == ld->sect && !strcmp(ld->seen[i].key, name))
			return ld->seen[i].line;
	return 0;
}

void conf__remember(struct conf__load *ld, const char *name)
{
	struct conf__seen *s;

	if (strlen(name) >= sizeof s->key)
		return;
	s = realloc(ld->seen, (ld->nseen + 1) * sizeof *s);
	if (!s) {
		conf__report(ld, ld->line, "out of memory");
		return;
	}
	ld->seen = s;
	s += ld->nseen++;
	s->sect = ld->sect;
	s->line = ld->line;
	strcpy(s->key, name);
}
