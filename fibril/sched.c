/*
 * fibril/sched.c: the per-thread scheduler: run queue, park/wake,
 * timed parks, wait queues, exit and join.
 *
 * Switching is direct: a fibril that parks or yields inside
 * fibril_sched_run() hands the CPU straight to the next runnable fibril,
 * one fib__switch(), without a detour through the scheduler's
 * context. Outside fibril_sched_run() (fibril_start() from the host's
 * callback, fibril_join() from the scheduler's context) control always
 * goes back to the caller, so the host never has unrelated fibrils run
 * inside its callback.
 *
 * A fibril that yields inside fibril_sched_run() runs again only in the
 * next call, so a busy yielder cannot keep the host loop from polling.
 */
#include "first.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fibril_int.h"

#ifdef FIB__ASAN
#include <sanitizer/common_interface_defs.h>
#endif

static __thread struct fib__sched *tls_sched
	__attribute__((tls_model("initial-exec")));

uint64_t fibril_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- context set-up for the assembly back ends ---- */

#ifndef FIBRIL_SWITCH_UCONTEXT
/* A fibril starts with the FP control state (rounding, exception masks,
 * flush-to-zero) its thread had at fibril_sched_init(): reading it per
 * creation would cost more than the rest of fibril_create(). */
static __thread uint64_t tls_fpctl __attribute__((tls_model("initial-exec")));

static void capture_fpctl(void)
{
#if defined(__x86_64__)
	uint32_t mxcsr;
	uint16_t cw;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	tls_fpctl = (uint64_t)mxcsr | (uint64_t)cw << 32;
#elif defined(__aarch64__)
	uint64_t fpcr;
	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	tls_fpctl = fpcr;
#endif
}

void fib__ctx_make(struct fib__ctx *c, char *lo, char *hi)
{
	uintptr_t top = (uintptr_t)hi & ~(uintptr_t)15;
	(void)lo;
#if defined(__x86_64__)
	/* the frame fib__switch pops: mxcsr|cw, r15..r12, rbx, rbp,
	 * return address (the trampoline), and a zero "caller" above it */
	uint64_t *sp = (uint64_t *)top;
	*--sp = 0;
	*--sp = (uint64_t)(uintptr_t)fib__trampoline;
	for (int i = 0; i < 6; i++)
		*--sp = 0;                     /* rbp rbx r12 r13 r14 r15 */
	*--sp = tls_fpctl;
	c->sp = sp;
#elif defined(__aarch64__)
	/* x19..x28, x29 = 0, x30 = trampoline, d8..d15, fpcr, pad */
	uint64_t *sp = (uint64_t *)(top - 176);
	memset(sp, 0, 176);
	sp[11] = (uint64_t)(uintptr_t)fib__trampoline;
	sp[20] = tls_fpctl;
	c->sp = sp;
#else
#error "no assembly context switch for this CPU: configure --disable-asm-switch"
#endif
}
#else
static void capture_fpctl(void)
{
}
#endif

/* ---- queues ---- */

static inline void runq_push(struct fib__sched *s, fibril_t *f)
{
	f->state = FIB__RUNNABLE;
	f->next = NULL;
	if (s->runq_tail)
		s->runq_tail->next = f;
	else
		s->runq_head = f;
	s->runq_tail = f;
}

static inline fibril_t *runq_pop(struct fib__sched *s)
{
	fibril_t *f = s->runq_head;
	if (f) {
		s->runq_head = f->next;
		if (!s->runq_head)
			s->runq_tail = NULL;
	}
	return f;
}

/* ---- timer heap ---- */

static void heap_set(struct fib__sched *s, unsigned i, fibril_t *f)
{
	s->heap[i - 1] = f;
	f->heap_idx = i;
}

static void heap_up(struct fib__sched *s, unsigned i)
{
	fibril_t *f = s->heap[i - 1];
	while (i > 1) {
		fibril_t *p = s->heap[i / 2 - 1];
		if (p->deadline <= f->deadline)
			break;
		heap_set(s, i, p);
		i /= 2;
	}
	heap_set(s, i, f);
}

