/* lk_cred_*: a user's credentials for the lookup engine's calls. The
 * object is the async layer's credential set (async_cred.c), which
 * makes each call run as that user on every backend. */
#include "first.h"

#include <errno.h>

#include "fibril/lookup_int.h"

/* The kernel's NGROUPS_MAX. */
#define LK__NGROUPS_MAX 65536

FIBRIL_API int lk_cred_new(uid_t uid, gid_t gid, size_t ngroups,
			   const gid_t *groups, lk_cred_t **out)
{
	if (!out || ngroups > LK__NGROUPS_MAX || (ngroups && !groups) ||
	    uid == (uid_t)-1 || gid == (gid_t)-1)
		return -EINVAL;
	struct async__cred *c = async__cred_new(uid, gid, ngroups, groups);
	if (!c)
		return -ENOMEM;
	*out = (lk_cred_t *)(void *)c;
	return 0;
}

FIBRIL_API lk_cred_t *lk_cred_ref(lk_cred_t *c)
{
	async__cred_hold(lk__x(c));
	return c;
}

FIBRIL_API void lk_cred_free(lk_cred_t *c)
{
	async__cred_drop(lk__x(c));
}
