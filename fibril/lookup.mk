# fibril/lookup.mk: the lookup engine (lk_*), its tests, example and bench.
fibrilinclude_HEADERS += fibril/include/fibril/lookup.h
fibril_libfibril_la_SOURCES += \
	fibril/lookup_int.h \
	fibril/lookup_root.c \
	fibril/lookup_flight.c \
	fibril/lookup_batch.c \
	fibril/lookup_sort.c \
	fibril/lookup_scan.c \
	fibril/lookup_cred.c \
	fibril/lookup_fold.c \
	fibril/lookup_casefold.c \
	fibril/lookup_walk.c

# Unit tests (Check): also re-run under ASan+UBSan by `make check-unit`.
LOOKUP_TESTS = t/fibril/test_lookup_open t/fibril/test_lookup_scan \
	t/fibril/test_lookup_slowfs t/fibril/test_lookup_batch \
	t/fibril/test_lookup_cred t/fibril/test_lookup_walk
check_PROGRAMS += $(LOOKUP_TESTS)
# Each also on the thread-pool backend (the %-threads.sh rule of async.mk):
# completions arrive in another order there, which found a real stall.
TESTS += $(LOOKUP_TESTS) $(LOOKUP_TESTS:=-threads.sh)
UNIT_TESTS += $(LOOKUP_TESTS) $(LOOKUP_TESTS:=-threads.sh)
LOOKUP_TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
LOOKUP_TEST_LDADD = fibril/libfibril.la $(CHECK_LIBS)
t_fibril_test_lookup_open_SOURCES = t/fibril/test_lookup_open.c t/fibril/test_lookup.h
t_fibril_test_lookup_open_CFLAGS = $(LOOKUP_TEST_CFLAGS)
t_fibril_test_lookup_open_LDADD = $(LOOKUP_TEST_LDADD)
t_fibril_test_lookup_scan_SOURCES = t/fibril/test_lookup_scan.c t/fibril/test_lookup.h
t_fibril_test_lookup_scan_CFLAGS = $(LOOKUP_TEST_CFLAGS)
t_fibril_test_lookup_scan_LDADD = $(LOOKUP_TEST_LDADD)
t_fibril_test_lookup_batch_SOURCES = t/fibril/test_lookup_batch.c t/fibril/test_lookup.h
t_fibril_test_lookup_batch_CFLAGS = $(LOOKUP_TEST_CFLAGS)
t_fibril_test_lookup_batch_LDADD = $(LOOKUP_TEST_LDADD)
# Mounts t/slowfs (skips with 77 when FUSE is not usable).
t_fibril_test_lookup_slowfs_SOURCES = t/fibril/test_lookup_slowfs.c t/fibril/test_lookup.h \
	t/fibril/thread_policy.h
t_fibril_test_lookup_slowfs_CFLAGS = $(LOOKUP_TEST_CFLAGS)
t_fibril_test_lookup_slowfs_LDADD = $(LOOKUP_TEST_LDADD)
# Needs root: switches credentials (skips with 77 otherwise).
t_fibril_test_lookup_cred_SOURCES = t/fibril/test_lookup_cred.c t/fibril/test_lookup.h
t_fibril_test_lookup_cred_CFLAGS = $(LOOKUP_TEST_CFLAGS)
t_fibril_test_lookup_cred_LDADD = $(LOOKUP_TEST_LDADD)
t_fibril_test_lookup_walk_SOURCES = t/fibril/test_lookup_walk.c t/fibril/test_lookup.h
t_fibril_test_lookup_walk_CFLAGS = $(LOOKUP_TEST_CFLAGS)
t_fibril_test_lookup_walk_LDADD = $(LOOKUP_TEST_LDADD)

# fls, "ls -l" on the lookup engine; the comparison script is a test.
noinst_PROGRAMS += contrib/examples/fls
contrib_examples_fls_SOURCES = contrib/examples/fls.c
contrib_examples_fls_LDADD = fibril/libfibril.la
# A real binary, not a libtool wrapper script (whose start-up the bench
# would otherwise measure).
contrib_examples_fls_LDFLAGS = -no-install
TESTS += t/fibril/test_lookup_fls.sh
EXTRA_DIST += t/fibril/test_lookup_fls.sh
dist_noinst_SCRIPTS += contrib/bench/lookup-bench
dist_man_MANS += man/libfibril.3
