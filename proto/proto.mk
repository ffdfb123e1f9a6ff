# proto/proto.mk: HTTP semantics as pure functions (no I/O): URL
# decoding, MIME, dates, ETags and preconditions, ranges, request checks,
# listing rendering, error pages. A convenience library for the daemon.
noinst_LTLIBRARIES += proto/libproto.la
proto_libproto_la_SOURCES = \
	proto/buf.c proto/buf.h \
	proto/url.c proto/url.h proto/listing_opts.h \
	proto/mime.c proto/mime.h \
	proto/httpdate.c proto/httpdate.h \
	proto/accept.c proto/accept.h \
	proto/etag.c proto/etag.h \
	proto/cond.c proto/cond.h \
	proto/range.c proto/range.h \
	proto/reqcheck.c proto/reqcheck.h \
	proto/listing.c proto/listing.h \
	proto/errpage.c proto/errpage.h

# ---- unit tests (the naming scheme is in Makefile.am) ----
PROTO_UNIT = t/proto/test_url t/proto/test_mime t/proto/test_httpdate \
	t/proto/test_accept t/proto/test_cond t/proto/test_range \
	t/proto/test_reqcheck t/proto/test_listing t/proto/test_errpage
check_PROGRAMS += $(PROTO_UNIT)
TESTS += $(PROTO_UNIT)
UNIT_TESTS += $(PROTO_UNIT)
PROTO_UNIT_LDADD = proto/libproto.la $(UNIT_LDADD)
t_proto_test_url_SOURCES = t/proto/test_url.c
t_proto_test_url_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_url_LDADD = $(PROTO_UNIT_LDADD)
t_proto_test_mime_SOURCES = t/proto/test_mime.c
t_proto_test_mime_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_mime_LDADD = $(PROTO_UNIT_LDADD)
t_proto_test_httpdate_SOURCES = t/proto/test_httpdate.c
t_proto_test_httpdate_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_httpdate_LDADD = $(PROTO_UNIT_LDADD)
t_proto_test_accept_SOURCES = t/proto/test_accept.c
t_proto_test_accept_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_accept_LDADD = $(PROTO_UNIT_LDADD)
t_proto_test_cond_SOURCES = t/proto/test_cond.c
t_proto_test_cond_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_cond_LDADD = $(PROTO_UNIT_LDADD)
t_proto_test_range_SOURCES = t/proto/test_range.c
t_proto_test_range_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_range_LDADD = $(PROTO_UNIT_LDADD)
t_proto_test_reqcheck_SOURCES = t/proto/test_reqcheck.c
t_proto_test_reqcheck_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_reqcheck_LDADD = $(PROTO_UNIT_LDADD)
t_proto_test_listing_SOURCES = t/proto/test_listing.c
t_proto_test_listing_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_listing_LDADD = $(PROTO_UNIT_LDADD)
t_proto_test_errpage_SOURCES = t/proto/test_errpage.c
t_proto_test_errpage_CFLAGS = $(UNIT_CFLAGS)
t_proto_test_errpage_LDADD = $(PROTO_UNIT_LDADD)

# ---- libFuzzer targets (not in TESTS). `make fuzz-check` builds them
# with clang and runs each for FUZZ_SECONDS (default 20) on a copy of its
# seed corpus t/<dir>/corpus/<name>/ (t/proto/fuzz.sh; .ci/run does
# this). One by hand: make fuzz-proto; t/proto/fuzz_url -max_total_time=60 ----
FUZZ_CC = clang
FUZZ_CFLAGS = -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -I$(top_srcdir) -I$(top_builddir)
PROTO_FUZZ = url range reqcheck httpdate listing
PROTO_FUZZ_SRCS = $(filter %.c,$(proto_libproto_la_SOURCES))
FUZZ_TARGETS = $(PROTO_FUZZ:%=t/proto/fuzz_%)
EXTRA_DIST += $(PROTO_FUZZ:%=t/proto/fuzz_%.c) t/proto/fuzz.sh t/proto/corpus
$(PROTO_FUZZ:%=t/proto/fuzz_%): t/proto/fuzz_%: $(top_srcdir)/t/proto/fuzz_%.c \
		$(PROTO_FUZZ_SRCS:%=$(top_srcdir)/%) config.h
	@echo "  FUZZ     $@"; mkdir -p t/proto
	$(AM_V_at)$(FUZZ_CC) $(FUZZ_CFLAGS) $(PROTO_FUZZ_SRCS:%=$(top_srcdir)/%) $< -o $@
fuzz-proto: $(PROTO_FUZZ:%=t/proto/fuzz_%)
fuzz-check: fuzz-proto fuzz-conf
	$(AM_TESTS_ENVIRONMENT) $(SHELL) $(top_srcdir)/t/proto/fuzz.sh $(FUZZ_TARGETS)
CLEANFILES += $(PROTO_FUZZ:%=t/proto/fuzz_%)
clean-local: clean-fuzz
clean-fuzz:
	rm -rf t/proto/fuzz-artifacts t/conf/fuzz-artifacts
.PHONY: fuzz-proto fuzz-check clean-fuzz