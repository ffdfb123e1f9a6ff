/* t/slowfs/delay.h: the delay queue of slowfs. A FUSE handler does its
 * op at once and fills in a struct sfs_answer; the answer waits in a
 * FIFO until its deadline and is then sent by one thread. Every wait is
 * the same length, so arrival order is deadline order.
 *
 * This stands for a network round trip: any number of requests can be
 * waiting at once, without a thread each (a thread sleeping per request
 * topped out near 80 in flight on two cores).
 */
#ifndef SLOWFS_DELAY_H
#define SLOWFS_DELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

enum sfs_kind { SFS_ERR, SFS_ENTRY, SFS_ATTR, SFS_BUF, SFS_LINK, SFS_OPEN };

struct sfs_answer {
	struct sfs_answer *next;        /* queue link: the queue's */
	struct timespec due;
	fuse_req_t req;
	enum sfs_kind kind;
	int err;                        /* SFS_ERR */
	struct fuse_entry_param e;      /* SFS_ENTRY (ino 0: negative) */
	struct stat st;                 /* SFS_ATTR */
	char *buf;                      /* SFS_BUF, SFS_LINK: owned, freed */
	size_t len;                     /* SFS_BUF */
	struct fuse_file_info fi;       /* SFS_OPEN */
	/* Called when the kernel did not take an SFS_ENTRY or SFS_OPEN
	 * answer (request interrupted): undo what it handed over. */
	void (*undo)(struct sfs_answer *a);
};

/* A new answer to REQ, due DELAY_US from now; NULL (REQ answered with
 * ENOMEM) if out of memory. Any thread. */
struct sfs_answer *sfs_answer_new(fuse_req_t req, unsigned delay_us);

/* Queues A (or sends it at once when the queue is not running); A is
 * the queue's from here on. Any thread. */
void sfs_answer(struct sfs_answer *a);
void sfs_answer_err(struct sfs_answer *a, int err);

/* The most answers ever waiting at once. */
unsigned long sfs_delay_max_queued(void);

/* Serves SE on this thread alone: reads requests and sends the answers
 * as they fall due (instead of fuse_session_loop() and the sending
 * thread). Returns 0 when the session ends, or -errno. */
int sfs_delay_loop(struct fuse_session *se);

/* Start the sending thread (0 or -errno); stop it, after sending what
 * is still waiting at once. Main thread only. */
int sfs_delay_start(void);
void sfs_delay_stop(void);

#endif
