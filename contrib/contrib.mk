# contrib/contrib.mk: benchmark scripts that run fileserverd against its
# peers (nginx, lighttpd) side by side; see the head of each script.
#   make bench-http       contrib/bench/http-bench     (wrk, 3 file sizes)
#   make bench-listing    contrib/bench/listing-bench  (100k, 1M, slow FUSE)
#   make soak             contrib/bench/soak           (10 min mixed load; leaks)
# Both need a built fileserverd; listing-bench also t/slowfs/slowfs (built
# by plain `make` when fuse3 is found).
dist_noinst_SCRIPTS += contrib/bench/peers.sh contrib/bench/stats.sh contrib/bench/http-bench \
	contrib/bench/listing-bench contrib/bench/soak
# The cross-CPU copy rate http-bench prints beside each run.
noinst_PROGRAMS += contrib/bench/xcopy-probe
contrib_bench_xcopy_probe_SOURCES = contrib/bench/xcopy-probe.c
contrib_bench_xcopy_probe_LDADD = -lpthread
# Copy, MSG_ZEROCOPY and sendfile side by side (docs/BENCHMARKS.md).
noinst_PROGRAMS += contrib/bench/send-probe
contrib_bench_send_probe_SOURCES = contrib/bench/send-probe.c
BENCH_IT = t/bench/xcopy-probe.sh t/bench/send-probe.sh
dist_check_SCRIPTS += $(BENCH_IT)
TESTS += $(BENCH_IT)
# HAProxy in front of several fileserverd (t/daemon/fleet.sh runs it).
EXTRA_DIST += contrib/haproxy/haproxy.cfg docs/DEPLOYMENT.md

bench-http: fileserverd
	bash $(srcdir)/contrib/bench/http-bench "$(abs_top_builddir)"
bench-listing: fileserverd
	bash $(srcdir)/contrib/bench/listing-bench "$(abs_top_builddir)"
soak: fileserverd
	bash $(srcdir)/contrib/bench/soak "$(abs_top_builddir)"
.PHONY: bench-http bench-listing soak

# libfibril-tevent (contrib/tevent): the lookup engine in a tevent loop,
# and fsd-sftp (contrib/sftpd), an SFTP v3 server built on it. Built when
# configure finds tevent and talloc; the scripted tests skip (77) without.
EXTRA_DIST += contrib/tevent/fibril_tevent_int.h
dist_noinst_SCRIPTS += contrib/bench/sftp-bench
dist_man_MANS += man/fsd-sftp.8
SFTPD_IT = t/sftpd/proto.sh t/sftpd/leak.sh t/sftpd/sshfs.sh \
	t/sftpd/users.sh \
	t/sftpd/batch.sh t/sftpd/slow.sh t/sftpd/scans.sh t/sftpd/oom.sh
dist_check_SCRIPTS += $(SFTPD_IT)
EXTRA_DIST += t/sftpd/lib.sh t/sftpd/sftpc.py t/sftpd/oom_shim.c
TESTS += $(SFTPD_IT)
# The protocol, leak and allocation-failure tests are quick and find
# memory errors: they run again in the sanitizer build.
UNIT_TESTS += t/sftpd/proto.sh t/sftpd/leak.sh t/sftpd/users.sh \
	t/sftpd/oom.sh
if HAVE_TEVENT
lib_LTLIBRARIES += contrib/tevent/libfibril-tevent.la
contrib_tevent_libfibril_tevent_la_SOURCES = contrib/tevent/fibril_tevent.c \
	contrib/tevent/fibril_tevent_scan.c
contrib_tevent_libfibril_tevent_la_CFLAGS = $(AM_CFLAGS) $(TEVENT_CFLAGS)
contrib_tevent_libfibril_tevent_la_LIBADD = fibril/libfibril.la $(TEVENT_LIBS)
contrib_tevent_libfibril_tevent_la_LDFLAGS = -version-info 0:0:0
fibrilinclude_HEADERS += contrib/tevent/fibril_tevent.h

fsdlibexecdir = $(libexecdir)/fileserverd
fsdlibexec_PROGRAMS = contrib/sftpd/fsd-sftp
contrib_sftpd_fsd_sftp_SOURCES = contrib/sftpd/main.c contrib/sftpd/sftpd.h \
	contrib/sftpd/conn.c contrib/sftpd/ops.c contrib/sftpd/ops_dir.c contrib/sftpd/reply.c \
	contrib/sftpd/close.c contrib/sftpd/handle.c contrib/sftpd/timeline.c contrib/sftpd/log.c \
	contrib/sftpd/wire.c contrib/sftpd/wire.h
contrib_sftpd_fsd_sftp_CFLAGS = $(AM_CFLAGS) $(TEVENT_CFLAGS)
contrib_sftpd_fsd_sftp_LDADD = contrib/tevent/libfibril-tevent.la \
	fibril/libfibril.la $(TEVENT_LIBS)

SFTPD_UNIT = t/sftpd/test_ftev
check_PROGRAMS += $(SFTPD_UNIT)
TESTS += $(SFTPD_UNIT) $(SFTPD_UNIT:=-threads.sh)
UNIT_TESTS += $(SFTPD_UNIT) $(SFTPD_UNIT:=-threads.sh)
t_sftpd_test_ftev_SOURCES = t/sftpd/test_ftev.c
t_sftpd_test_ftev_CFLAGS = $(UNIT_CFLAGS) $(TEVENT_CFLAGS)
t_sftpd_test_ftev_LDADD = contrib/tevent/libfibril-tevent.la \
	fibril/libfibril.la $(UNIT_LDADD) $(TEVENT_LIBS)
endif
bench-sftp: all
	bash $(srcdir)/contrib/bench/sftp-bench "$(abs_top_builddir)"
.PHONY: bench-sftp