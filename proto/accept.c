#include "first.h"

#include "proto/accept.h"

#include <string.h>
#include <strings.h>

/* One list element: [s, e) is its value without parameters; *q its
 * weight in thousandths. Returns the position after the element. */
static const char *element(const char *p, const char **s, const char **e, int *q)
{
	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	*s = p;
	while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
		p++;
	*e = p;
	*q = 1000;
	while (*p && *p != ',') {
		if (*p != ';') {
			p++;
			continue;
		}
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if ((*p == 'q' || *p == 'Q') && p[1] == '=') {
			/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) */
			const char *v = p + 2;
			int val = 0, digits = 0;
			bool ok = *v == '0' || *v == '1';

			if (ok) {
				val = (*v++ - '0') * 1000;
				if (*v == '.') {
					v++;
					for (int m = 100; *v >= '0' && *v <= '9'; v++, m /= 10) {
						if (++digits > 3) {
							ok = false;
							break;
						}
						val += (*v - '0') * m;
					}
				}
				if (*v && *v != ',' && *v != ';' && *v != ' ' && *v != '\t')
					ok = false;
				if (val > 1000)
					ok = false;
			}
			*q = ok ? val : 0;
		}
		while (*p && *p != ',' && *p != ';')
			p++;
	}
	return p;
}

static bool same_coding(const char *s, size_t len, const char *coding)
{
	const char *alias = !strcasecmp(coding, "gzip") ? "x-gzip"
	                  : !strcasecmp(coding, "x-gzip") ? "gzip"
	                  : !strcasecmp(coding, "compress") ? "x-compress"
	                  : !strcasecmp(coding, "x-compress") ? "compress" : NULL;

	return (strlen(coding) == len && !strncasecmp(s, coding, len)) ||
	       (alias && strlen(alias) == len && !strncasecmp(s, alias, len));
}

int proto_accept_encoding_q(const char *ae, const char *coding)
{
	int exact = -1, star = -1;

	if (!ae)
		return -1;
	for (const char *p = ae; *p;) {
		const char *s, *e;
		int q;

		p = element(p, &s, &e, &q);
		if (e == s)
			continue;
		if (same_coding(s, (size_t)(e - s), coding))
			exact = exact < 0 ? q : (q > exact ? q : exact);
		else if (e - s == 1 && *s == '*')
			star = q;
	}
	return exact >= 0 ? exact : star;
}

bool proto_accepts_encoding(const char *ae, const char *coding)
{
	return proto_accept_encoding_q(ae, coding) > 0;
}

int proto_accept_q(const char *accept, const char *type, const char *sub)
{
	size_t tl = strlen(type), sl = strlen(sub);
	int best = -1, qbest = -1;

	if (!accept)
		return -1;
	for (const char *p = accept; *p;) {
		const char *s, *e, *slash;
		int q, spec = -1;

		p = element(p, &s, &e, &q);
		slash = memchr(s, '/', (size_t)(e - s));
		if (!slash)
			continue;
		if (slash - s == 1 && *s == '*' && e - slash == 2 && slash[1] == '*')
			spec = 0;
		else if ((size_t)(slash - s) == tl && !strncasecmp(s, type, tl)) {
			if (e - slash == 2 && slash[1] == '*')
				spec = 1;
			else if ((size_t)(e - slash - 1) == sl &&
			         !strncasecmp(slash + 1, sub, sl))
				spec = 2;
		}
		if (spec > best) {
			best = spec;
			qbest = q;
		}
	}
	return qbest;
}
