#include "first.h"

/*
 * A cached listing brought up to date by the names its events name
 * (lcache_int.h), instead of a new fill: a file made in a directory of
 * 100,000 costs one watch and one stat, not 100,000 of each.
 *
 * Why it stays correct: every name an event names is stat'ed again
 * after that event was read, and any later change is an event of its
 * own, read before the listing is used. A name that may now lead to
 * another inode (made, moved in, or its inode gone) is watched again,
 * and the watch linked, before its stat, as a fill watches its names;
 * a name whose stat comes back ENOENT leaves the records. Events on the
 * directory itself (its attributes, its removal), a queue overflow or a
 * mount change still drop the listing (lcache.c), and so does anything
 * a fill would not keep (a symlink whose target is shown, a mount
 * point, a failed stat).
 */

#include "daemon/lcache_int.h"
#include "daemon/fcache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <fibril/async.h>
#include <fibril/lookup.h>

/* Events noted at most before a patch (a file written is two, the
 * directory's and its own): past it, a scan costs less. */
#define LCP_PEND_MAX 1024u

/* ---- the entries' watches by name ---- */

/* A removed slot: a search goes on past it. */
static struct lc_ent lcp_gone;

static struct lc_ent **slot_of(struct lc_dir *d, const char *name)
{
	struct lc_ent **free_slot = NULL;

	for (size_t i = lc_hash(name) & (d->hcap - 1);; i = (i + 1) & (d->hcap - 1)) {
		struct lc_ent *e = d->htab[i];
		if (!e)
			return free_slot ? free_slot : &d->htab[i];
		if (e == &lcp_gone) {
			if (!free_slot)
				free_slot = &d->htab[i];
		} else if (!strcmp(e->name, name)) {
			return &d->htab[i];
		}
	}
}

static struct lc_ent *ent_find(struct lc_dir *d, const char *name)
{
	struct lc_ent *e = *slot_of(d, name);

	return e == &lcp_gone ? NULL : e;
}

static int hash_put(struct lc_dir *d, struct lc_ent *e);

/* Room for one more, the removed slots cleared: a table at most half
 * full of names and removed slots. */
static int hash_room(struct lc_dir *d)
{
	if (d->htab && 2 * (d->hused + 1) <= d->hcap)
		return 0;
	struct lc_ent **old = d->htab;
	size_t ocap = d->hcap, live = 0;

	for (size_t i = 0; i < ocap; i++)
		live += old[i] && old[i] != &lcp_gone;
	size_t cap = 64;
	while (cap < 2 * (live + 1) + live / 2)
		cap *= 2;
	if (!(d->htab = calloc(cap, sizeof *d->htab))) {
		d->htab = old;
		return -ENOMEM;
	}
	d->hcap = cap;
	d->hused = 0;
	for (size_t i = 0; i < ocap; i++)
		if (old[i] && old[i] != &lcp_gone)
			hash_put(d, old[i]);
	free(old);
	return 0;
}

/* @e the watch of its name from now on. */
static int hash_put(struct lc_dir *d, struct lc_ent *e)
{
	if (hash_room(d) < 0)
		return -ENOMEM;
	struct lc_ent **s = slot_of(d, e->name);
	if (!*s)
		d->hused++;
	*s = e;
	return 0;
}

static void hash_del(struct lc_dir *d, const char *name)
{
	struct lc_ent **s = slot_of(d, name);

	if (*s && *s != &lcp_gone)
		*s = &lcp_gone;
}

/* The fill's watches, by name: made at the first patch only, on a pool
 * thread (fibril_call()). */
static long hash_job(void *arg)
{
	struct lc_dir *d = arg;

	for (size_t i = 0; i < d->nents; i++)
		if (d->ents[i].dep.w && hash_put(d, &d->ents[i]) < 0)
			return -ENOMEM;
	return hash_room(d);
}

/* ---- noting ---- */

static bool shown(const struct lc_dir *d, const char *name)
{
	return name[0] != '.' || (d->flags & LK_SCAN_DOTFILES);
}

