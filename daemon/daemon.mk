# daemon/daemon.mk: fileserverd itself, built at the top of the build dir.
sbin_PROGRAMS += fileserverd
fileserverd_SOURCES = \
	daemon/daemon.h \
	daemon/main.c \
	daemon/worker.c \
	daemon/conn.c \
	daemon/request.c \
	daemon/respond.c \
	daemon/reqhdr.c daemon/reqhdr.h \
	daemon/static.c \
	daemon/paths.c daemon/paths.h \
	daemon/body.c daemon/body.h \
	daemon/resident.c daemon/resident.h \
	daemon/listing.c daemon/listing.h \
	daemon/log.c daemon/log.h \
	daemon/log_open.c daemon/log_int.h
fileserverd_SOURCES += \
	daemon/server.c \
	daemon/worker_susp.c \
	daemon/sent.c daemon/sent.h \
	daemon/mime.c daemon/mime.h
fileserverd_SOURCES += daemon/servers.c daemon/priv.c daemon/priv.h
fileserverd_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(LIBEVENT_CFLAGS) $(INIH_CFLAGS) $(ZLIB_CFLAGS) $(XXHASH_CFLAGS) $(URING_CFLAGS)
fileserverd_LDADD = proto/libproto.la fibril/libfibril.la conf/libconf.la \
	$(MHD_LIBS) $(LIBEVENT_LIBS) $(INIH_LIBS) $(ZLIB_LIBS) $(XXHASH_LIBS) $(URING_LIBS) -lpthread
# The in-tree libraries (libfibril included) are linked in statically:
# through the shared object every fibril_park()/fibril_wake() pays a PLT
# jump and a GOT load for the scheduler's TLS slot (fibril-bench: 8.8 ns a
# hand-off static, 10.1 shared). The installed libfibril.so is for
# embedders.
fileserverd_LDFLAGS = -static $(PIE_LDFLAGS)

dist_man_MANS += man/fileserverd.8

EXTRA_DIST += contrib/systemd/fileserverd.service contrib/logrotate/fileserverd

# Integration tests: the real daemon on a loopback port (t/daemon/lib.sh).
DAEMON_IT = t/daemon/basic.sh t/daemon/hostile.sh t/daemon/cli.sh t/daemon/ranges.sh t/daemon/bigfile.sh t/daemon/names.sh t/daemon/mirror.sh t/daemon/slow.sh t/daemon/errors.sh t/daemon/logs-escape.sh t/daemon/logs-open.sh t/daemon/logs-rotate.sh t/daemon/hardening.sh
DAEMON_IT += t/daemon/serve-policy.sh t/daemon/serve-body.sh
DAEMON_IT += t/daemon/negotiate.sh
DAEMON_IT += t/daemon/reload.sh t/daemon/reload-load.sh t/daemon/reload-priv.sh t/daemon/drain.sh
DAEMON_IT += t/daemon/symlinks.sh
DAEMON_IT += t/daemon/etag.sh
DAEMON_IT += t/daemon/fleet.sh
DAEMON_IT += t/daemon/sndbuf.sh
TESTS += $(DAEMON_IT)
dist_check_SCRIPTS += $(DAEMON_IT)
EXTRA_DIST += t/daemon/lib.sh
EXTRA_DIST += t/daemon/reload_lib.sh
# The root helper, linked in alone; the listing cache's orders, alone.
DAEMON_UNIT = t/daemon/test_priv t/daemon/test_lcache_order
check_PROGRAMS += $(DAEMON_UNIT)
TESTS += $(DAEMON_UNIT)
UNIT_TESTS += $(DAEMON_UNIT)
t_daemon_test_priv_SOURCES = t/daemon/test_priv.c daemon/priv.c daemon/log_open.c
t_daemon_test_priv_CFLAGS = $(UNIT_CFLAGS) $(INIH_CFLAGS)
t_daemon_test_priv_LDADD = conf/libconf.la $(INIH_LIBS) $(UNIT_LDADD)
t_daemon_test_lcache_order_SOURCES = t/daemon/test_lcache_order.c daemon/lcache_order.c
t_daemon_test_lcache_order_CFLAGS = $(UNIT_CFLAGS)
t_daemon_test_lcache_order_LDADD = $(UNIT_LDADD)

