/*
 * Private to fibril/: per-call credentials. A call submitted while a
 * credential set is in use (async__cred_use) runs as that user: on the ring
 * with the engine's personality for it, on a pool thread or on the
 * caller's thread with that thread's own ids switched around it.
 */
#ifndef FIBRIL_ASYNC_CRED_H
#define FIBRIL_ASYNC_CRED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct async__cred {
	unsigned refs;            /* atomic: shared by threads */
	uint64_t id;              /* unique for the process's lifetime */
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t groups[];
};

/* What async__cred_enter() replaced. Small group lists stay in buf. */
struct async__cred_saved {
	uid_t euid;
	gid_t egid;
	int ngroups;
	gid_t *groups;
	gid_t buf[32];
};

struct async__cred *async__cred_new(uid_t uid, gid_t gid, size_t ngroups,
			    const gid_t *groups);
struct async__cred *async__cred_hold(struct async__cred *c);  /* NULL allowed */
void async__cred_drop(struct async__cred *c);              /* NULL allowed */

/* Switches the calling thread (only it) to @c. 0, or -errno with the
 * thread unchanged (-EPERM without CAP_SETUID/CAP_SETGID). */
int async__cred_enter(const struct async__cred *c, struct async__cred_saved *s);
/* Back to what enter saved. Aborts if the thread cannot get its own
 * ids back: it must never go on serving as someone else. */
void async__cred_leave(struct async__cred_saved *s);

/* async__cred_enter() for a call, unless this thread already runs as @c
 * (a function run as a user made a call of its own): 1 switched (undo
 * with async__cred_pop), 0 already that user, -EPERM already another one,
 * or enter's error. */
int async__cred_push(const struct async__cred *c, struct async__cred_saved *s);
void async__cred_pop(struct async__cred_saved *s);

/* The credentials later submissions on this thread carry (NULL: the
 * thread's own). Returns the previous setting. */
struct async__cred *async__cred_use(struct async__cred *c);
struct async__cred *async__cred_current(void);
/* True while this thread runs switched (async__cred_push). */
int async__cred_switched(void);

/* The one dispatcher from a call number (ASYNC_*) to its plain system
 * call (async_calls.c): runs @call with @args on the calling thread, as
 * the user of @c (NULL: as the thread is) when the call checks
 * permissions by path. Pool threads, the engine's synchronous paths and
 * the lookup engine on a thread without an engine all run calls here.
 * Returns the call's result or -errno. */
long async__exec_as(const struct async__cred *c, long call, const unsigned long *args);

#endif
