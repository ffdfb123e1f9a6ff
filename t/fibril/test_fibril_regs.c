/* t/fibril/test_fibril_regs.c: what the ABI says survives a call
 * survives a fibril switch: callee-saved registers, the x87 control word
 * and MXCSR (x86_64), FPCR (aarch64), i.e. the rounding mode each fibril
 * set for itself. */
#include "first.h"

#include <fenv.h>
#include <stdint.h>
#include <string.h>

#include "fibril/fibril.h"
#include "t/tmain.h"

static void setup(void)
{
	ck_assert_int_eq(fibril_sched_init(NULL), 0);
}

static void teardown(void)
{
	fibril_sched_fini();
}

#if defined(__x86_64__)
/* Loads rbx, rbp, r12-r15 with values derived from @out, calls
 * fibril_yield() and stores what the registers hold afterwards. The
 * compiler cannot help here: the values live only in the registers. */
void regs_probe(uint64_t *out);
__asm__(
	".text\n"
	".globl regs_probe\n"
	".type regs_probe, @function\n"
	"regs_probe:\n"
	"	pushq %rbp\n	pushq %rbx\n	pushq %r12\n"
	"	pushq %r13\n	pushq %r14\n	pushq %r15\n"
	"	pushq %rdi\n"                 /* 7 pushes: rsp 16-aligned */
	"	movq %rdi, %rbx\n	xorq $0x1111, %rbx\n"
	"	movq %rdi, %rbp\n	xorq $0x2222, %rbp\n"
	"	movq %rdi, %r12\n	xorq $0x3333, %r12\n"
	"	movq %rdi, %r13\n	xorq $0x4444, %r13\n"
	"	movq %rdi, %r14\n	xorq $0x5555, %r14\n"
	"	movq %rdi, %r15\n	xorq $0x6666, %r15\n"
	"	call fibril_yield@PLT\n"
	"	popq %rdi\n"
	"	movq %rbx, 0(%rdi)\n	movq %rbp, 8(%rdi)\n"
	"	movq %r12, 16(%rdi)\n	movq %r13, 24(%rdi)\n"
	"	movq %r14, 32(%rdi)\n	movq %r15, 40(%rdi)\n"
	"	popq %r15\n	popq %r14\n	popq %r13\n"
	"	popq %r12\n	popq %rbx\n	popq %rbp\n"
	"	ret\n"
	".size regs_probe, .-regs_probe\n");

static const uint64_t reg_xor[6] = { 0x1111, 0x2222, 0x3333, 0x4444,
                                     0x5555, 0x6666 };

static void probe_body(void *arg)
{
	uint64_t *out = arg;
	for (int round = 0; round < 3; round++) {
		memset(out, 0, 6 * sizeof(*out));
		regs_probe(out);
		for (int i = 0; i < 6; i++)
			ck_assert_msg(out[i] == ((uint64_t)(uintptr_t)out ^ reg_xor[i]),
			              "reg %d: got 0x%llx want 0x%llx", i,
			              (unsigned long long)out[i],
			              (unsigned long long)((uintptr_t)out ^ reg_xor[i]));
	}
}

START_TEST(test_callee_saved_asm)
{
	static uint64_t out[4][6];
	fibril_t *f[4];
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(fibril_create(&f[i], probe_body, out[i], NULL), 0);
	while (fibril_sched_count())
		fibril_sched_run();
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(fibril_join(f[i]), 0);
}
END_TEST

static uint16_t get_cw(void)
{
	uint16_t cw;
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	return cw;
}

static void set_cw(uint16_t cw)
{
	__asm__ volatile("fldcw %0" : : "m"(cw));
}

static uint32_t get_mxcsr(void)
{
	uint32_t m;
	__asm__ volatile("stmxcsr %0" : "=m"(m));
	return m;
}

static void set_mxcsr(uint32_t m)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(m));
}

/* Each fibril sets its own precision/rounding control and MXCSR
 * rounding + flush-to-zero, yields, and must find them unchanged. */