bool lcp_note(struct lc_dir *d, struct fcw_dep *dep)
{
	uint32_t mask;
	const char *name;
	bool renew;

	fcw_event(&mask, &name);
	if (dep == &d->ddep) {
		if (!name)
			return false;       /* the directory's own */
		renew = mask & (IN_CREATE | IN_MOVED_TO);
	} else {
		struct lc_ent *e = (struct lc_ent *)dep;
		name = e->name;
		/* (its inode gone: the name, if any, leads elsewhere) */
		renew = mask & (IN_IGNORED | IN_DELETE_SELF);
	}
	if (!shown(d, name))
		return true;
	if (d->npend == LCP_PEND_MAX)
		return false;
	if (d->npend == d->cappend) {
		size_t cap = d->cappend ? d->cappend * 2 : 8;
		struct lc_pend *v = realloc(d->pend, cap * sizeof *v);
		if (!v)
			return false;
		d->pend = v;
		d->cappend = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return false;
	d->pend[d->npend++] = (struct lc_pend){ .name = copy, .renew = renew };
	return true;
}

/* ---- the stats, on a pool thread ---- */

struct lcp_item {
	char *name;
	bool watch;                 /* watched anew before the stat */
	int wd;                     /* the watch added, or -1 */
	int err;                    /* the stat's */
	ptrdiff_t at;               /* its record (rec_find()), on the worker */
	struct statx stx;
};

struct lcp_job {
	int ifd, dirfd;
	bool stat;                  /* the second step: the stats */
	size_t n;
	struct lcp_item *it;
};

/* First the new watches, then (after the worker linked them) the
 * stats: a stat taken before its watch reports could miss a change
 * made in between, whose event went to the watch's other dependents
 * (an inode already watched through another name returns the same
 * descriptor, whose events are then not counted as lost). */
static long job_run(void *arg)
{
	struct lcp_job *j = arg;

	for (size_t i = 0; i < j->n; i++) {
		struct lcp_item *it = &j->it[i];
		if (!j->stat) {
			it->wd = -1;
			if (it->watch) {
				int wd = fcw_add_entry_watch(j->ifd, j->dirfd, it->name);
				if (wd < 0)
					it->err = wd;
				else
					it->wd = wd;
			}
		} else if (!it->err &&
		           statx(j->dirfd, it->name, AT_SYMLINK_NOFOLLOW,
		                 STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME,
		                 &it->stx) < 0) {
			it->err = -errno;
		}
	}
	return 0;
}

/* ---- applying ---- */

static int pend_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lc_pend *)a)->name, ((const struct lc_pend *)b)->name);
}

