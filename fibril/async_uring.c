/*
 * The io_uring backend: one ring per engine (so per thread), its
 * completions signalled on the engine's eventfd.
 *
 * Submissions are lazy: SQEs pile up and go to the kernel in one
 * io_uring_enter when the engine is processed or waited on, or when the
 * SQ is full. A readdir-then-stat loop thus pays one syscall per ring_entries
 * stats, not one per stat.
 */
#include "first.h"

#include <errno.h>
#include <liburing.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "fibril/async_int.h"
#include "fibril/async_cred.h"

/* Credential sets a ring keeps a personality for at once: a server's
 * active users. One more costs a register (and an unregister) call. */
#define ASYNC__PERS_MAX 64

struct async__uring {
	struct io_uring ring;
	unsigned setup_flags;
	unsigned queued;  /* SQEs prepared but not yet submitted */
	unsigned inring;  /* ops submitted and not yet completed */
	bool defer;       /* DEFER_TASKRUN: CQEs appear only when we enter */
	bool taskrun_flag;/* the kernel raises IORING_SQ_TASKRUN for us */
	bool ok[ASYNC_CALL_MAX];
	/* Personalities registered for credential sets (async_cred.c),
	 * most recent first; the oldest goes when full. */
	struct { uint64_t id; int pers; } pers[ASYNC__PERS_MAX];
	unsigned npers;
};

static const int async__opcode[ASYNC_CALL_MAX] = {
	[ASYNC_NOP] = IORING_OP_NOP,
	[ASYNC_OPENAT2] = IORING_OP_OPENAT2,
	[ASYNC_STATX] = IORING_OP_STATX,
	[ASYNC_CLOSE] = IORING_OP_CLOSE,
	[ASYNC_READ] = IORING_OP_READ,
	[ASYNC_PREAD] = IORING_OP_READ,
	[ASYNC_WRITE] = IORING_OP_WRITE,
	[ASYNC_PWRITE] = IORING_OP_WRITE,
	[ASYNC_GETDENTS64] = -1,  /* no io_uring op in this kernel/liburing */
	[ASYNC_READLINKAT] = -1,
	[ASYNC_FSYNC] = IORING_OP_FSYNC,
	[ASYNC_FADVISE] = IORING_OP_FADVISE,
	[ASYNC_CALL] = -1,        /* the caller's function: the pool's */
};

/* Best first. DEFER_TASKRUN keeps completion work on our own thread at
 * a time we choose; COOP_TASKRUN avoids IPIs; TASKRUN_FLAG lets us see
 * in memory whether entering the kernel would post completions. */
static const unsigned async__setups[] = {
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
		IORING_SETUP_COOP_TASKRUN,
	IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	IORING_SETUP_COOP_TASKRUN,
	0,
};

