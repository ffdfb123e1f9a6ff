/*
 * t/fibril/test_fibril_core.c: the fibril core (scheduler, stacks, the
 * context switch) without Check, so that contrib/cross/aarch64-test.sh
 * can cross-build it with nothing but a cross libc and run it under
 * qemu-user; it runs natively as a unit test too. What it checks:
 * callee-saved registers (general and FP) and the FP control state
 * survive switches, per fibril, without leaking into other fibrils;
 * FIFO order and fairness of yields; many fibrils created and finished;
 * join of an exited fibril; wake of a parked one from the scheduler's
 * context; a timed park expiring.
 * Exit 0 pass, 1 fail.
 */
#include "first.h"

#include <errno.h>
#include <fenv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fibril/fibril.h"

static int failures;

#define CHECK_EQ(got, want)                                                   \
	do {                                                                  \
		unsigned long long g_ = (unsigned long long)(got);            \
		unsigned long long w_ = (unsigned long long)(want);           \
		if (g_ != w_) {                                               \
			fprintf(stderr, "%s:%d: %s = 0x%llx, want %s = 0x%llx\n", \
			        __FILE__, __LINE__, #got, g_, #want, w_);     \
			failures++;                                           \
		}                                                             \
	} while (0)

static void run_all(void)
{
	while (fibril_sched_count())
		fibril_sched_run();
}

/* ---- callee-saved registers ---- */

/* regs_probe(out, seed): loads every callee-saved register with a value
 * derived from seed, calls fibril_yield(), stores what the registers
 * hold afterwards in out[] (general ones first, then FP). Written in
 * assembly: compiled C could keep the values anywhere. */
#if defined(__x86_64__)
#define NGPR 6
#define NFPR 0
void regs_probe(uint64_t *out, uint64_t seed);
__asm__(
	".text\n"
	".globl regs_probe\n"
	".type regs_probe, @function\n"
	"regs_probe:\n"
	"	pushq %rbp\n	pushq %rbx\n	pushq %r12\n"
	"	pushq %r13\n	pushq %r14\n	pushq %r15\n"
	"	pushq %rdi\n"
	"	leaq 1(%rsi), %rbx\n	leaq 2(%rsi), %rbp\n"
	"	leaq 3(%rsi), %r12\n	leaq 4(%rsi), %r13\n"
	"	leaq 5(%rsi), %r14\n	leaq 6(%rsi), %r15\n"
	"	call fibril_yield@PLT\n"
	"	popq %rdi\n"
	"	movq %rbx, 0(%rdi)\n	movq %rbp, 8(%rdi)\n"
	"	movq %r12, 16(%rdi)\n	movq %r13, 24(%rdi)\n"
	"	movq %r14, 32(%rdi)\n	movq %r15, 40(%rdi)\n"
	"	popq %r15\n	popq %r14\n	popq %r13\n"
	"	popq %r12\n	popq %rbx\n	popq %rbp\n"
	"	ret\n"
	".size regs_probe, .-regs_probe\n");
#elif defined(__aarch64__)
#define NGPR 10
#define NFPR 8
void regs_probe(uint64_t *out, uint64_t seed);
__asm__(
	".text\n"
	".globl regs_probe\n"
	".type regs_probe, %function\n"
	"regs_probe:\n"
	"	stp x29, x30, [sp, #-176]!\n"
	"	mov x29, sp\n"
	"	stp x19, x20, [sp, #16]\n	stp x21, x22, [sp, #32]\n"
	"	stp x23, x24, [sp, #48]\n	stp x25, x26, [sp, #64]\n"
	"	stp x27, x28, [sp, #80]\n	stp d8, d9, [sp, #96]\n"
	"	stp d10, d11, [sp, #112]\n	stp d12, d13, [sp, #128]\n"
	"	stp d14, d15, [sp, #144]\n	str x0, [sp, #160]\n"
	"	add x19, x1, #1\n	add x20, x1, #2\n	add x21, x1, #3\n"
	"	add x22, x1, #4\n	add x23, x1, #5\n	add x24, x1, #6\n"
	"	add x25, x1, #7\n	add x26, x1, #8\n	add x27, x1, #9\n"
	"	add x28, x1, #10\n"
	"	add x9, x1, #11\n	fmov d8, x9\n	add x9, x1, #12\n	fmov d9, x9\n"
	"	add x9, x1, #13\n	fmov d10, x9\n	add x9, x1, #14\n	fmov d11, x9\n"
	"	add x9, x1, #15\n	fmov d12, x9\n	add x9, x1, #16\n	fmov d13, x9\n"
	"	add x9, x1, #17\n	fmov d14, x9\n	add x9, x1, #18\n	fmov d15, x9\n"
	"	bl fibril_yield\n"
	"	ldr x0, [sp, #160]\n"
	"	stp x19, x20, [x0, #0]\n	stp x21, x22, [x0, #16]\n"
	"	stp x23, x24, [x0, #32]\n	stp x25, x26, [x0, #48]\n"
	"	stp x27, x28, [x0, #64]\n	stp d8, d9, [x0, #80]\n"
	"	stp d10, d11, [x0, #96]\n	stp d12, d13, [x0, #112]\n"
	"	stp d14, d15, [x0, #128]\n"
	"	ldp x19, x20, [sp, #16]\n	ldp x21, x22, [sp, #32]\n"
	"	ldp x23, x24, [sp, #48]\n	ldp x25, x26, [sp, #64]\n"
	"	ldp x27, x28, [sp, #80]\n	ldp d8, d9, [sp, #96]\n"
	"	ldp d10, d11, [sp, #112]\n	ldp d12, d13, [sp, #128]\n"
	"	ldp d14, d15, [sp, #144]\n"
	"	ldp x29, x30, [sp], #176\n"
	"	ret\n"
	".size regs_probe, .-regs_probe\n");
#endif

#ifdef NGPR
static void probe_body(void *arg)
{
	uint64_t seed = (uintptr_t)arg << 8;
	uint64_t out[NGPR + NFPR];
	for (int round = 0; round < 3; round++) {
		memset(out, 0, sizeof(out));
		regs_probe(out, seed);
		for (int i = 0; i < NGPR + NFPR; i++)
			CHECK_EQ(out[i], seed + (uint64_t)i + 1);
	}
}

static void test_callee_saved(void)
{
	for (uintptr_t k = 1; k <= 4; k++)
		CHECK_EQ(fibril_create(NULL, probe_body, (void *)k, NULL), 0);
	run_all();
}
#endif

/* ---- FP control state: per fibril, never leaking ---- */

/* The raw control register, compared whole (status flags masked). */
static uint64_t fpctl_get(void)
{
#if defined(__x86_64__)
	uint32_t mx;
	uint16_t cw;
	__asm__ volatile("stmxcsr %0" : "=m"(mx));
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	return (uint64_t)(mx & ~0x3fu) | (uint64_t)cw << 32;
#elif defined(__aarch64__)
	uint64_t fpcr;
	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	return fpcr;
#else
	return (uint64_t)fegetround();
#endif
}

/* A control state different from the default for each k in 1..3:
 * rounding, and flush-to-zero / x87 precision where there is one. */
static void fpctl_set_variant(unsigned k)
{
	static const int modes[] = { FE_TONEAREST, FE_UPWARD, FE_DOWNWARD,
	                             FE_TOWARDZERO };
	fesetround(modes[k & 3]);
#if defined(__x86_64__)
	uint16_t cw;
	uint32_t mx;
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	cw = (uint16_t)((cw & ~0x0300) | (k & 1 ? 0x0000 : 0x0200)); /* precision */
	__asm__ volatile("fldcw %0" : : "m"(cw));
	__asm__ volatile("stmxcsr %0" : "=m"(mx));
	mx ^= 0x8000;                                       /* flush to zero */
	__asm__ volatile("ldmxcsr %0" : : "m"(mx));
#elif defined(__aarch64__)
	uint64_t fpcr;
	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	fpcr ^= 1u << 24;                                   /* FZ */
	__asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

static uint64_t fp_default;

/* Leaves the default alone and must see it after every switch, while
 * the others run with theirs. */
static void fp_quiet(void *arg)
{
	(void)arg;
	for (int i = 0; i < 6; i++) {
		CHECK_EQ(fpctl_get(), fp_default);
		fibril_yield();
	}
	CHECK_EQ(fpctl_get(), fp_default);
}

/* Sets its own state, finds it after each switch, changes it midway
 * (from k to k+1) and then finds the new one. */
static void fp_changer(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	fpctl_set_variant(k);
	uint64_t mine = fpctl_get();
	if (mine == fp_default) {
		fprintf(stderr, "fp variant %u equals the default\n", k);
		failures++;
	}
	for (int i = 0; i < 6; i++) {
		fibril_yield();
		CHECK_EQ(fpctl_get(), mine);
		if (i == 2) {
			fpctl_set_variant(k + 1);
			mine = fpctl_get();
		}
	}
	/* the state dies with the fibril: nobody else may see it */
}

static void test_fp_control(void)
{
	fp_default = fpctl_get();
	CHECK_EQ(fibril_create(NULL, fp_quiet, NULL, NULL), 0);
	for (uintptr_t k = 1; k <= 3; k++) {
		CHECK_EQ(fibril_create(NULL, fp_changer, (void *)k, NULL), 0);
		CHECK_EQ(fibril_create(NULL, fp_quiet, NULL, NULL), 0);
	}
	run_all();
	/* nor did the scheduler's context (the thread) get any of it */
	CHECK_EQ(fpctl_get(), fp_default);
	/* fibrils created after a change of the thread's state start with
	 * the state captured at fibril_sched_init(), not with it */
}

/* ---- ordering, fairness ---- */

static char order[64];
static int norder;

static void yielder(void *arg)
{
	for (int i = 0; i < 3; i++) {
		order[norder++] = (char)(uintptr_t)arg;
		fibril_yield();
	}
}

static void test_order(void)
{
	fibril_t *f[3];
	norder = 0;
	for (int i = 0; i < 3; i++)
		CHECK_EQ(fibril_create(&f[i], yielder, (void *)(uintptr_t)('a' + i),
		                       NULL), 0);
	CHECK_EQ(norder, 0);
	CHECK_EQ(fibril_sched_run(), 3);       /* each yielder once per run */
	run_all();
	order[norder] = 0;
	if (strcmp(order, "abcabcabc") != 0) {
		fprintf(stderr, "order \"%s\", want \"abcabcabc\"\n", order);
		failures++;
	}
	for (int i = 0; i < 3; i++)
		CHECK_EQ(fibril_join(f[i]), 0);    /* all exited: no wait */
}

/* ---- many fibrils, park/wake from outside, timed park ---- */

static long finished;

static void count_body(void *arg)
{
	(void)arg;
	finished++;
}

static void test_many(int n)
{
	finished = 0;
	for (int i = 0; i < n; i++) {
		if (fibril_create(NULL, count_body, NULL, NULL) != 0) {
			fprintf(stderr, "fibril_create %d failed\n", i);
			failures++;
			break;
		}
	}
	run_all();
	CHECK_EQ(finished, n);
	CHECK_EQ(fibril_sched_count(), 0);
}

static int woke;

static void parker(void *arg)
{
	(void)arg;
	fibril_park();
	woke = 1;
}

static void test_wake_from_scheduler(void)
{
	fibril_t *f;
	woke = 0;
	CHECK_EQ(fibril_create(&f, parker, NULL, "parker"), 0);
	fibril_sched_run();
	CHECK_EQ(woke, 0);
	CHECK_EQ(fibril_sched_timeout_ms(), -1);  /* parked, no timer */
	fibril_wake(f);
	fibril_sched_run();
	CHECK_EQ(woke, 1);
	CHECK_EQ(fibril_join(f), 0);
}

static int timed_result;

static void timed(void *arg)
{
	(void)arg;
	timed_result = fibril_park_until(fibril_now_ns() + 2000000);
}

static void test_timed_park(void)
{
	fibril_t *f;
	timed_result = 1;
	CHECK_EQ(fibril_create(&f, timed, NULL, NULL), 0);
	CHECK_EQ(fibril_join(f), 0);     /* sleeps until the deadline */
	CHECK_EQ(timed_result, -ETIMEDOUT);
}

int main(void)
{
	if (fibril_sched_init(NULL) != 0) {
		fprintf(stderr, "fibril_sched_init failed\n");
		return 1;
	}
#ifdef NGPR
	test_callee_saved();
#endif
	test_fp_control();
	test_order();
	test_many(getenv("FIBRIL_CORE_MANY") ? atoi(getenv("FIBRIL_CORE_MANY"))
	                                     : 100000);
	test_wake_from_scheduler();
	test_timed_park();
	fibril_sched_fini();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