# --- listing (LISTING) ---
fileserverd_SOURCES += \
	daemon/listing_int.h \
	daemon/listing_params.c \
	daemon/listing_run.c \
	daemon/listing_queue.c \
	daemon/lcache.c \
	daemon/lcache_watch.c \
	daemon/lcache_patch.c \
	daemon/lcache_order.c \
	daemon/lcache_int.h \
	daemon/lcache.h \
	daemon/listing_stream.c \
	daemon/listing_gzip.c \
	daemon/listing_etag.c
LISTING_IT = t/daemon/listing.sh t/daemon/listing-slow.sh t/daemon/listing-names.sh \
	t/browser/listing-browser.sh t/daemon/listing-queue.sh t/daemon/lcache.sh t/daemon/lcache-big.sh \
	t/daemon/lcache-large.sh t/daemon/lcache-nounshare.sh t/daemon/lcache-mount.sh \
	t/daemon/listing-fill.sh t/daemon/lcache-bodies.sh t/daemon/listing-first-byte.sh \
	t/daemon/lcache-patch.sh t/daemon/lcache-gone.sh
TESTS += $(LISTING_IT)
dist_check_SCRIPTS += $(LISTING_IT)
EXTRA_DIST += t/daemon/listing_check.py t/daemon/lcache_check.py
EXTRA_DIST += t/browser/listing-browser.mjs t/browser/package.json t/browser/package-lock.json

# --- fcache (PERF) ---
fileserverd_SOURCES += daemon/fcache.c daemon/fcache.h daemon/fcache_body.c daemon/fcache_body.h \
	daemon/fcache_watch.c daemon/fcache_int.h
FCACHE_IT = t/daemon/fcache.sh t/daemon/fcache-links.sh t/daemon/fcache-ns.sh \
	t/daemon/fcache-watches.sh t/daemon/fcache-enospc.sh t/daemon/fcache-large.sh \
	t/daemon/fcache-ranges.sh
TESTS += $(FCACHE_IT)
dist_check_SCRIPTS += $(FCACHE_IT)
EXTRA_DIST += t/daemon/fcache-hits.py t/daemon/fcache_lib.sh

# --- limits (LIMITS) ---
LIMITS_IT = t/daemon/limits.sh t/daemon/limits-fds.sh t/daemon/limits-slowfs.sh t/daemon/limits-listing.sh
TESTS += $(LIMITS_IT)
dist_check_SCRIPTS += $(LIMITS_IT)
EXTRA_DIST += t/daemon/limits_client.py

# --- HTTPS (TLS) ---
fileserverd_SOURCES += daemon/tls.c daemon/tls.h
fileserverd_CFLAGS += $(GNUTLS_CFLAGS)
fileserverd_LDADD += $(GNUTLS_LIBS)
TLS_IT = t/daemon/https.sh t/daemon/https-reload.sh t/daemon/priv-errors.sh
TESTS += $(TLS_IT)
dist_check_SCRIPTS += $(TLS_IT)

# --- metrics and status endpoints (METRICS) ---
fileserverd_SOURCES += daemon/metrics.c daemon/metrics.h daemon/status.c daemon/status.h
METRICS_IT = t/daemon/metrics.sh t/daemon/metrics-healthz.sh
TESTS += $(METRICS_IT)
dist_check_SCRIPTS += $(METRICS_IT)
EXTRA_DIST += t/daemon/metrics_check.py

# --- systemd (SYSD) ---
fileserverd_SOURCES += daemon/notify.c daemon/notify.h
fileserverd_CFLAGS += $(SYSTEMD_CFLAGS)
fileserverd_LDADD += $(SYSTEMD_LIBS)
SYSD_IT = t/daemon/systemd.sh
TESTS += $(SYSD_IT)
dist_check_SCRIPTS += $(SYSD_IT)
EXTRA_DIST += t/daemon/notify_listen.py t/daemon/seccomp_exec.py t/lib.sh