/* The record of @name, or where it would go (as ~index). */
static ptrdiff_t rec_find(const struct lc_dir *d, const char *name)
{
	size_t lo = 0, hi = d->nrec;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(d->recs[mid].name, name);
		if (!c)
			return (ptrdiff_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return ~(ptrdiff_t)lo;
}

/* Room for @more bytes of names: the arena moved, the records follow;
 * more than half of it names removed, the live ones copied anew. */
static int names_room(struct lc_dir *d, size_t more)
{
	bool compact = d->names_dead > d->names_len / 2;

	if (!compact && d->names_len + more <= d->names_cap)
		return 0;
	size_t need = (compact ? d->names_len - d->names_dead : d->names_len) + more;
	size_t cap = d->names_cap ? d->names_cap : 4096;
	while (cap < need)
		cap *= 2;
	while (compact && cap / 4 > need && cap > 4096)
		cap /= 2;
	char *v = malloc(cap);
	if (!v)
		return -ENOMEM;
	size_t len = 0;
	for (size_t i = 0; i < d->nrec; i++) {
		memcpy(v + len, d->recs[i].name, d->recs[i].namelen + 1);
		d->recs[i].name = v + len;
		len += d->recs[i].namelen + 1;
	}
	free(d->names);
	d->names = v;
	d->names_len = len;
	d->names_cap = cap;
	d->names_dead = 0;
	return 0;
}

static void rec_set(struct lc_rec *r, const struct statx *s)
{
	r->mode = s->stx_mode;
	r->size = s->stx_size;
	r->mtime = s->stx_mtime.tv_sec;
	r->mtime_nsec = s->stx_mtime.tv_nsec;
}

/* No name new: the records updated where they are, those gone
 * squeezed out, no copy of the others. */
static int apply_in_place(struct lc_dir *d, const struct lcp_item *it, size_t n)
{
	size_t gone = 0;

	for (size_t i = 0; i < n; i++) {
		ptrdiff_t at = it[i].at;
		if (at < 0)
			continue;
		if (!it[i].err) {
			rec_set(&d->recs[at], &it[i].stx);
			continue;
		}
		d->names_dead += d->recs[at].namelen + 1;
		d->recs[at].namelen = UINT32_MAX;   /* (still found by name) */
		gone++;
	}
	if (!gone)
		return 0;
	size_t k = 0;
	for (size_t r = 0; r < d->nrec; r++)
		if (d->recs[r].namelen != UINT32_MAX)
			d->recs[k++] = d->recs[r];
	d->nrec = k;
	return 0;
}

/* The items' stats into the records (items in name order): 0, or
 * -errno when the directory cannot stay cached. */
static int apply_stats(struct lc_dir *d, struct lcp_item *it, size_t n)
{
	size_t adds = 0, add_bytes = 0;

	for (size_t i = 0; i < n; i++) {
		it[i].at = rec_find(d, it[i].name);
		if (it[i].err && it[i].err != -ENOENT)
			return it[i].err;
		if (it[i].err)
			continue;
		/* what a fill would not keep (lcache_fill_add()) */
		if (S_ISLNK(it[i].stx.stx_mode) && !(d->flags & LK_SCAN_NO_LINKS))
			return -EMLINK;
		if (it[i].stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)
			return -EXDEV;
		if (it[i].at < 0) {
			adds++;
			add_bytes += strlen(it[i].name) + 1;
		}
	}
	if (!adds)
		return apply_in_place(d, it, n);
	if (names_room(d, add_bytes) < 0)
		return -ENOMEM;
	size_t cap = d->nrec + adds ? d->nrec + adds : 1;
	struct lc_rec *v = malloc(cap * sizeof *v);
	if (!v)
		return -ENOMEM;
	/* a merge of the records and the items, both in name order */
	size_t k = 0, r = 0;
	for (size_t i = 0; i < n; i++) {
		ptrdiff_t at = it[i].at;
		size_t upto = at < 0 ? (size_t)~at : (size_t)at;
		while (r < upto)
			v[k++] = d->recs[r++];
		if (at >= 0) {
			r++;
			if (it[i].err) {
				d->names_dead += d->recs[at].namelen + 1;
				continue;
			}
			v[k] = d->recs[at];
		} else if (it[i].err) {
			continue;
		} else {
			size_t l = strlen(it[i].name);
			memcpy(d->names + d->names_len, it[i].name, l + 1);
			v[k] = (struct lc_rec){ .name = d->names + d->names_len,
			                        .namelen = (uint32_t)l };
			d->names_len += l + 1;
		}
		rec_set(&v[k++], &it[i].stx);
	}
	while (r < d->nrec)
		v[k++] = d->recs[r++];
	free(d->recs);
	d->recs = v;
	d->nrec = k;
	d->caprec = cap;
	return 0;
}

/* The watches the job added linked, each as its name's from now on
 * (the one it had before no longer watched). Before fcw_foreign_end(). */
static int link_watches(struct lc_dir *d, struct lcp_item *it, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		if (it[i].wd < 0)
			continue;
		size_t l = strlen(it[i].name);
		struct lc_ent *old = ent_find(d, it[i].name);
		struct lc_ent *e = malloc(sizeof *e + l + 1);
		if (!e) {
			/* (no one to remove it but a dependent) */
			struct fcw_dep tmp = { .owner = d };
			if (fcw_link(it[i].wd, &tmp) == 0)
				fcw_unwatch(&tmp);
			rc = -ENOMEM;
			continue;
		}
		char *name = (char *)(e + 1);
		memcpy(name, it[i].name, l + 1);
		*e = (struct lc_ent){ .dep = { .owner = d, .fire = d->ddep.fire },
		                      .name = name, .xnext = d->xents };
		d->xents = e;
		d->nxents++;
		if (fcw_link(it[i].wd, &e->dep) < 0) {
			rc = -ENOMEM;
			continue;
		}
		if (old) {
			fcw_unwatch(&old->dep);
			hash_del(d, it[i].name);
		}
		if (hash_put(d, e) < 0)
			rc = -ENOMEM;
	}
	return rc;
}

