/*
 * fibril/stack.c: fibril stacks. Each stack is a slot of a larger
 * anonymous mapping (a slab of FIB__SLAB stacks: one mmap, not one per
 * fibril; system calls that change mappings cost 5-10 us each on this
 * VM). A slot is a guard region at the low end, the stack, and the
 * fibril's control block at the top. Freed stacks go to a per-thread
 * pool: the first pool_max keep their pages ("hot": reuse costs nothing),
 * the rest give their pages back with MADV_DONTNEED and wait, as address
 * space only, for reuse. Slabs are unmapped by fibril_sched_fini().
 *
 * The guard is installed with MADV_GUARD_INSTALL (Linux 6.13) when the
 * kernel has it: it needs no VMA of its own, so 100,000 fibrils stay far
 * below vm.max_map_count (65530 by default). Older kernels get
 * mprotect(PROT_NONE), which costs two VMAs per stack.
 *
 * A SIGSEGV on the running fibril's guard is reported, on an alternate
 * signal stack, with the fibril's name, and the process then dies of
 * the signal as it would without us.
 */
#include "first.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fibril_int.h"

#ifdef FIB__ASAN
#include <sanitizer/asan_interface.h>
#endif
#ifdef FIB__VALGRIND
#include <valgrind/valgrind.h>
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* 128 KiB: request code runs snprintf (glibc's vfprintf keeps ~1-2 KiB
 * of work space on the stack), strftime, qsort comparators and the
 * lookup engine with PATH_MAX (4 KiB) buffers a few frames deep; 128 KiB
 * leaves a wide margin over that, costs only address space (pages are
 * touched on demand: a parked request holds one or two) and is musl's
 * default thread stack, chosen there after 80 KiB proved tight.
 * ASan's redzones roughly triple frame sizes, so sanitizer builds get 4x. */
#ifdef FIB__ASAN
#define FIB__STACK_DEFAULT (512u << 10)
#else
#define FIB__STACK_DEFAULT (128u << 10)
#endif
/* 16 KiB of guard: a frame up to that size (a few PATH_MAX buffers)
 * that jumps over a single guard page would land in the neighbouring
 * stack unseen. The guard costs address space only. */
#define FIB__GUARD (16u << 10)
#define FIB__POOL_DEFAULT 128u
#define FIB__SLAB 16u

static int guard_madvise_ok = 1;  /* cleared once the kernel says EINVAL */

int fib__stack_setup(struct fib__sched *s, size_t stack_size, unsigned pool_max)
{
	long pg = sysconf(_SC_PAGESIZE);

	s->page = pg > 0 ? (size_t)pg : 4096;
	if (!stack_size)
		stack_size = FIB__STACK_DEFAULT;
	if (stack_size > ((size_t)1 << 30))
		return -EINVAL;
	s->guard = (FIB__GUARD + s->page - 1) & ~(s->page - 1);
	s->map_size = s->guard + ((stack_size + sizeof(struct fibril) + 64 +
	                           s->page - 1) & ~(s->page - 1));
	s->pool_max = pool_max ? pool_max : FIB__POOL_DEFAULT;
	return 0;
}

static fibril_t *stack_layout(struct fib__sched *s, char *map)
{
	uintptr_t top = (uintptr_t)map + s->map_size;
	fibril_t *f = (fibril_t *)((top - sizeof(struct fibril)) &
	                           ~(uintptr_t)63);
	f->map = map;
	f->map_size = s->map_size;
	f->stack_lo = map + s->guard;
	f->stack_hi = (char *)f;
	f->vg_id = 0;
#ifdef FIB__VALGRIND
	f->vg_id = VALGRIND_STACK_REGISTER(f->stack_lo, f->stack_hi);
#endif
	return f;
}