static void ctl_body(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	uint16_t cw = (uint16_t)((0x037f & ~0x0f00) | (k & 3) << 10 | (k & 2) << 8);
	uint32_t mx = (0x1f80 & ~0x6000u) | (k & 3) << 13 | (k & 1) << 15;
	set_cw(cw);
	set_mxcsr(mx);
	/* valgrind emulates only the rounding bits: compare with what took */
	cw = get_cw();
	mx = get_mxcsr() & ~0x3fu;
	for (int i = 0; i < 5; i++) {
		fibril_yield();
		ck_assert_uint_eq(get_cw(), cw);
		ck_assert_uint_eq(get_mxcsr() & ~0x3fu, mx);  /* minus status flags */
	}
}

/* Control state must not leak: a fibril that never touches it sees the
 * thread's defaults after every switch, even right after a fibril with
 * another x87 precision, rounding and flush-to-zero ran; a fibril that
 * changes its state midway gets the new one back. */
static uint16_t cw_default;
static uint32_t mx_default;

static void quiet_body(void *arg)
{
	(void)arg;
	for (int i = 0; i < 6; i++) {
		fibril_yield();
		ck_assert_uint_eq(get_cw(), cw_default);
		ck_assert_uint_eq(get_mxcsr() & ~0x3fu, mx_default);
	}
}

static void changer_body(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	for (int phase = 0; phase < 2; phase++, k++) {
		/* precision single (00) or double (10) instead of extended,
		 * and a rounding other than nearest: valgrind emulates only
		 * the rounding bits, which alone must still differ */
		uint16_t cw = (uint16_t)((cw_default & ~0x0f00u) | (k & 1 ? 0 : 0x0200) |
		                         (k % 3 + 1) << 10);
		uint32_t mx = (mx_default & ~0xe000u) | (k % 3 + 1) << 13 | 0x8000u;
		set_cw(cw);
		set_mxcsr(mx);
		cw = get_cw();
		mx = get_mxcsr() & ~0x3fu;
		ck_assert_uint_ne(cw, cw_default);
		ck_assert_uint_ne(mx, mx_default);
		for (int i = 0; i < 3; i++) {
			fibril_yield();
			ck_assert_uint_eq(get_cw(), cw);
			ck_assert_uint_eq(get_mxcsr() & ~0x3fu, mx);
		}
	}
}

START_TEST(test_x87_mxcsr_no_leak)
{
	cw_default = get_cw();
	mx_default = get_mxcsr() & ~0x3fu;
	ck_assert_int_eq(fibril_create(NULL, quiet_body, NULL, NULL), 0);
	for (uintptr_t k = 1; k <= 3; k++) {
		ck_assert_int_eq(fibril_create(NULL, changer_body, (void *)k, NULL), 0);
		ck_assert_int_eq(fibril_create(NULL, quiet_body, NULL, NULL), 0);
	}
	while (fibril_sched_count())
		fibril_sched_run();
	ck_assert_uint_eq(get_cw(), cw_default);
	ck_assert_uint_eq(get_mxcsr() & ~0x3fu, mx_default);
}
END_TEST

START_TEST(test_x87_cw_and_mxcsr)
{
	uint16_t cw0 = get_cw();
	uint32_t mx0 = get_mxcsr() & ~0x3fu;
	for (uintptr_t k = 0; k < 4; k++)
		ck_assert_int_eq(fibril_create(NULL, ctl_body, (void *)k, NULL), 0);
	while (fibril_sched_count())
		fibril_sched_run();
	/* the scheduler's own context kept its state too */
	ck_assert_uint_eq(get_cw(), cw0);
	ck_assert_uint_eq(get_mxcsr() & ~0x3fu, mx0);
}
END_TEST
#endif

/* Portable: rounding mode per fibril through <fenv.h>. */
static const int modes[] = { FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO };
static volatile double one = 1.0, three = 3.0;

