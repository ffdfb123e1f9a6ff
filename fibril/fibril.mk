# fibril/fibril.mk: owned by its folder's work; appends to the variables of Makefile.am
#
# libfibril is three parts, each with its own fragment, files and
# private prefix; each part uses only the parts listed before it:
#   core (this file): sched.c, stack.c, switch_*: fibrils, their stacks
#     and the context switch. Private names fib__ (fibril_int.h).
#   async engine (async.mk): async*.c: async_submit() on io_uring or a
#     thread pool, and the engine's one wait point. Private names async__
#     (async_int.h, async_cred.h).
#   lookup engine (lookup.mk): lookup_*.c: lk_*, roots, opens, lookups
#     and directory scans. Private names lk__ (lookup_int.h).

# ---- core: scheduler, stacks, context switch ----
lib_LTLIBRARIES += fibril/libfibril.la
fibril_libfibril_la_SOURCES =
fibril_libfibril_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(URING_CFLAGS) $(LIBEVENT_CFLAGS)
fibril_libfibril_la_LIBADD = $(URING_LIBS) $(LIBEVENT_LIBS) -lpthread
fibril_libfibril_la_LDFLAGS = -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/fibril/libfibril.map
EXTRA_DIST += fibril/libfibril.map fibril/libfibril.pc.in
fibrilincludedir = $(includedir)/fibril
fibrilinclude_HEADERS = fibril/include/fibril/fibril.h
fibril_libfibril_la_SOURCES += fibril/sched.c fibril/stack.c fibril/fibril_int.h
if SWITCH_X86_64
fibril_libfibril_la_SOURCES += fibril/switch_x86_64.S
endif
if SWITCH_AARCH64
fibril_libfibril_la_SOURCES += fibril/switch_aarch64.S
endif
if SWITCH_UCONTEXT
fibril_libfibril_la_SOURCES += fibril/switch_ucontext.c
endif
EXTRA_DIST += fibril/switch_x86_64.S fibril/switch_aarch64.S fibril/switch_ucontext.c

noinst_PROGRAMS += contrib/bench/fibril-bench
contrib_bench_fibril_bench_SOURCES = contrib/bench/fibril-bench.c
contrib_bench_fibril_bench_LDADD = fibril/libfibril.la -lpthread
# Linked as fileserverd links the library (statically): through the
# shared object every fibril_wake()/fibril_park() also pays a PLT jump and
# a GOT load for the scheduler's TLS slot, about 1-2 ns of a 9 ns switch.
contrib_bench_fibril_bench_LDFLAGS = -static

# ---- tests (the naming scheme is in Makefile.am) ----
# test_fibril_core uses no Check: contrib/cross/aarch64-test.sh
# cross-builds it and runs it under qemu-user.
FIBRIL_UNIT = t/fibril/test_fibril t/fibril/test_fibril_stack \
	t/fibril/test_fibril_regs t/fibril/test_fibril_core
check_PROGRAMS += $(FIBRIL_UNIT)
TESTS += $(FIBRIL_UNIT)
UNIT_TESTS += $(FIBRIL_UNIT)
t_fibril_test_fibril_SOURCES = t/fibril/test_fibril.c
t_fibril_test_fibril_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_fibril_LDADD = fibril/libfibril.la $(UNIT_LDADD)
t_fibril_test_fibril_stack_SOURCES = t/fibril/test_fibril_stack.c
t_fibril_test_fibril_stack_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_fibril_stack_LDADD = fibril/libfibril.la $(UNIT_LDADD)
t_fibril_test_fibril_regs_SOURCES = t/fibril/test_fibril_regs.c
t_fibril_test_fibril_regs_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_fibril_regs_LDADD = fibril/libfibril.la $(UNIT_LDADD) -lm
t_fibril_test_fibril_core_SOURCES = t/fibril/test_fibril_core.c
t_fibril_test_fibril_core_LDADD = fibril/libfibril.la -lm
# The core tests under valgrind (not in UNIT_TESTS: the ASan build would
# run valgrind on sanitized binaries), and cross-built for aarch64 under
# qemu-user (skips with 77 without gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross and qemu-user).
FIBRIL_IT = t/fibril/valgrind.sh contrib/cross/aarch64-test.sh
TESTS += $(FIBRIL_IT)
dist_check_SCRIPTS += $(FIBRIL_IT)
