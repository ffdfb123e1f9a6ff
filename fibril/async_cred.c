/*
 * Per-call credentials (async_cred.h). A server acting for many users
 * must not change the process's ids (glibc's set*id() change every
 * thread, the engine's included), so each call carries its user:
 *  - on the ring, as a personality: io_uring captures the credentials
 *    of the thread that registers it, so the engine's thread switches
 *    its own ids, registers, and switches back (async_uring.c);
 *  - on a pool thread, or on the caller's thread when a call runs
 *    synchronously, by switching that thread's own ids around the call
 *    with the raw system calls, which act on one thread only.
 * Only the effective ids move (setresuid(-1, uid, -1)): the real and
 * saved uid stay 0, which is what lets the thread switch back; the file
 * system ids follow the effective ones, and leaving uid 0 clears the
 * effective capabilities (CAP_DAC_OVERRIDE...), so the kernel checks
 * access as that user.
 */
#include "first.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fibril/async_cred.h"

static _Atomic uint64_t async__cred_ids;
static __thread struct async__cred *async__cur_cred
	__attribute__((tls_model("initial-exec")));
/* The set this thread runs as, while switched. */
static __thread const struct async__cred *async__in_cred
	__attribute__((tls_model("initial-exec")));

struct async__cred *async__cred_new(uid_t uid, gid_t gid, size_t ngroups,
			    const gid_t *groups)
{
	struct async__cred *c = malloc(sizeof(*c) + ngroups * sizeof(gid_t));

	if (!c)
		return NULL;
	c->refs = 1;
	c->id = atomic_fetch_add(&async__cred_ids, 1) + 1;
	c->uid = uid;
	c->gid = gid;
	c->ngroups = ngroups;
	if (ngroups)
		memcpy(c->groups, groups, ngroups * sizeof(gid_t));
	return c;
}

struct async__cred *async__cred_hold(struct async__cred *c)
{
	if (c)
		__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	return c;
}

void async__cred_drop(struct async__cred *c)
{
	if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(c);
}

static long async__raw_setgroups(size_t n, const gid_t *g)
{
	return syscall(SYS_setgroups, n, g);
}

int async__cred_enter(const struct async__cred *c, struct async__cred_saved *s)
{
	s->euid = geteuid();
	s->egid = getegid();
	s->groups = s->buf;
	s->ngroups = getgroups(sizeof(s->buf) / sizeof(s->buf[0]), s->buf);
	if (s->ngroups < 0 && errno == EINVAL) {
		int n = getgroups(0, NULL);
		s->groups = n > 0 ? malloc((size_t)n * sizeof(gid_t)) : NULL;
		s->ngroups = s->groups ? getgroups(n, s->groups) : -1;
	}
	if (s->ngroups < 0) {
		int rc = -errno;
		if (s->groups != s->buf)
			free(s->groups);
		return rc ? rc : -ENOMEM;
	}
	int rc = 0;
	if (async__raw_setgroups(c->ngroups, c->groups) < 0)
		rc = -errno;
	else if (syscall(SYS_setresgid, -1, c->gid, -1) < 0)
		rc = -errno;
	else if (syscall(SYS_setresuid, -1, c->uid, -1) < 0)
		rc = -errno;
	if (rc < 0) {
		/* Still our own uid: setting back what we had cannot fail. */
		(void)syscall(SYS_setresgid, -1, s->egid, -1);
		(void)async__raw_setgroups((size_t)s->ngroups, s->groups);
		if (s->groups != s->buf)
			free(s->groups);
	}
	return rc;
}

void async__cred_leave(struct async__cred_saved *s)
{
	/* The uid first: it brings back the capabilities the rest needs. */
	if (syscall(SYS_setresuid, -1, s->euid, -1) < 0 ||
	    syscall(SYS_setresgid, -1, s->egid, -1) < 0 ||
	    async__raw_setgroups((size_t)s->ngroups, s->groups) < 0)
		abort();
	if (s->groups != s->buf)
		free(s->groups);
}

struct async__cred *async__cred_use(struct async__cred *c)
{
	struct async__cred *old = async__cur_cred;
	async__cur_cred = c;
	return old;
}

struct async__cred *async__cred_current(void)
{
	return async__cur_cred;
}

int async__cred_switched(void)
{
	return async__in_cred != NULL;
}

int async__cred_push(const struct async__cred *c, struct async__cred_saved *s)
{
	if (async__in_cred) {
		/* Already someone (a function run as a user submitted a
		 * call): the same user goes on, another may not. */
		return async__in_cred->id == c->id ? 0 : -EPERM;
	}
	int rc = async__cred_enter(c, s);
	if (rc < 0)
		return rc;
	async__in_cred = c;
	return 1;
}

void async__cred_pop(struct async__cred_saved *s)
{
	async__in_cred = NULL;
	async__cred_leave(s);
}
