/*
 * conf: the values keys take (booleans, sized numbers, names from a
 * list, directory paths) and the file:line report of a bad one.
 */
#include "first.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf_int.h"

void conf__report(struct conf__load *ld, int line, const char *fmt, ...)
{
	char msg[512], full[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(full, sizeof full, "%s:%d: %s", ld->path, line, msg);
	else
		snprintf(full, sizeof full, "%s: %s", ld->path, msg);
	ld->errors++;
	if (ld->err)
		ld->err(ld->arg, full);
}

int conf__parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = true, 0;
		if (!strcasecmp(v, no[i]))
			return *out = false, 0;
	}
	return -EINVAL;
}

/* Unsigned integer in [lo, hi] with an optional k/m/g suffix if @sized. */
int conf__parse_uint(const char *v, unsigned long long lo,
                     unsigned long long hi, bool sized,
                     unsigned long long *out)
{
	unsigned long long n;
	char *end;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno)
		return -EINVAL;
	if (sized && *end) {
		unsigned shift = 0;
		switch (tolower((unsigned char)*end)) {
		case 'k': shift = 10; break;
		case 'm': shift = 20; break;
		case 'g': shift = 30; break;
		default: return -EINVAL;
		}
		if (n > (ULLONG_MAX >> shift))
			return -EINVAL;
		n <<= shift;
		end++;
	}
	if (*end || n < lo || n > hi)
		return -EINVAL;
	*out = n;
	return 0;
}

int conf__pick(const char *v, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcasecmp(v, names[i]))
			return i;
	return -1;
}

/* off | serve | list; the boolean words of older files still mean off
 * and list. */
int conf__parse_dotfiles(const char *v)
{
	bool b;

	if (!strcasecmp(v, "serve"))
		return CONF_DOT_SERVE;
	if (!strcasecmp(v, "list"))
		return CONF_DOT_LIST;
	if (conf__parse_bool(v, &b) == 0)
		return b ? CONF_DOT_LIST : CONF_DOT_OFF;
	return -1;
}

/* "/a//b/" → "/a/b"; refuses "." and ".." segments. */
char *conf__norm_dir(const char *p)
{
	size_t n = strlen(p);
	char *out = malloc(n + 2), *o = out;

	if (!out)
		return NULL;
	*o++ = '/';
	while (*p) {
		const char *seg;
		size_t len;

		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - seg);
		if (!len)
			continue;
		if ((len == 1 && seg[0] == '.') || (len == 2 && !memcmp(seg, "..", 2))) {
			free(out);
			errno = EINVAL;
			return NULL;
		}
		if (o[-1] != '/')
			*o++ = '/';
		memcpy(o, seg, len);
		o += len;
	}
	*o = 0;
	return out;
}

int conf__set_uint(struct conf__load *ld, const char *name, const char *v,
                   unsigned long long lo, unsigned long long hi,
                   bool sized, unsigned long long *out)
{
	if (conf__parse_uint(v, lo, hi, sized, out) < 0) {
		conf__report(ld, ld->line, "%s: expected a number from %llu to %llu%s, got '%s'",
		             name, lo, hi, sized ? " (k/m/g suffix allowed)" : "", v);
		return -1;
	}
	return 0;
}

int conf__set_bool(struct conf__load *ld, const char *name, const char *v, bool *out)
{
	if (conf__parse_bool(v, out) < 0) {
		conf__report(ld, ld->line, "%s: expected on or off, got '%s'", name, v);
		return -1;
	}
	return 0;
}
