/*
 * conf: listen addresses (ADDR:PORT, [IPV6]:PORT, PORT) and their
 * flags (ssl, status), and the pairs of them that cannot both be bound.
 */
#include "first.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"

static int parse_port(const char *s, in_port_t *out)
{
	char *end;
	long v;

	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 65535)
		return -EINVAL;
	*out = htons((in_port_t)v);
	return 0;
}

static int parse_addr(const char *text, struct sockaddr_storage *ss,
                      socklen_t *len);

/* The address is what comes before the first blank: flags follow it. */
int conf_parse_listen(const char *text, struct sockaddr_storage *ss,
                      socklen_t *len)
{
	char addr[INET6_ADDRSTRLEN + 16];
	size_t n = strcspn(text, " \t");

	if (n >= sizeof addr)
		return -EINVAL;
	memcpy(addr, text, n);
	addr[n] = 0;
	return parse_addr(addr, ss, len);
}

static int parse_addr(const char *text, struct sockaddr_storage *ss,
                      socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *port;
	in_port_t p;

	memset(ss, 0, sizeof *ss);
	if (text[0] == '[') {
		const char *rb = strchr(text, ']');
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (!rb || rb[1] != ':' || (size_t)(rb - text - 1) >= sizeof host)
			return -EINVAL;
		memcpy(host, text + 1, (size_t)(rb - text - 1));
		host[rb - text - 1] = 0;
		if (parse_port(rb + 2, &p) < 0 ||
		    inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = p;
		*len = sizeof *s6;
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	colon = strrchr(text, ':');
	if (!colon) {
		host[0] = 0;
		port = text;
	} else {
		if ((size_t)(colon - text) >= sizeof host)
			return -EINVAL;
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = 0;
		port = colon + 1;
	}
	if (parse_port(port, &p) < 0)
		return -EINVAL;
	s4->sin_family = AF_INET;
	s4->sin_port = p;
	if (!host[0] || !strcmp(host, "*"))
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (!strcmp(host, "localhost"))
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	*len = sizeof *s4;
	return 0;
}

/* One flag of a listen value; false for an unknown word. */
static bool listen_flag(struct conf_listen *l, const char *word, size_t len)
{
	if (len == 3 && !memcmp(word, "ssl", 3))
		l->ssl = true;      /* nginx's way: "0.0.0.0:443 ssl" */
	else if (len == 6 && !memcmp(word, "status", 6))
		l->status = true;
	else
		return false;
	return true;
}

static int add_listen(struct conf *c, const char *text, bool status_only)
{
	struct conf_listen *l, nl = { .status = status_only, .status_only = status_only };
	size_t alen = strcspn(text, " \t");
	const char *p = text + alen;

	if (status_only && p[strspn(p, " \t")])
		return -EINVAL;
	while (*p) {
		size_t n;
		p += strspn(p, " \t");
		n = strcspn(p, " \t");
		if (n && !listen_flag(&nl, p, n))
			return -ENOENT;
		p += n;
	}
	nl.text = strndup(text, alen);
	if (!nl.text)
		return -ENOMEM;
	if (conf_parse_listen(text, &nl.addr, &nl.addrlen) < 0) {
		free(nl.text);
		return -EINVAL;
	}
	l = realloc(c->listen, (c->nlisten + 1) * sizeof *l);
	if (!l) {
		free(nl.text);
		return -ENOMEM;
	}
	c->listen = l;
	l[c->nlisten++] = nl;
	return 0;
}

int conf_add_listen(struct conf *c, const char *text)
{
	return add_listen(c, text, false);
}

int conf_add_status_listen(struct conf *c, const char *text)
{
	return add_listen(c, text, true);
}

/* Whether @a and @b cannot both be bound, one socket each (SO_REUSEADDR,
 * IPV6_V6ONLY: daemon/priv.c): the same address and port, or a port
 * taken on every address and on one of them. Port 0 takes a free port
 * for each. *same: the very same address. */
static bool listen_clash(const struct conf_listen *a, const struct conf_listen *b,
                         bool *same)
{
	if (a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)&a->addr, *y = (const void *)&b->addr;
		if (x->sin_port != y->sin_port || !x->sin_port)
			return false;
		*same = x->sin_addr.s_addr == y->sin_addr.s_addr;
		return *same || x->sin_addr.s_addr == htonl(INADDR_ANY) ||
		       y->sin_addr.s_addr == htonl(INADDR_ANY);
	}
	const struct sockaddr_in6 *x = (const void *)&a->addr, *y = (const void *)&b->addr;
	if (x->sin6_port != y->sin6_port || !x->sin6_port)
		return false;
	*same = IN6_ARE_ADDR_EQUAL(&x->sin6_addr, &y->sin6_addr);
	return *same || IN6_IS_ADDR_UNSPECIFIED(&x->sin6_addr) ||
	       IN6_IS_ADDR_UNSPECIFIED(&y->sin6_addr);
}

/* How a message names @l: its key and line, or where it came from. */
static void listen_origin(const struct conf_listen *l, char *out, size_t n)
{
	if (l->line > 0)
		snprintf(out, n, "%s at line %d", l->status_only ? "status_listen" : "listen",
		         l->line);
	else
		snprintf(out, n, "%s", l->line < 0 ? "the default listen" : "--listen");
}

void conf__check_listen(struct conf__load *ld, struct conf__load *cmd)
{
	const struct conf *c = ld->c;

	for (size_t j = 1; j < c->nlisten; j++)
		for (size_t i = 0; i < j; i++) {
			const struct conf_listen *a = &c->listen[i], *b = &c->listen[j];
			char key[64], other[64];
			bool same;

			if (!listen_clash(a, b, &same))
				continue;
			/* at the later one's line if it has one, else the other's */
			if (b->line <= 0 && a->line > 0) {
				a = b;
				b = &c->listen[i];
			}
			listen_origin(a, other, sizeof other);
			if (b->line > 0)
				snprintf(key, sizeof key, "%s", b->status_only ? "status_listen" : "listen");
			else
				snprintf(key, sizeof key, "%s", b->line < 0 ? "default listen" : "--listen");
			if (same)
				conf__report(b->line > 0 ? ld : cmd, b->line, "%s %s: the same "
				             "address as %s", key, b->text, other);
			else
				conf__report(b->line > 0 ? ld : cmd, b->line, "%s %s: the same port "
				             "as %s (%s), one of them on every address", key, b->text,
				             other, a->text);
			break;
		}
}