static void heap_down(struct fib__sched *s, unsigned i)
{
	fibril_t *f = s->heap[i - 1];
	for (;;) {
		unsigned c = 2 * i;
		if (c > s->heap_len)
			break;
		if (c < s->heap_len && s->heap[c]->deadline < s->heap[c - 1]->deadline)
			c++;
		if (f->deadline <= s->heap[c - 1]->deadline)
			break;
		heap_set(s, i, s->heap[c - 1]);
		i = c;
	}
	heap_set(s, i, f);
}

static int heap_add(struct fib__sched *s, fibril_t *f)
{
	if (s->heap_len == s->heap_cap) {
		unsigned cap = s->heap_cap ? s->heap_cap * 2 : 64;
		fibril_t **n = realloc(s->heap, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->heap = n;
		s->heap_cap = cap;
	}
	s->heap[s->heap_len++] = f;
	f->heap_idx = s->heap_len;
	heap_up(s, s->heap_len);
	return 0;
}

static void heap_del(struct fib__sched *s, fibril_t *f)
{
	unsigned i = f->heap_idx;
	fibril_t *last = s->heap[--s->heap_len];
	f->heap_idx = 0;
	if (last == f)
		return;
	heap_set(s, i, last);
	if (i > 1 && s->heap[i / 2 - 1]->deadline > last->deadline)
		heap_up(s, i);
	else
		heap_down(s, i);
}

/* ---- waking ---- */

static void wq_unlink(fibril_t *f)
{
	struct fibril_waitq *q = f->wq;
	if (f->wq_prev)
		f->wq_prev->wq_next = f->wq_next;
	else
		q->head = f->wq_next;
	if (f->wq_next)
		f->wq_next->wq_prev = f->wq_prev;
	else
		q->tail = f->wq_prev;
	f->wq = NULL;
	f->wq_next = f->wq_prev = NULL;
}

/* A parked fibril becomes runnable: it leaves its timer and wait queue. */
static void make_runnable(struct fib__sched *s, fibril_t *f)
{
	s->parked--;
	if (f->heap_idx)
		heap_del(s, f);
	if (f->wq)
		wq_unlink(f);
	runq_push(s, f);
}

static void fire_timers(struct fib__sched *s)
{
	uint64_t now = fibril_now_ns();
	while (s->heap_len && s->heap[0]->deadline <= now) {
		fibril_t *f = s->heap[0];
		f->flags |= FIB__F_TIMEDOUT;
		make_runnable(s, f);
	}
}

/* ---- switching ---- */

static void release(struct fib__sched *s, fibril_t *f)
{
	if (f->all_prev)
		f->all_prev->all_next = f->all_next;
	else
		s->all = f->all_next;
	if (f->all_next)
		f->all_next->all_prev = f->all_prev;
	fib__stack_put(s, f);
}

static inline void after_switch(struct fib__sched *s)
{
	fibril_t *d = s->dead;
	if (d) {
		s->dead = NULL;
		if (d->flags & FIB__F_DETACHED)
			release(s, d);
	}
}

#ifdef FIB__ASAN
static void asan_finish(struct fib__sched *s, void *fake, fibril_t *from)
{
	const void *bottom;
	size_t size;
	__sanitizer_finish_switch_fiber(fake, &bottom, &size);
	if (!from) {
		s->main_stack_bottom = bottom;
		s->main_stack_size = size;
	}
}
#endif

/* Switches from the running context to @to (NULL: the scheduler's). */
static void switch_to(struct fib__sched *s, fibril_t *to)
{
	fibril_t *from = s->cur;
	struct fib__ctx *fc = from ? &from->ctx : &s->main_ctx;
	struct fib__ctx *tc = to ? &to->ctx : &s->main_ctx;

	if (to) {
		to->state = FIB__RUNNING;
		s->nswitch++;
	}
	s->cur = to;
#ifdef FIB__ASAN
	void *fake = NULL;
	int dying = from && from->state == FIB__EXITED;
	if (to)
		__sanitizer_start_switch_fiber(dying ? NULL : &fake, to->stack_lo,
		                               (size_t)(to->stack_hi - to->stack_lo));
	else
		__sanitizer_start_switch_fiber(dying ? NULL : &fake,
		                               s->main_stack_bottom,
		                               s->main_stack_size);
	s->switched_from = from;
#endif
	fib__ctx_switch(fc, tc);
#ifdef FIB__ASAN
	asan_finish(s, fake, s->switched_from);
#endif
	after_switch(s);
}

/* Where a fibril that stops running goes: inside fibril_sched_run()
 * straight to the next runnable one, otherwise back to the caller. */
static inline fibril_t *next_ctx(struct fib__sched *s)
{
	return s->in_run ? runq_pop(s) : NULL;
}

void fib__main(void)
{
	struct fib__sched *s = tls_sched;
#ifdef FIB__ASAN
	asan_finish(s, NULL, s->switched_from);
#endif
	after_switch(s);
	fibril_t *f = s->cur;
	f->fn(f->arg);
	fibril_exit();
}

/* ---- public API ---- */

int fibril_sched_init(const struct fibril_sched_opts *opts)
{
	struct fib__sched *s;
	int r;

	if (tls_sched)
		return -EBUSY;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = fib__stack_setup(s, opts ? opts->stack_size : 0,
	                   opts ? opts->stack_pool_max : 0);
	if (r == 0)
		r = fib__stack_thread_init(s);
	if (r < 0) {
		free(s);
		return r;
	}
	capture_fpctl();
	tls_sched = s;
	return 0;
}

void fibril_sched_fini(void)
{
	struct fib__sched *s = tls_sched;
	if (!s || s->cur)
		return;
	while (s->all) {
		fibril_t *f = s->all;
		s->all = f->all_next;
		fib__stack_put(s, f);
	}
	fib__stack_fini(s);
	fib__stack_thread_fini(s);
	free(s->heap);
	free(s);
	tls_sched = NULL;
}

static int create(struct fib__sched *s, fibril_t **out, void (*fn)(void *),
                  void *arg, const char *name)
{
	fibril_t *f;

	if (!s)
		return -EINVAL;
	if (!fn)
		return -EINVAL;
	f = fib__stack_get(s);
	if (!f)
		return -ENOMEM;
	f->next = NULL;
	f->state = FIB__RUNNABLE;
	f->flags = out ? 0 : FIB__F_DETACHED;
	f->heap_idx = 0;
	f->fn = fn;
	f->arg = arg;
	f->joiner = NULL;
	f->wq = NULL;
	f->wq_next = f->wq_prev = NULL;
	memset(f->slots, 0, sizeof(f->slots));
	if (name) {
		size_t n = strnlen(name, sizeof(f->name) - 1);
		memcpy(f->name, name, n);
		f->name[n] = 0;
	} else {
		f->name[0] = 0;
	}
	fib__ctx_make(&f->ctx, f->stack_lo, f->stack_hi);
	f->all_prev = NULL;
	f->all_next = s->all;
	if (s->all)
		s->all->all_prev = f;
	s->all = f;
	s->alive++;
	s->created++;
	if (out)
		*out = f;
	return 0;
}

int fibril_create(fibril_t **out, void (*fn)(void *), void *arg,
                  const char *name)
{
	struct fib__sched *s = tls_sched;
	fibril_t *f;
	int r = create(s, &f, fn, arg, name);
	if (r < 0)
		return r;
	if (!out)
		f->flags |= FIB__F_DETACHED;
	else
		*out = f;
	runq_push(s, f);
	return 0;
}

int fibril_start(fibril_t **out, void (*fn)(void *), void *arg,
                 const char *name)
{
	struct fib__sched *s = tls_sched;
	fibril_t *f;
	int r;

	if (s && s->cur)
		return fibril_create(out, fn, arg, name);
	r = create(s, &f, fn, arg, name);
	if (r < 0)
		return r;
	if (!out)
		f->flags |= FIB__F_DETACHED;
	else
		*out = f;
	switch_to(s, f);
	return 0;
}

fibril_t *fibril_self(void)
{
	struct fib__sched *s = tls_sched;
	return s ? s->cur : NULL;
}

void fibril_yield(void)
{
	struct fib__sched *s = tls_sched;
	fibril_t *f = s ? s->cur : NULL;
	if (!f)
		return;
	f->state = FIB__RUNNABLE;
	f->next = NULL;
	if (s->yq_tail)
		s->yq_tail->next = f;
	else
		s->yq_head = f;
	s->yq_tail = f;
	switch_to(s, next_ctx(s));
}

void fibril_park(void)
{
	struct fib__sched *s = tls_sched;
	fibril_t *f = s ? s->cur : NULL;
	if (!f)
		return;
	if (f->flags & FIB__F_WAKE) {
		f->flags &= ~FIB__F_WAKE;
		return;
	}
	f->state = FIB__PARKED;
	s->parked++;
	switch_to(s, next_ctx(s));
}

int fibril_park_until(uint64_t deadline_ns)
{
	struct fib__sched *s = tls_sched;
	fibril_t *f = s ? s->cur : NULL;
	int r;

	if (!f)
		return -EINVAL;
	if (f->flags & FIB__F_WAKE) {
		f->flags &= ~FIB__F_WAKE;
		return 0;
	}
	f->flags &= ~FIB__F_TIMEDOUT;
	f->deadline = deadline_ns;
	r = heap_add(s, f);
	if (r < 0)
		return r;
	f->state = FIB__PARKED;
	s->parked++;
	switch_to(s, next_ctx(s));
	if (f->flags & FIB__F_TIMEDOUT) {
		f->flags &= ~FIB__F_TIMEDOUT;
		return -ETIMEDOUT;
	}
	return 0;
}

void fibril_wake(fibril_t *f)
{
	struct fib__sched *s = tls_sched;
	if (!f || !s)
		return;
	if (f->state == FIB__PARKED)
		make_runnable(s, f);
	else if (f->state != FIB__EXITED)
		f->flags |= FIB__F_WAKE;
}

void fibril_exit(void)
{
	struct fib__sched *s = tls_sched;
	fibril_t *f = s->cur;

	f->state = FIB__EXITED;
	f->flags &= ~FIB__F_WAKE;
	s->alive--;
	if (f->joiner && f->joiner->state == FIB__PARKED)
		make_runnable(s, f->joiner);
	s->dead = f;
	switch_to(s, next_ctx(s));
	__builtin_unreachable();
}

int fibril_join(fibril_t *f)
{
	struct fib__sched *s = tls_sched;
	fibril_t *self;

	if (!s || !f || (f->flags & FIB__F_DETACHED) || f->joiner)
		return -EINVAL;
	self = s->cur;
	if (f == self)
		return -EINVAL;
	if (self) {
		int foreign = 0;
		f->joiner = self;
		while (f->state != FIB__EXITED) {
			fibril_park();
			if (f->state != FIB__EXITED)
				foreign = 1;
		}
		/* a wake-up meant for someone else's wait (the async layer's)
		 * was absorbed by our park: hand it back as a pending one */
		if (foreign)
			self->flags |= FIB__F_WAKE;
	} else {
		while (f->state != FIB__EXITED) {
			if (!s->runq_head && !s->yq_head) {
				int ms = fibril_sched_timeout_ms();
				if (ms < 0)
					return -EDEADLK;
				uint64_t d = s->heap[0]->deadline, now = fibril_now_ns();
				if (d > now) {
					struct timespec ts = {
						.tv_sec = (time_t)((d - now) / 1000000000u),
						.tv_nsec = (long)((d - now) % 1000000000u) };
					nanosleep(&ts, NULL);
				}
			}
			fibril_sched_run();
		}
	}
	release(s, f);
	return 0;
}

void fibril_detach(fibril_t *f)
{
	struct fib__sched *s = tls_sched;
	if (!s || !f)
		return;
	if (f->state == FIB__EXITED && s->dead != f)
		release(s, f);
	else
		f->flags |= FIB__F_DETACHED;
}

int fibril_sched_run(void)
{
	struct fib__sched *s = tls_sched;
	unsigned long start;
	fibril_t *f;

	if (!s || s->cur || s->in_run)
		return 0;
	start = s->nswitch;
	s->in_run = 1;
	for (;;) {
		if (s->heap_len)
			fire_timers(s);
		f = runq_pop(s);
		if (!f)
			break;
		switch_to(s, f);
	}
	s->in_run = 0;
	/* yielders run in the next call: the host loop polls in between */
	if (s->yq_head) {
		s->runq_head = s->yq_head;
		s->runq_tail = s->yq_tail;
		s->yq_head = s->yq_tail = NULL;
	}
	unsigned long n = s->nswitch - start;
	return n > INT_MAX ? INT_MAX : (int)n;
}

int fibril_sched_timeout_ms(void)
{
	struct fib__sched *s = tls_sched;
	if (!s)
		return -1;
	if (s->runq_head || s->yq_head)
		return 0;
	if (!s->heap_len)
		return -1;
	uint64_t d = s->heap[0]->deadline, now = fibril_now_ns();
	if (d <= now)
		return 0;
	uint64_t ms = (d - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

unsigned fibril_sched_count(void)
{
	struct fib__sched *s = tls_sched;
	return s ? s->alive : 0;
}

void fibril_sched_stats(struct fibril_sched_stats *out)
{
	const struct fib__sched *s = tls_sched;

	memset(out, 0, sizeof *out);
	if (!s)
		return;
	out->created = s->created;
	out->switches = s->nswitch;
	out->alive = s->alive;
	out->parked = s->parked;
	out->timed = s->heap_len;
	for (const fibril_t *f = s->runq_head; f; f = f->next)
		out->runnable++;
	for (const fibril_t *f = s->yq_head; f; f = f->next)
		out->runnable++;
}

const char *fibril_name(const fibril_t *f)
{
	return f ? f->name : "";
}

void **fibril_slot(fibril_t *f, unsigned slot)
{
	if (!f || slot >= FIBRIL_NSLOTS)
		return NULL;
	return &f->slots[slot];
}

void fibril_waitq_init(struct fibril_waitq *q)
{
	q->head = q->tail = NULL;
}

int fibril_waitq_wait(struct fibril_waitq *q, uint64_t deadline_ns)
{
	struct fib__sched *s = tls_sched;
	fibril_t *f = s ? s->cur : NULL;
	int r;

	if (!f || !q)
		return -EINVAL;
	if (f->flags & FIB__F_WAKE) {
		f->flags &= ~FIB__F_WAKE;
		return 0;
	}
	f->wq = q;
	f->wq_next = NULL;
	f->wq_prev = q->tail;
	if (q->tail)
		q->tail->wq_next = f;
	else
		q->head = f;
	q->tail = f;
	if (deadline_ns)
		r = fibril_park_until(deadline_ns);
	else {
		fibril_park();
		r = 0;
	}
	if (f->wq)          /* heap allocation failure in park_until */
		wq_unlink(f);
	return r;
}

int fibril_waitq_wake_one(struct fibril_waitq *q)
{
	struct fib__sched *s = tls_sched;
	fibril_t *f = q ? q->head : NULL;
	if (!f || !s)
		return 0;
	make_runnable(s, f);
	return 1;
}

int fibril_waitq_wake_all(struct fibril_waitq *q)
{
	int n = 0;
	while (fibril_waitq_wake_one(q))
		n++;
	return n;
}
