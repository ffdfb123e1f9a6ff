/* t/slowfs/delay.c: the delay queue of slowfs (see delay.h). */
#include "first.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "t/slowfs/delay.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sfs_answer *head, **tail;
	unsigned long queued;
	bool stop;
	pthread_t thread;
	bool started;
} dq = { .lock = PTHREAD_MUTEX_INITIALIZER };
static atomic_ulong max_queued;

struct sfs_answer *sfs_answer_new(fuse_req_t req, unsigned delay_us)
{
	struct sfs_answer *a = calloc(1, sizeof(*a));
	if (!a) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	a->req = req;
	clock_gettime(CLOCK_MONOTONIC, &a->due);
	a->due.tv_nsec += (long)(delay_us % 1000000) * 1000;
	a->due.tv_sec += delay_us / 1000000 + a->due.tv_nsec / 1000000000;
	a->due.tv_nsec %= 1000000000;
	return a;
}

static void send_answer(struct sfs_answer *a)
{
	int r = 0;
	switch (a->kind) {
	case SFS_ERR:
		fuse_reply_err(a->req, a->err);
		break;
	case SFS_ENTRY:
		r = fuse_reply_entry(a->req, &a->e);
		break;
	case SFS_ATTR:
		fuse_reply_attr(a->req, &a->st, 0);
		break;
	case SFS_BUF:
		fuse_reply_buf(a->req, a->buf, a->len);
		break;
	case SFS_LINK:
		fuse_reply_readlink(a->req, a->buf);
		break;
	case SFS_OPEN:
		r = fuse_reply_open(a->req, &a->fi);
		break;
	}
	if (r != 0 && a->undo)
		a->undo(a);
	free(a->buf);
	free(a);
}

void sfs_answer(struct sfs_answer *a)
{
	pthread_mutex_lock(&dq.lock);
	if (!dq.started) {
		pthread_mutex_unlock(&dq.lock);
		send_answer(a);
		return;
	}
	a->next = NULL;
	*dq.tail = a;
	dq.tail = &a->next;
	if (++dq.queued > atomic_load(&max_queued))
		atomic_store(&max_queued, dq.queued);
	if (dq.head == a)
		pthread_cond_signal(&dq.cond);
	pthread_mutex_unlock(&dq.lock);
}

void sfs_answer_err(struct sfs_answer *a, int err)
{
	a->kind = SFS_ERR;
	a->err = err;
	sfs_answer(a);
}

unsigned long sfs_delay_max_queued(void)
{
	return atomic_load(&max_queued);
}

static bool due(const struct timespec *t, const struct timespec *now)
{
	return t->tv_sec < now->tv_sec || (t->tv_sec == now->tv_sec && t->tv_nsec <= now->tv_nsec);
}

static void *sender(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&dq.lock);
	for (;;) {
		if (!dq.head) {
			if (dq.stop)
				break;
			pthread_cond_wait(&dq.cond, &dq.lock);
			continue;
		}
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!dq.stop && !due(&dq.head->due, &now)) {
			/* With several answers queued, wake up to 100 us late
			 * and send all that are due by then in one go: one
			 * wake-up per batch instead of one per op (this fs's
			 * own CPU time is an artefact; a remote fs spends it
			 * elsewhere). A single answer, as a client that waits
			 * for each op sees, leaves on time. */
			struct timespec t = dq.head->due;
			if (dq.queued > 1 && (t.tv_nsec += 100000) >= 1000000000) {
				t.tv_nsec -= 1000000000;
				t.tv_sec++;
			}
			pthread_cond_timedwait(&dq.cond, &dq.lock, &t);
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (!due(&dq.head->due, &now))
				continue;
		}
		/* Take every answer that is due, send them unlocked. */
		struct sfs_answer *batch = dq.head, **end = &dq.head;
		unsigned long n = 0;
		while (*end && (dq.stop || due(&(*end)->due, &now))) {
			end = &(*end)->next;
			n++;
		}
		dq.head = *end;
		*end = NULL;
		if (!dq.head)
			dq.tail = &dq.head;
		dq.queued -= n;
		pthread_mutex_unlock(&dq.lock);
		while (batch) {
			struct sfs_answer *next = batch->next;
			send_answer(batch);
			batch = next;
		}
		pthread_mutex_lock(&dq.lock);
	}
	pthread_mutex_unlock(&dq.lock);
	return NULL;
}

int sfs_delay_start(void)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int r = pthread_cond_init(&dq.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (r != 0)
		return -r;
	dq.tail = &dq.head;
	pthread_mutex_lock(&dq.lock);
	if ((r = pthread_create(&dq.thread, NULL, sender, NULL)) == 0)
		dq.started = true;
	pthread_mutex_unlock(&dq.lock);
	return -r;
}

void sfs_delay_stop(void)
{
	pthread_mutex_lock(&dq.lock);
	if (!dq.started) {
		pthread_mutex_unlock(&dq.lock);
		return;
	}
	dq.stop = true;
	pthread_cond_signal(&dq.cond);
	pthread_mutex_unlock(&dq.lock);
	pthread_join(dq.thread, NULL);
	dq.started = false;
}
