# fibril/async.mk: owned by its folder's work; appends to the variables of Makefile.am
# libfibril's async engine (see fibril.mk for the three parts):
# asynchronous system calls, async_submit/wait_for_async on io_uring with
# a thread-pool fallback, the engine (one wait point) and its libevent
# adapter.
fibril_libfibril_la_SOURCES += \
	fibril/async.c fibril/async_int.h \
	fibril/async_op.c fibril/async_own.c fibril/async_batch.c \
	fibril/async_calls.c fibril/async_cred.c fibril/async_cred.h \
	fibril/async_ahead.c fibril/async_mnt.c fibril/async_mnt.h \
	fibril/async_uring.c fibril/async_pool.c \
	fibril/async_wrap.c fibril/async_event.c
# async.c            the engine: submit, wait, cancel, process, destroy
# async_op.c         its ops and their completion, below the backends
# async_own.c        the engine's own calls: read-ahead, off-thread closes
# async_batch.c      a local run's statx calls, to the pool in batches
# async_calls.c      the call table and the one dispatcher to system calls
# async_cred.c       running a call as another user
# async_ahead.c      the policy on runs of stats: read-ahead, batches
# async_mnt.c        which mounts are local; closing off the caller's thread
# async_uring.c, async_pool.c   the two backends
# async_wrap.c       fibril_statx() and the other blocking-style wrappers
# async_event.c      the libevent host adapter
fibrilinclude_HEADERS += fibril/include/fibril/async.h \
	fibril/include/fibril/async_event.h

# ---- unit tests (the naming scheme is in Makefile.am) ----
# Each also on the thread-pool backend (NAME-threads.sh, Makefile.am).
ASYNC_UNIT = t/fibril/test_async t/fibril/test_async_fibrils \
	t/fibril/test_async_event t/fibril/test_async_bg \
	contrib/examples/poll-host contrib/examples/readdir-stat \
	t/fibril/test_async_batch
TESTS += $(ASYNC_UNIT) $(ASYNC_UNIT:=-threads.sh)
UNIT_TESTS += $(ASYNC_UNIT) $(ASYNC_UNIT:=-threads.sh)
ASYNC_UNIT_LDADD = fibril/libfibril.la $(UNIT_LDADD) $(URING_LIBS) -lpthread

check_PROGRAMS += t/fibril/test_async t/fibril/test_async_fibrils \
	t/fibril/test_async_event t/fibril/test_async_bg
t_fibril_test_async_bg_SOURCES = t/fibril/test_async_bg.c t/fibril/async_check.h \
	t/fibril/thread_policy.h
t_fibril_test_async_bg_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_async_bg_LDADD = $(ASYNC_UNIT_LDADD)
t_fibril_test_async_SOURCES = t/fibril/test_async.c t/fibril/async_check.h
t_fibril_test_async_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_async_LDADD = $(ASYNC_UNIT_LDADD)
t_fibril_test_async_fibrils_SOURCES = t/fibril/test_async_fibrils.c \
	t/fibril/async_check.h
t_fibril_test_async_fibrils_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_async_fibrils_LDADD = $(ASYNC_UNIT_LDADD)
t_fibril_test_async_event_SOURCES = t/fibril/test_async_event.c \
	t/fibril/async_check.h
t_fibril_test_async_event_CFLAGS = $(UNIT_CFLAGS) $(LIBEVENT_CFLAGS)
t_fibril_test_async_event_LDADD = $(ASYNC_UNIT_LDADD) $(LIBEVENT_LIBS)
check_PROGRAMS += t/fibril/test_async_batch
t_fibril_test_async_batch_SOURCES = t/fibril/test_async_batch.c \
	t/fibril/async_check.h
t_fibril_test_async_batch_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_async_batch_LDADD = $(ASYNC_UNIT_LDADD)

# ---- examples (each also a test: no argument = self-check) ----
check_PROGRAMS += contrib/examples/poll-host contrib/examples/readdir-stat
contrib_examples_poll_host_SOURCES = contrib/examples/poll-host.c
contrib_examples_poll_host_LDADD = fibril/libfibril.la
contrib_examples_readdir_stat_SOURCES = contrib/examples/readdir-stat.c
contrib_examples_readdir_stat_LDADD = fibril/libfibril.la

# ---- benchmark ----
noinst_PROGRAMS += contrib/bench/stat-bench
contrib_bench_stat_bench_SOURCES = contrib/bench/stat-bench.c
contrib_bench_stat_bench_LDADD = fibril/libfibril.la
