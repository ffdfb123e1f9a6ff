# fibril/lookup.mk: the lookup engine (lk_*), its tests, example and bench.
# libfibril's third part (see fibril.mk), built on the core and the async
# engine: lookup_root.c roots, groups, opens and the engine's call path;
# lookup_walk.c lookups with options; lookup_scan.c, lookup_flight.c,
# lookup_share.c, lookup_batch.c, lookup_sort.c, lookup_place.c
# directory scans (in that order, each using only those after it); lookup_fs.c which file
# systems are local; lookup_cred.c, lookup_fold.c, lookup_casefold.c
# credentials and case-insensitive names.
fibrilinclude_HEADERS += fibril/include/fibril/lookup.h
fibril_libfibril_la_SOURCES += \
	fibril/lookup_int.h \
	fibril/lookup_root.c \
	fibril/lookup_flight.c \
	fibril/lookup_share.c \
	fibril/lookup_batch.c \
	fibril/lookup_sort.c \
	fibril/lookup_place.c \
	fibril/lookup_scan.c \
	fibril/lookup_cred.c \
	fibril/lookup_fs.c \
	fibril/lookup_fold.c \
	fibril/lookup_casefold.c \
	fibril/lookup_walk.c

# ---- unit tests (the naming scheme is in Makefile.am) ----
# Each also on the thread-pool backend (NAME-threads.sh, Makefile.am):
# completions arrive in another order there, which found a real stall.
LOOKUP_UNIT = t/fibril/test_lookup_open t/fibril/test_lookup_scan \
	t/fibril/test_lookup_slowfs t/fibril/test_lookup_batch \
	t/fibril/test_lookup_cred t/fibril/test_lookup_walk \
	t/fibril/test_lookup_fs
check_PROGRAMS += $(LOOKUP_UNIT)
TESTS += $(LOOKUP_UNIT) $(LOOKUP_UNIT:=-threads.sh)
UNIT_TESTS += $(LOOKUP_UNIT) $(LOOKUP_UNIT:=-threads.sh)
LOOKUP_UNIT_LDADD = fibril/libfibril.la $(UNIT_LDADD)
t_fibril_test_lookup_open_SOURCES = t/fibril/test_lookup_open.c t/fibril/lookup_check.h
t_fibril_test_lookup_open_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_lookup_open_LDADD = $(LOOKUP_UNIT_LDADD)
t_fibril_test_lookup_scan_SOURCES = t/fibril/test_lookup_scan.c t/fibril/lookup_check.h
t_fibril_test_lookup_scan_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_lookup_scan_LDADD = $(LOOKUP_UNIT_LDADD)
t_fibril_test_lookup_batch_SOURCES = t/fibril/test_lookup_batch.c t/fibril/lookup_check.h
t_fibril_test_lookup_batch_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_lookup_batch_LDADD = $(LOOKUP_UNIT_LDADD)
# Mounts t/slowfs (skips with 77 when FUSE is not usable).
t_fibril_test_lookup_slowfs_SOURCES = t/fibril/test_lookup_slowfs.c t/fibril/lookup_check.h \
	t/fibril/thread_policy.h
t_fibril_test_lookup_slowfs_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_lookup_slowfs_LDADD = $(LOOKUP_UNIT_LDADD)
# Needs root: switches credentials (skips with 77 otherwise).
t_fibril_test_lookup_cred_SOURCES = t/fibril/test_lookup_cred.c t/fibril/lookup_check.h
t_fibril_test_lookup_cred_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_lookup_cred_LDADD = $(LOOKUP_UNIT_LDADD)
t_fibril_test_lookup_walk_SOURCES = t/fibril/test_lookup_walk.c t/fibril/lookup_check.h
t_fibril_test_lookup_walk_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_lookup_walk_LDADD = $(LOOKUP_UNIT_LDADD)
# Mounts a tmpfs of its own (skips with 77 without CAP_SYS_ADMIN).
t_fibril_test_lookup_fs_SOURCES = t/fibril/test_lookup_fs.c
t_fibril_test_lookup_fs_CFLAGS = $(UNIT_CFLAGS)
t_fibril_test_lookup_fs_LDADD = $(LOOKUP_UNIT_LDADD)

# fls, "ls -l" on the lookup engine; the comparison script is a test.
noinst_PROGRAMS += contrib/examples/fls
contrib_examples_fls_SOURCES = contrib/examples/fls.c
contrib_examples_fls_LDADD = fibril/libfibril.la
# A real binary, not a libtool wrapper script (whose start-up the bench
# would otherwise measure).
contrib_examples_fls_LDFLAGS = -no-install
LOOKUP_IT = t/fibril/fls.sh
TESTS += $(LOOKUP_IT)
dist_check_SCRIPTS += $(LOOKUP_IT)
dist_noinst_SCRIPTS += contrib/bench/lookup-bench
dist_man_MANS += man/libfibril.3
