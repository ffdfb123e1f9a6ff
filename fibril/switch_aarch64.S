/*
 * fibril/switch_aarch64.S: context switch for AAPCS64.
 *
 * Callee-saved by the procedure call standard: x19-x28, the frame
 * pointer x29, the link register x30 (our return address), sp, and the
 * low 64 bits of v8-v15 (d8-d15). FPCR holds rounding mode and
 * flush-to-zero, which code expects to be preserved across calls like
 * the x86 MXCSR control bits, so it travels too; FPSR (sticky
 * exception flags) is status, not control, and is not saved. All other
 * registers are caller-saved: the caller of a switch has already given
 * them up, so they are not stored.
 *
 * Frame (176 bytes, 16-aligned), from sp: x19..x28, x29, x30, d8..d15,
 * FPCR, pad.
 */
	.text

/* void fib__switch(void **save_sp, void *new_sp) */
	.globl	fib__switch
	.hidden	fib__switch
	.type	fib__switch, %function
	.p2align 4
fib__switch:
	.cfi_startproc
	sub	sp, sp, #176
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mrs	x9, fpcr
	str	x9, [sp, #160]
	mov	x10, sp
	str	x10, [x0]
	mov	sp, x1
	/* Writing FPCR synchronises the FP pipeline on many cores; reading
	 * it is cheap. Nearly every context runs with the thread's default
	 * FPCR, so write it only when the incoming context's differs from
	 * the live one (still in x9: no memory round trip). */
	ldr	x10, [sp, #160]
	cmp	x9, x10
	b.eq	1f
	msr	fpcr, x10
1:
	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	add	sp, sp, #176
	ret
	.cfi_endproc
	.size	fib__switch, .-fib__switch

/* A new fibril's first return lands here with x29 = 0 (fib__ctx_make()),
 * so frame-pointer walks stop; the undefined x30 ends CFI unwinding. */
	.globl	fib__trampoline
	.hidden	fib__trampoline
	.type	fib__trampoline, %function
	.p2align 4
fib__trampoline:
	.cfi_startproc
	.cfi_undefined x30
	bl	fib__main
	brk	#0
	.cfi_endproc
	.size	fib__trampoline, .-fib__trampoline

	.section .note.GNU-stack,"",%progbits
