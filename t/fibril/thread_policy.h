/* The scheduling policy of a thread of this process, for the tests of
 * ASYNC_F_BACKGROUND (whose threads must be SCHED_IDLE). */
#ifndef T_FIBRIL_THREAD_POLICY_H
#define T_FIBRIL_THREAD_POLICY_H

#include <stdio.h>
#include <string.h>

/* Field 41 of /proc/self/task/TID/stat, or -1 when the thread is gone. */
static inline int t_thread_policy(const char *tid)
{
	char path[300], line[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	/* After the name, which may hold spaces and parentheses. */
	const char *p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	int field = 2, policy = -1;
	for (; p && *p && field < 41; p++)
		if (*p == ' ')
			field++;
	if (!p || sscanf(p, "%d", &policy) != 1)
		return -1;
	return policy;
}

#endif
