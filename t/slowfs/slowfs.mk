# t/slowfs/slowfs.mk: the slow-metadata FUSE test filesystem (slowfs),
# its mount helpers and its own test. Built by plain `make` (the
# benchmarks in contrib/bench/ mount it too), only when fuse3 is found.
SLOWFS_HELPER_FILES = t/slowfs/mount.sh t/slowfs/umount.sh t/slowfs/slowfs-mount
dist_noinst_SCRIPTS += $(SLOWFS_HELPER_FILES)
EXTRA_DIST += t/slowfs/lib.sh
if HAVE_FUSE3
noinst_PROGRAMS += t/slowfs/slowfs
t_slowfs_slowfs_SOURCES = t/slowfs/slowfs.c t/slowfs/delay.c t/slowfs/delay.h \
	t/slowfs/dirops.c t/slowfs/dirops.h
t_slowfs_slowfs_CFLAGS = $(AM_CFLAGS) $(FUSE3_CFLAGS)
t_slowfs_slowfs_LDADD = $(FUSE3_LIBS) -lpthread
endif
# Runs (and skips with 77) whether or not fuse3 was found.
SLOWFS_IT = t/slowfs/test-slowfs.sh
TESTS += $(SLOWFS_IT)
dist_check_SCRIPTS += $(SLOWFS_IT)