static void round_body(void *arg)
{
	int m = modes[(uintptr_t)arg];
	ck_assert_int_eq(fesetround(m), 0);
	double before = one / three;
	for (int i = 0; i < 4; i++) {
		fibril_yield();
		ck_assert_int_eq(fegetround(), m);
		double after = one / three;
		ck_assert_msg(before == after, "mode %d: %a != %a", m, before, after);
	}
}

START_TEST(test_rounding_mode_per_fibril)
{
	int m0 = fegetround();
	for (uintptr_t k = 0; k < 4; k++)
		ck_assert_int_eq(fibril_create(NULL, round_body, (void *)k, NULL), 0);
	while (fibril_sched_count())
		fibril_sched_run();
	ck_assert_int_eq(fegetround(), m0);
}
END_TEST

/* Portable: a fibril that leaves the rounding mode alone keeps the
 * thread's, however the others set theirs (FPCR on aarch64). */
static int round_default;

static void round_quiet(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++) {
		fibril_yield();
		ck_assert_int_eq(fegetround(), round_default);
	}
}

START_TEST(test_rounding_mode_no_leak)
{
	round_default = fegetround();
	for (uintptr_t k = 1; k < 4; k++) {
		ck_assert_int_eq(fibril_create(NULL, round_body, (void *)k, NULL), 0);
		ck_assert_int_eq(fibril_create(NULL, round_quiet, NULL, NULL), 0);
	}
	while (fibril_sched_count())
		fibril_sched_run();
	ck_assert_int_eq(fegetround(), round_default);
}
END_TEST

/* Portable: many integer and FP values live across switches, as many as
 * the compiler can keep in callee-saved registers (and more). */
static void pressure_body(void *arg)
{
	uint64_t s = (uintptr_t)arg;
	uint64_t a = s * 3, b = s * 5, c = s * 7, d = s * 11, e = s * 13,
	         g = s * 17, h = s * 19, i = s * 23;
	double x = (double)s * 1.5, y = (double)s * 2.5, z = (double)s * 3.5;
	for (int r = 0; r < 4; r++) {
		fibril_yield();
		a += 1; b += 1; c += 1; d += 1; e += 1; g += 1; h += 1; i += 1;
		x += 1; y += 1; z += 1;
	}
	ck_assert_uint_eq(a, s * 3 + 4);
	ck_assert_uint_eq(b, s * 5 + 4);
	ck_assert_uint_eq(c, s * 7 + 4);
	ck_assert_uint_eq(d, s * 11 + 4);
	ck_assert_uint_eq(e, s * 13 + 4);
	ck_assert_uint_eq(g, s * 17 + 4);
	ck_assert_uint_eq(h, s * 19 + 4);
	ck_assert_uint_eq(i, s * 23 + 4);
	ck_assert_msg(x == (double)s * 1.5 + 4, "x %f", x);
	ck_assert_msg(y == (double)s * 2.5 + 4, "y %f", y);
	ck_assert_msg(z == (double)s * 3.5 + 4, "z %f", z);
}

START_TEST(test_values_live_across_switches)
{
	for (uintptr_t k = 1; k <= 8; k++)
		ck_assert_int_eq(fibril_create(NULL, pressure_body, (void *)(k * 1000003), NULL), 0);
	while (fibril_sched_count())
		fibril_sched_run();
}
END_TEST

static Suite *regs_suite(void)
{
	Suite *s = suite_create("fibril_regs");
	TCase *tc = tcase_create("regs");
	tcase_add_checked_fixture(tc, setup, teardown);
#if defined(__x86_64__)
	tcase_add_test(tc, test_callee_saved_asm);
	tcase_add_test(tc, test_x87_cw_and_mxcsr);
	tcase_add_test(tc, test_x87_mxcsr_no_leak);
#endif
	tcase_add_test(tc, test_rounding_mode_per_fibril);
	tcase_add_test(tc, test_rounding_mode_no_leak);
	tcase_add_test(tc, test_values_live_across_switches);
	suite_add_tcase(s, tc);
	return s;
}

TMAIN_SUITE(.suite = regs_suite);
