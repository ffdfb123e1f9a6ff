/*
 * fibril/switch_x86_64.S: context switch for the System V x86-64 ABI.
 *
 * A switch is a function call, so only what the ABI makes callee-saved
 * has to survive it: rbx, rbp, r12-r15, rsp, the control bits of MXCSR
 * and the x87 control word (SysV ABI 3.2.1: "the control bits of the
 * MXCSR register and the x87 CW are callee-saved"). Everything else
 * (rax, rcx, rdx, rsi, rdi, r8-r11, xmm0-15, x87 stack, status flags) is
 * already dead for the caller, so saving it would be pure waste. The
 * state goes on the stack being left; the context is just rsp.
 *
 * Frame, from high to low address: return address, rbp, rbx, r12, r13,
 * r14, r15, then 8 bytes holding MXCSR (4) and the x87 CW (2).
 *
 * Both words are loaded unconditionally. On this AMD EPYC (Zen 5) VM it
 * is the store, stmxcsr, that costs (~3 ns of a bare 5 ns switch, two
 * contexts switching from one call site; fnstcw is free, ldmxcsr nearly
 * so, fldcw ~1 ns). Loading only when the incoming words differ needs
 * the live ones read back from the stmxcsr/fnstcw stores, and that made
 * the park/wake hand-off ~2 ns slower, not faster (12.3 vs 10.4 ns, best
 * of 21 interleaved runs). The aarch64 switch does skip the FPCR write:
 * there mrs gives the live value in a register.
 */
	.text

/* void fib__switch(void **save_sp, void *new_sp) */
	.globl	fib__switch
	.hidden	fib__switch
	.type	fib__switch, @function
	.p2align 4
fib__switch:
	.cfi_startproc
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	subq	$8, %rsp
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	addq	$8, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret
	.cfi_endproc
	.size	fib__switch, .-fib__switch

/* First "return" of a new fibril lands here (see fib__ctx_make()). rsp is
 * then 8 mod 16, as at any function entry, and the slot above it holds
 * a zero return address so that unwinders and debuggers stop here. */
	.globl	fib__trampoline
	.hidden	fib__trampoline
	.type	fib__trampoline, @function
	.p2align 4
fib__trampoline:
	.cfi_startproc
	.cfi_undefined rip
	pushq	%rbp
	call	fib__main
	ud2
	.cfi_endproc
	.size	fib__trampoline, .-fib__trampoline

	.section .note.GNU-stack,"",@progbits
