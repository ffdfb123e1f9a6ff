/* t/slowfs/delay.c: the delay queue of slowfs (see delay.h). */
#include "first.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
	bool in_loop;           /* sfs_delay_loop() sends: queue, never signal */
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
	if (!dq.started && !dq.in_loop) {
		pthread_mutex_unlock(&dq.lock);
		send_answer(a);
		return;
	}
	a->next = NULL;
	*dq.tail = a;
	dq.tail = &a->next;
	if (++dq.queued > atomic_load(&max_queued))
		atomic_store(&max_queued, dq.queued);
	if (dq.head == a && !dq.in_loop)
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

/* Unlinks every answer due by NOW (all of them with ALL); dq.lock held. */
static struct sfs_answer *take_due(const struct timespec *now, bool all)
{
	struct sfs_answer *batch = dq.head, **end = &dq.head;
	unsigned long n = 0;
	while (*end && (all || due(&(*end)->due, now))) {
		end = &(*end)->next;
		n++;
	}
	if (n == 0)
		return NULL;    /* (END is &dq.head: the cut below would empty the queue) */
	dq.head = *end;
	*end = NULL;
	if (!dq.head)
		dq.tail = &dq.head;
	dq.queued -= n;
	return batch;
}

static void send_batch(struct sfs_answer *batch)
{
	while (batch) {
		struct sfs_answer *next = batch->next;
		send_answer(batch);
		batch = next;
	}
}

/* When several answers wait, the head leaves up to this late, with
 * every answer due by then: one wake-up per batch instead of one per op
 * (this fs's own CPU time and wake-ups are an artefact of the test: a
 * remote fs spends them elsewhere). A lone answer, all that a client
 * waiting for each op ever sees, leaves on time. */
#define SLACK_NS 100000L

static struct timespec send_time(void)
{
	struct timespec t = dq.head->due;
	if (dq.queued > 1 && (t.tv_nsec += SLACK_NS) >= 1000000000) {
		t.tv_nsec -= 1000000000;
		t.tv_sec++;
	}
	return t;
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
			struct timespec t = send_time();
			pthread_cond_timedwait(&dq.cond, &dq.lock, &t);
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (!due(&dq.head->due, &now))
				continue;
		}
		struct sfs_answer *batch = take_due(&now, dq.stop);
		pthread_mutex_unlock(&dq.lock);
		send_batch(batch);
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

/* While answers wait, requests are read at most this long after they
 * arrive (the loop does not wake for each one), so an op that arrives
 * then takes up to this much longer than the delay; never less. */
#define READ_LAG_NS 200000L

static long ns_until(const struct timespec *t, const struct timespec *now)
{
	return (t->tv_sec - now->tv_sec) * 1000000000L + (t->tv_nsec - now->tv_nsec);
}

/* The single-threaded loop: one thread reads requests and sends the
 * answers that are due, so that nothing is handed between threads.
 * With no answer waiting it sleeps in poll() on the device, so that a
 * lone request (a client that waits for each op) is read at once; with
 * answers waiting it sleeps until the next send or READ_LAG_NS,
 * whichever is first, and then reads every request that came meanwhile
 * in one go. A reader thread plus a sender thread are switched in
 * ~9,300 times a second under back-to-back listings, mostly one
 * wake-up of the reader per request, each a chance to
 * preempt the server under test and its client on a small machine. */
int sfs_delay_loop(struct fuse_session *se)
{
	int fd = fuse_session_fd(se);
	int fl = fcntl(fd, F_GETFL);
	struct fuse_buf fbuf = { .mem = NULL };
	int ret = 0;

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	dq.tail = &dq.head;
	dq.in_loop = true;
	while (!fuse_session_exited(se)) {
		int r = fuse_session_receive_buf(se, &fbuf);
		if (r > 0) {
			fuse_session_process_buf(se, &fbuf);
			continue;
		}
		if (r == 0)
			break;          /* unmounted or told to exit */
		if (r != -EAGAIN && r != -EINTR) {
			ret = r;
			break;
		}
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		pthread_mutex_lock(&dq.lock);
		struct sfs_answer *batch = take_due(&now, false);
		pthread_mutex_unlock(&dq.lock);
		send_batch(batch);
		if (!dq.head) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			poll(&p, 1, -1);        /* EINTR: the exit check above */
			continue;
		}
		struct timespec t = send_time();
		long ns = ns_until(&t, &now);
		if (ns > READ_LAG_NS)
			ns = READ_LAG_NS;
		if (ns > 0) {
			struct timespec d = { 0, ns };
			nanosleep(&d, NULL);
		}
	}
	/* What is still waiting leaves now (the kernel drops it if gone). */
	pthread_mutex_lock(&dq.lock);
	struct sfs_answer *rest = take_due(NULL, true);
	dq.in_loop = false;
	pthread_mutex_unlock(&dq.lock);
	send_batch(rest);
	free(fbuf.mem);
	return ret;
}
