/*
 * fibril/switch_ucontext.c: the portable context switch (configure
 * --disable-asm-switch, or a CPU without an assembly back end).
 * swapcontext() also saves and restores the signal mask, a system call
 * per switch: correct everywhere, some 50x slower than the assembly.
 */
#include "first.h"

#include <stdlib.h>

#include "fibril_int.h"

#ifdef FIBRIL_SWITCH_UCONTEXT

static void entry(void)
{
	fib__main();
}

void fib__ctx_make(struct fib__ctx *c, char *lo, char *hi)
{
	if (getcontext(&c->uc) != 0)
		abort();
	c->uc.uc_stack.ss_sp = lo;
	c->uc.uc_stack.ss_size = (size_t)(hi - lo);
	c->uc.uc_link = NULL;
	makecontext(&c->uc, entry, 0);
}

void fib__ctx_switch(struct fib__ctx *from, struct fib__ctx *to)
{
	if (swapcontext(&from->uc, &to->uc) != 0)
		abort();
}

#endif
