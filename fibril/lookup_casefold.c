/*
 * The case-insensitive name cache of a root: (directory dev+inode, fold
 * function, folded name) -> the on-disk name a directory read chose.
 * Only hits are kept, never "no such name", so a name created later is
 * found by the next directory read; a hit is confirmed by opening the
 * name, and a name that went away is dropped (lookup_walk.c). Walks run
 * on pool threads, so a mutex guards it. Bounded: past LK__CC_MAX
 * entries the table starts afresh (a server's working set refills it
 * at one directory read per name).
 */
#include "first.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fibril/lookup_int.h"

#define LK__CC_BUCKETS 1024u
#define LK__CC_MAX 16384u

struct lk__cent {
	struct lk__cent *next;
	uint64_t dev, ino;
	lk_fold_fn fold;
	void *fold_arg;
	size_t klen;
	char *name;
	char key[];
};

struct lk__ccache {
	pthread_mutex_t mu;
	unsigned n;
	struct lk__cent *b[LK__CC_BUCKETS];
};

static unsigned lk__cc_hash(const struct lk__ckey *k)
{
	uint64_t h = 1469598103934665603ull ^ k->dev ^ (k->ino * 31);
	for (size_t i = 0; i < k->klen; i++)
		h = (h ^ (unsigned char)k->key[i]) * 1099511628211ull;
	return (unsigned)(h ^ (h >> 29)) % LK__CC_BUCKETS;
}

static bool lk__cc_match(const struct lk__cent *e, const struct lk__ckey *k)
{
	return e->dev == k->dev && e->ino == k->ino && e->fold == k->fold &&
	       e->fold_arg == k->fold_arg && e->klen == k->klen &&
	       memcmp(e->key, k->key, k->klen) == 0;
}

static struct lk__ccache *lk__cc_of(lk_root_t *r)
{
	struct lk__ccache *c = __atomic_load_n(&r->cc, __ATOMIC_ACQUIRE);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	struct lk__ccache *none = NULL;
	if (!__atomic_compare_exchange_n(&r->cc, &none, c, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		pthread_mutex_destroy(&c->mu);
		free(c);
		c = none;
	}
	return c;
}

static void lk__cc_clear(struct lk__ccache *c)
{
	for (unsigned i = 0; i < LK__CC_BUCKETS; i++) {
		while (c->b[i]) {
			struct lk__cent *e = c->b[i];
			c->b[i] = e->next;
			free(e->name);
			free(e);
		}
	}
	c->n = 0;
}

bool lk__cc_get(lk_root_t *r, const struct lk__ckey *k, char *name,
		size_t cap)
{
	struct lk__ccache *c = lk__cc_of(r);
	bool hit = false;

	if (!c)
		return false;
	pthread_mutex_lock(&c->mu);
	for (struct lk__cent *e = c->b[lk__cc_hash(k)]; e; e = e->next) {
		if (lk__cc_match(e, k)) {
			size_t l = strlen(e->name);
			if (l < cap) {
				memcpy(name, e->name, l + 1);
				hit = true;
			}
			break;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void lk__cc_put(lk_root_t *r, const struct lk__ckey *k, const char *name)
{
	struct lk__ccache *c = lk__cc_of(r);
	if (!c)
		return;
	struct lk__cent *n = malloc(sizeof(*n) + k->klen);
	char *nm = strdup(name);
	if (!n || !nm) {
		free(n);
		free(nm);
		return;
	}
	n->dev = k->dev;
	n->ino = k->ino;
	n->fold = k->fold;
	n->fold_arg = k->fold_arg;
	n->klen = k->klen;
	n->name = nm;
	memcpy(n->key, k->key, k->klen);
	unsigned h = lk__cc_hash(k);
	pthread_mutex_lock(&c->mu);
	for (struct lk__cent **pp = &c->b[h]; *pp; pp = &(*pp)->next) {
		if (lk__cc_match(*pp, k)) {
			struct lk__cent *old = *pp;
			*pp = old->next;
			free(old->name);
			free(old);
			c->n--;
			break;
		}
	}
	if (c->n >= LK__CC_MAX)
		lk__cc_clear(c);
	n->next = c->b[h];
	c->b[h] = n;
	c->n++;
	pthread_mutex_unlock(&c->mu);
}

void lk__cc_del(lk_root_t *r, const struct lk__ckey *k)
{
	struct lk__ccache *c = lk__cc_of(r);
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	for (struct lk__cent **pp = &c->b[lk__cc_hash(k)]; *pp;
	     pp = &(*pp)->next) {
		if (lk__cc_match(*pp, k)) {
			struct lk__cent *old = *pp;
			*pp = old->next;
			free(old->name);
			free(old);
			c->n--;
			break;
		}
	}
	pthread_mutex_unlock(&c->mu);
}

void lk__cc_free(struct lk__ccache *c)
{
	if (!c)
		return;
	lk__cc_clear(c);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
