/*
 * Private to fibril/: per-call credentials. A call submitted while a
 * credential set is in use (x__cred_use) runs as that user: on the ring
 * with the engine's personality for it, on a pool thread or on the
 * caller's thread with that thread's own ids switched around it.
 */
#ifndef FIBRIL_ASYNC_CRED_H
#define FIBRIL_ASYNC_CRED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct x__cred {
	unsigned refs;            /* atomic: shared by threads */
	uint64_t id;              /* unique for the process's lifetime */
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t groups[];
};

/* What x__cred_enter() replaced. Small group lists stay in buf. */
struct x__cred_saved {
	uid_t euid;
	gid_t egid;
	int ngroups;
	gid_t *groups;
	gid_t buf[32];
};

struct x__cred *x__cred_new(uid_t uid, gid_t gid, size_t ngroups,
			    const gid_t *groups);
struct x__cred *x__cred_hold(struct x__cred *c);  /* NULL allowed */
void x__cred_drop(struct x__cred *c);              /* NULL allowed */

/* Switches the calling thread (only it) to @c. 0, or -errno with the
 * thread unchanged (-EPERM without CAP_SETUID/CAP_SETGID). */
int x__cred_enter(const struct x__cred *c, struct x__cred_saved *s);
/* Back to what enter saved. Aborts if the thread cannot get its own
 * ids back: it must never go on serving as someone else. */
void x__cred_leave(struct x__cred_saved *s);

/* x__cred_enter() for a call, unless this thread already runs as @c
 * (a function run as a user made a call of its own): 1 switched (undo
 * with x__cred_pop), 0 already that user, -EPERM already another one,
 * or enter's error. */
int x__cred_push(const struct x__cred *c, struct x__cred_saved *s);
void x__cred_pop(struct x__cred_saved *s);

/* The credentials later submissions on this thread carry (NULL: the
 * thread's own). Returns the previous setting. */
struct x__cred *x__cred_use(struct x__cred *c);
struct x__cred *x__cred_current(void);
/* True while this thread runs switched (x__cred_push). */
int x__cred_switched(void);

/* The one dispatcher from a call number (ASYNC_*) to its plain system
 * call (async_calls.c): runs @call with @args on the calling thread, as
 * the user of @c (NULL: as the thread is) when the call checks
 * permissions by path. Pool threads, the engine's synchronous paths and
 * the lookup engine on a thread without an engine all run calls here.
 * Returns the call's result or -errno. */
long x__exec_as(const struct x__cred *c, long call, const unsigned long *args);

#endif