static int push_cold(struct fib__sched *s, char *map)
{
	if (s->ncold == s->cold_cap) {
		unsigned cap = s->cold_cap ? s->cold_cap * 2 : 64;
		char **n = realloc(s->cold, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->cold = n;
		s->cold_cap = cap;
	}
	s->cold[s->ncold++] = map;
	return 0;
}

/* Maps a slab; its stacks (guards installed, pages untouched) join the
 * cold list. */
static int slab_new(struct fib__sched *s)
{
	size_t size = (size_t)FIB__SLAB * s->map_size;
	char *map;

	if (s->nslab == s->slab_cap) {
		unsigned cap = s->slab_cap ? s->slab_cap * 2 : 16;
		char **n = realloc(s->slabs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->slabs = n;
		s->slab_cap = cap;
	}
	if (s->cold_cap - s->ncold < FIB__SLAB) {
		unsigned cap = s->cold_cap ? s->cold_cap : 64;
		while (cap - s->ncold < FIB__SLAB)
			cap *= 2;
		char **n = realloc(s->cold, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->cold = n;
		s->cold_cap = cap;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE,
	           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED)
		return -errno;
	/* handed out from the low end: first stacks' pages sit together */
	for (unsigned i = FIB__SLAB; i-- > 0;) {
		char *g = map + (size_t)i * s->map_size;
		if (!guard_madvise_ok || madvise(g, s->guard, MADV_GUARD_INSTALL)) {
			guard_madvise_ok = 0;
			if (mprotect(g, s->guard, PROT_NONE) != 0) {
				int e = errno;
				munmap(map, size);
				s->ncold -= FIB__SLAB - 1 - i;
				return -e;
			}
		}
		s->cold[s->ncold++] = g;
	}
	s->slabs[s->nslab++] = map;
	return 0;
}

fibril_t *fib__stack_get(struct fib__sched *s)
{
	fibril_t *f = s->pool;

	if (fib__likely(f != NULL)) {
		s->pool = f->next;
		s->npool--;
		return f;
	}
	if (!s->ncold && slab_new(s) < 0)
		return NULL;
	return stack_layout(s, s->cold[--s->ncold]);
}

void fib__stack_put(struct fib__sched *s, fibril_t *f)
{
#ifdef FIB__ASAN
	/* Frames that never returned (those of an abandoned fibril, or the
	 * last ones of an exited one) keep their poisoned redzones; the next
	 * user must start clean. They all lie above the saved stack pointer;
	 * a whole 512 KiB stack would mean 64 KiB of shadow per fibril. */
#ifdef FIBRIL_SWITCH_UCONTEXT
	char *lo = f->stack_lo;
#else
	char *lo = (char *)f->ctx.sp - 256;
	if (lo < f->stack_lo || lo > f->stack_hi)
		lo = f->stack_lo;
#endif
	ASAN_UNPOISON_MEMORY_REGION(lo, (size_t)(f->stack_hi - lo));
#endif
	if (fib__likely(s->npool < s->pool_max)) {
		f->next = s->pool;
		s->pool = f;
		s->npool++;
		return;
	}
	char *map = f->map;
#ifdef FIB__VALGRIND
	VALGRIND_STACK_DEREGISTER(f->vg_id);
#endif
	if (push_cold(s, map) < 0)
		return;  /* leaks one slot's address space, keeps its pages */
	madvise(map + s->guard, s->map_size - s->guard, MADV_DONTNEED);
}

void fib__stack_fini(struct fib__sched *s)
{
#ifdef FIB__VALGRIND
	for (fibril_t *f = s->pool; f; f = f->next)
		VALGRIND_STACK_DEREGISTER(f->vg_id);
#endif
	s->pool = NULL;
	s->npool = 0;
	while (s->nslab)
		munmap(s->slabs[--s->nslab], (size_t)FIB__SLAB * s->map_size);
	free(s->slabs);
	free(s->cold);
	s->slabs = NULL;
	s->cold = NULL;
	s->slab_cap = s->cold_cap = s->ncold = 0;
}

/* ---- stack overflow reporting ---- */

static struct sigaction old_segv;
static pthread_once_t segv_once = PTHREAD_ONCE_INIT;

static size_t fmt_str(char *p, const char *s)
{
	size_t n = 0;
	while (s[n])
		p[n] = s[n], n++;
	return n;
}

static size_t fmt_hex(char *p, uintptr_t v)
{
	char tmp[2 + 2 * sizeof(v)];
	size_t n = 0, i = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	p[i++] = '0';
	p[i++] = 'x';
	while (n)
		p[i++] = tmp[--n];
	return i;
}

/* This thread's scheduler while its stacks are guarded (between
 * fib__stack_thread_init and fib__stack_thread_fini): the handler finds the
 * running fibril here, so this file needs nothing from sched.c. */
static __thread struct fib__sched *tls_guarded
	__attribute__((tls_model("initial-exec")));

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	struct fib__sched *s = tls_guarded;
	fibril_t *f = s ? s->cur : NULL;
	char *addr = si->si_addr;

	if (f && addr >= f->map && addr < f->stack_lo) {
		char msg[256];
		size_t n = 0;
		n += fmt_str(msg + n, "fibril: stack overflow in fibril \"");
		size_t nl = strnlen(f->name, sizeof(f->name));
		memcpy(msg + n, f->name, nl);
		n += nl;
		n += fmt_str(msg + n, "\" (");
		n += fmt_hex(msg + n, (uintptr_t)f);
		n += fmt_str(msg + n, "): fault at ");
		n += fmt_hex(msg + n, (uintptr_t)addr);
		n += fmt_str(msg + n, ", stack ");
		n += fmt_hex(msg + n, (uintptr_t)f->stack_lo);
		n += fmt_str(msg + n, "-");
		n += fmt_hex(msg + n, (uintptr_t)f->stack_hi);
		n += fmt_str(msg + n, "\n");
		ssize_t r = write(STDERR_FILENO, msg, n);
		(void)r;
		/* die of the signal: the faulting instruction re-runs with the
		 * default action in place */
		signal(SIGSEGV, SIG_DFL);
		return;
	}
	if (old_segv.sa_flags & SA_SIGINFO) {
		if (old_segv.sa_sigaction) {
			old_segv.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (old_segv.sa_handler != SIG_DFL &&
	           old_segv.sa_handler != SIG_IGN) {
		old_segv.sa_handler(sig);
		return;
	}
	signal(SIGSEGV, SIG_DFL);
}

static void segv_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = segv_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
}

int fib__stack_thread_init(struct fib__sched *s)
{
	stack_t ss;

	pthread_once(&segv_once, segv_install);
	/* an overflow leaves no stack to run the handler on: it needs the
	 * alternate one. Keep one the thread (or ASan) already set up. */
	if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE)) {
		tls_guarded = s;
		return 0;
	}
	size_t size = 64u << 10;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	ss.ss_sp = p;
	ss.ss_size = size;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) != 0) {
		int e = errno;
		munmap(p, size);
		return -e;
	}
	s->altstack = p;
	s->altstack_size = size;
	tls_guarded = s;
	return 0;
}

void fib__stack_thread_fini(struct fib__sched *s)
{
	if (tls_guarded == s)
		tls_guarded = NULL;
	if (!s->altstack)
		return;
	stack_t ss, cur;
	if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == s->altstack) {
		memset(&ss, 0, sizeof(ss));
		ss.ss_flags = SS_DISABLE;
		sigaltstack(&ss, NULL);
	}
	munmap(s->altstack, s->altstack_size);
	s->altstack = NULL;
}