static unsigned async__pow2(unsigned v)
{
	unsigned p = 1;
	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

int async__uring_create(async_engine_t *e, const struct async_engine_opts *o)
{
	struct async__uring *r = calloc(1, sizeof(*r));
	unsigned entries = o && o->ring_entries ? o->ring_entries : 256;
	unsigned cq;
	int rc = -EINVAL;

	if (!r)
		return -ENOMEM;
	/* Every op in flight must fit in the CQ, or completions go to the
	 * kernel's overflow list (slow) and submits start to fail. */
	cq = async__pow2(e->max_inflight + entries);
	if (cq < 2 * entries)
		cq = 2 * entries;
	for (size_t i = 0; i < sizeof(async__setups) / sizeof(async__setups[0]); i++) {
		struct io_uring_params p;
		memset(&p, 0, sizeof(p));
		p.flags = async__setups[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = cq;
		rc = io_uring_queue_init_params(entries, &r->ring, &p);
		if (rc == 0) {
			r->setup_flags = async__setups[i];
			break;
		}
		if (rc != -EINVAL)
			break;  /* EPERM, ENOSYS, ENOMEM: no point trying fewer flags */
	}
	if (rc < 0) {
		free(r);
		return rc;
	}
	r->defer = r->setup_flags & IORING_SETUP_DEFER_TASKRUN;
	r->taskrun_flag = r->setup_flags & IORING_SETUP_TASKRUN_FLAG;

	struct io_uring_probe *probe = io_uring_get_probe_ring(&r->ring);
	for (int c = 0; c < ASYNC_CALL_MAX; c++)
		r->ok[c] = probe && async__opcode[c] >= 0 &&
		           io_uring_opcode_supported(probe, async__opcode[c]);
	if (probe)
		io_uring_free_probe(probe);

	rc = io_uring_register_eventfd(&r->ring, e->efd);
	if (rc < 0) {
		io_uring_queue_exit(&r->ring);
		free(r);
		return rc;
	}
	if (o && (o->iowq_bounded || o->iowq_unbounded)) {
		/* 0 leaves that class at the kernel default. The default bound
		 * (min(SQ size, 4 x CPUs)) is what makes slow metadata crawl:
		 * docs/DESIGN.md, "io-wq worker limits". */
		unsigned vals[2] = { o->iowq_bounded, o->iowq_unbounded };
		int w = io_uring_register_iowq_max_workers(&r->ring, vals);
		if (w < 0)
			async__log(e, LOG_WARNING,
			       "io_uring_register_iowq_max_workers: %s",
			       strerror(-w));
	}
	/* Saves an fd table lookup on each io_uring_enter. */
	(void)io_uring_register_ring_fd(&r->ring);
	e->ring = r;
	for (int c = 0; c < ASYNC_CALL_MAX; c++)
		e->route_ring[c] = r->ok[c];
	async__log(e, LOG_INFO,
	       "async: backend uring (flags 0x%x%s%s, sq %u, cq %u, iowq %u/%u)",
	       r->setup_flags, r->defer ? " defer_taskrun" : "",
	       r->taskrun_flag ? " taskrun_flag" : "", entries, cq,
	       o ? o->iowq_bounded : 0, o ? o->iowq_unbounded : 0);
	return 0;
}

bool async__uring_supports(async_engine_t *e, long call, const unsigned long *a)
{
	if (!e->route_ring[call])
		return false;
	/* The SQE carries a 32-bit length for fadvise on older kernels. */
	if (call == ASYNC_FADVISE && a[2] > UINT32_MAX)
		return false;
	return true;
}

static struct io_uring_sqe *async__sqe(async_engine_t *e)
{
	struct async__uring *r = e->ring;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	if (!sqe) {
		async__uring_flush(e);
		sqe = io_uring_get_sqe(&r->ring);
	}
	return sqe;
}

/* Linux caps one read/write at MAX_RW_COUNT anyway; the SQE holds 32 bits. */
static unsigned async__len(unsigned long n)
{
	return n > 0x7ffff000UL ? 0x7ffff000U : (unsigned)n;
}

int async__uring_submit(async_engine_t *e, struct async__op *op)
{
	struct async__uring *r = e->ring;
	const unsigned long *a = op->args;
	int pers = 0;

	/* Before taking an SQE: registering may submit what is queued. */
	if (op->cred) {
		pers = async__uring_personality(e, op->cred);
		if (pers < 0)
			return pers;  /* runs synchronously, switching the thread */
	}
	struct io_uring_sqe *sqe = async__sqe(e);
	if (!sqe)
		return -EBUSY;
	switch (op->call) {
	case ASYNC_NOP:
		io_uring_prep_nop(sqe);
		break;
	case ASYNC_OPENAT2:
		/* liburing's helper hard-codes sizeof(struct open_how). */
		io_uring_prep_rw(IORING_OP_OPENAT2, sqe, (int)a[0],
		                 (const void *)a[1], (unsigned)a[3], (uint64_t)a[2]);
		/* Straight to io-wq: the ring's own first try walks the path
		 * from the dcache and, when that succeeds, calls the file
		 * system's ->open inside io_uring_enter, on the submitting
		 * thread; on FUSE or NFS that is a round trip (the engine's
		 * inline try, async_calls.c, is the cheap one for local
		 * files). A walk that missed the dcache is punted anyway. */
		sqe->flags |= IOSQE_ASYNC;
		break;
	case ASYNC_STATX:
		io_uring_prep_statx(sqe, (int)a[0], (const char *)a[1], (int)a[2],
		                    (unsigned)a[3], (struct statx *)a[4]);
		break;
	case ASYNC_CLOSE:
		io_uring_prep_close(sqe, (int)a[0]);
		break;
	case ASYNC_READ:
	case ASYNC_PREAD:
		io_uring_prep_read(sqe, (int)a[0], (void *)a[1], async__len(a[2]),
		                   op->call == ASYNC_READ ? (uint64_t)-1 : a[3]);
		break;
	case ASYNC_WRITE:
	case ASYNC_PWRITE:
		io_uring_prep_write(sqe, (int)a[0], (const void *)a[1],
		                    async__len(a[2]),
		                    op->call == ASYNC_WRITE ? (uint64_t)-1 : a[3]);
		break;
	case ASYNC_FSYNC:
		io_uring_prep_fsync(sqe, (int)a[0], a[1] ? IORING_FSYNC_DATASYNC : 0);
		break;
	case ASYNC_FADVISE:
		io_uring_prep_fadvise(sqe, (int)a[0], a[1], (off_t)a[2], (int)a[3]);
		break;
	default:
		/* Unreachable: route_ring is false for the rest. Give the SQE
		 * back as a NOP nobody waits for. */
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, 0);
		r->queued++;
		return -ENOSYS;
	}
	if (pers)
		sqe->personality = (uint16_t)pers;
	io_uring_sqe_set_data(sqe, op);
	r->inring++;
	if (r->queued++ == 0)
		async__kick(e);
	return 0;
}

unsigned async__uring_depth(const async_engine_t *e)
{
	return e->ring ? e->ring->inring : 0;
}

int async__uring_personality(async_engine_t *e, struct async__cred *c)
{
	struct async__uring *r = e->ring;
	unsigned i;

	for (i = 0; i < r->npers; i++)
		if (r->pers[i].id == c->id)
			break;
	if (i < r->npers) {
		int pers = r->pers[i].pers;
		memmove(&r->pers[1], &r->pers[0], i * sizeof(r->pers[0]));
		r->pers[0].id = c->id;
		r->pers[0].pers = pers;
		return pers;
	}
	/* A personality is the registering thread's credentials as they
	 * are now: become the user for the call, then ourselves again. */
	struct async__cred_saved saved;
	int rc = async__cred_enter(c, &saved);
	if (rc < 0)
		return rc;
	int pers = io_uring_register_personality(&r->ring);
	async__cred_leave(&saved);
	if (pers == 0) {
		/* 0 means "no personality" in an SQE (the kernel starts at 1):
		 * never let a call run as ourselves by mistake. */
		io_uring_unregister_personality(&r->ring, 0);
		return -EINVAL;
	}
	if (pers < 0)
		return pers;
	if (r->npers == ASYNC__PERS_MAX) {
		/* Queued SQEs name the oldest by id: submit them first (a
		 * submitted request holds its credentials itself). */
		async__uring_flush(e);
		io_uring_unregister_personality(&r->ring,
						r->pers[ASYNC__PERS_MAX - 1].pers);
		r->npers--;
	}
	memmove(&r->pers[1], &r->pers[0], r->npers * sizeof(r->pers[0]));
	r->pers[0].id = c->id;
	r->pers[0].pers = pers;
	r->npers++;
	return pers;
}

int async__uring_flush(async_engine_t *e)
{
	struct async__uring *r = e->ring;
	int rc;

	if (!r || r->queued == 0)
		return 0;
	rc = io_uring_submit(&r->ring);
	r->queued = io_uring_sq_ready(&r->ring);
	return rc < 0 ? rc : 0;
}

static bool async__taskrun_pending(struct async__uring *r)
{
	if (!r->taskrun_flag)
		return r->defer;  /* cannot tell: enter */
	return IO_URING_READ_ONCE(*r->ring.sq.kflags) &
	       (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW);
}

int async__uring_reap(async_engine_t *e, unsigned budget)
{
	struct async__uring *r = e->ring;
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	int n = 0;

	if (!r)
		return 0;
	/* With DEFER_TASKRUN a finished statx is not in the CQ until this
	 * thread enters the kernel (docs/DESIGN.md, "The io_uring
	 * backend"): peeking alone finds nothing. The TASKRUN flag tells
	 * us when to bother. */
	if (r->queued) {
		int rc = io_uring_submit_and_get_events(&r->ring);
		r->queued = io_uring_sq_ready(&r->ring);
		if (rc < 0 && rc != -EBUSY && rc != -EAGAIN && rc != -EINTR)
			return rc;
	} else if (async__taskrun_pending(r) && r->inring) {
		io_uring_get_events(&r->ring);
	}
	io_uring_for_each_cqe(&r->ring, head, cqe) {
		struct async__op *op = io_uring_cqe_get_data(cqe);
		seen++;
		if (op) {
			r->inring--;
			async__complete(e, op, cqe->res);
			if (budget && (unsigned)++n >= budget)
				break;
		}
	}
	io_uring_cq_advance(&r->ring, seen);
	return n;
}

int async__uring_cancel(async_engine_t *e, struct async__op *op)
{
	struct io_uring_sqe *sqe = async__sqe(e);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)op, 0);
	io_uring_sqe_set_data64(sqe, 0);
	if (e->ring->queued++ == 0)
		async__kick(e);
	return 0;
}

bool async__uring_busy(async_engine_t *e)
{
	struct async__uring *r = e->ring;

	if (!r)
		return false;
	return r->queued || io_uring_cq_ready(&r->ring) ||
	       (r->inring && r->taskrun_flag && async__taskrun_pending(r));
}

/* Blocks until everything in the ring has completed (the caller has
 * queued cancellations for all of it). */
void async__uring_destroy(async_engine_t *e)
{
	struct async__uring *r = e->ring;

	if (!r)
		return;
	while (r->inring) {
		int rc = io_uring_submit_and_wait(&r->ring, 1);
		r->queued = io_uring_sq_ready(&r->ring);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY &&
		    rc != -ETIME)
			break;
		async__uring_reap(e, 0);
	}
	io_uring_queue_exit(&r->ring);
	free(r);
	e->ring = NULL;
}