/* The names the stats found gone no longer watched. */
static void unwatch_gone(struct lc_dir *d, const struct lcp_item *it, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct lc_ent *e;
		if (it[i].err == -ENOENT && (e = ent_find(d, it[i].name))) {
			fcw_unwatch(&e->dep);
			hash_del(d, it[i].name);
		}
	}
}

/* Frees the patches' watches no longer linked (none is in the table):
 * a directory whose files come and go all day keeps only its own. */
static void sweep(struct lc_dir *d)
{
	for (struct lc_ent **pp = &d->xents, *e; (e = *pp);) {
		if (e->dep.w) {
			pp = &e->xnext;
			continue;
		}
		*pp = e->xnext;
		free(e);
		d->nxents--;
	}
}

/* The items noted again, ahead of what came meanwhile. */
static int renote(struct lc_dir *d, struct lcp_item *it, size_t m)
{
	struct lc_pend *v = realloc(d->pend, (d->npend + m) * sizeof *v);

	if (!v)
		return -ENOMEM;
	d->pend = v;
	for (size_t i = 0; i < m; i++) {
		v[d->npend++] = (struct lc_pend){ .name = it[i].name };
		it[i].name = NULL;
	}
	d->cappend = d->npend;
	return 0;
}

int lcp_apply(struct lc_dir *d, int dirfd)
{
	struct lc_pend *pend = d->pend;
	size_t n = d->npend, m = 0;
	struct lcp_item *it = calloc(n ? n : 1, sizeof *it);
	/* (100,000 names take ~50 ms: on the pool, the patch out of the
	 * table meanwhile, nothing else touches them) */
	int rc = !it ? -ENOMEM : d->htab ? 0 : (int)fibril_call(hash_job, d);

	d->pend = NULL;
	d->npend = d->cappend = 0;
	/* one item a name, in name order */
	if (n)
		qsort(pend, n, sizeof *pend, pend_cmp);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (m && !strcmp(it[m - 1].name, pend[i].name)) {
			it[m - 1].watch |= pend[i].renew;
			free(pend[i].name);
			pend[i].name = NULL;
			continue;
		}
		it[m].name = pend[i].name;
		pend[i].name = NULL;
		it[m].watch = pend[i].renew || !ent_find(d, it[m].name);
		m++;
	}
	if (rc == 0) {
		struct lcp_job j = { .ifd = fcw_ifd(), .dirfd = dirfd, .n = m, .it = it };
		fcw_foreign_begin();
		unsigned long ev0 = fcw_foreign_events();
		fibril_call(job_run, &j);
		rc = link_watches(d, it, m);
		/* An event on a new watch before it was linked is lost (its
		 * inode gone meanwhile, say): its names are noted again. */
		bool lost = fcw_foreign_events() != ev0;
		fcw_foreign_end();
		if (rc == 0) {
			j.stat = true;
			fibril_call(job_run, &j);
			unwatch_gone(d, it, m);
			rc = apply_stats(d, it, m);
		}
		sweep(d);
		if (rc == 0 && lost && m)
			rc = renote(d, it, m);
	}
	for (size_t i = 0; i < n; i++)
		free(pend[i].name);
	for (size_t i = 0; i < m; i++)
		free(it[i].name);
	free(pend);
	free(it);
	return rc;
}

size_t lcp_bytes(const struct lc_dir *d)
{
	return sizeof *d + strlen(d->key) + d->caprec * sizeof *d->recs + d->names_cap +
	       d->wnames_cap + d->nents * (sizeof *d->ents + 48) +
	       d->nxents * (sizeof(struct lc_ent) + 64) + d->hcap * sizeof *d->htab;
}

void lcp_free(struct lc_dir *d)
{
	for (size_t i = 0; i < d->npend; i++)
		free(d->pend[i].name);
	free(d->pend);
	for (struct lc_ent *e = d->xents, *nx; e; e = nx) {
		nx = e->xnext;
		free(e);
	}
	free(d->htab);
	d->pend = NULL;
	d->xents = NULL;
	d->htab = NULL;
	d->npend = d->nxents = d->hcap = d->hused = 0;
}
