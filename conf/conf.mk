# conf/conf.mk: the configuration parser/validator and the sample file.
noinst_LTLIBRARIES += conf/libconf.la
conf_libconf_la_SOURCES = conf/conf.c conf/conf.h conf/conf_int.h \
	conf/conf_read.c conf/conf_value.c conf/conf_listen.c conf/conf_links.c
conf_libconf_la_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
conf_libconf_la_LIBADD = $(INIH_LIBS)

sysconf_DATA = conf/fileserverd.conf
EXTRA_DIST += conf/fileserverd.conf
dist_man_MANS += man/fileserverd.conf.5

# ---- unit tests (the naming scheme is in Makefile.am) ----
CONF_UNIT = t/conf/test_conf
check_PROGRAMS += $(CONF_UNIT)
TESTS += $(CONF_UNIT)
UNIT_TESTS += $(CONF_UNIT)
t_conf_test_conf_SOURCES = t/conf/test_conf.c
t_conf_test_conf_CFLAGS = $(UNIT_CFLAGS) -DSRCDIR='"$(abs_top_srcdir)"'
t_conf_test_conf_LDADD = conf/libconf.la $(UNIT_LDADD)

# libFuzzer target for the parser (run by `make fuzz-check`, proto.mk).
FUZZ_TARGETS += t/conf/fuzz_conf
EXTRA_DIST += t/conf/fuzz_conf.c t/conf/corpus
CONF_FUZZ_SRC = $(top_srcdir)/conf/conf.c $(top_srcdir)/conf/conf_read.c \
	$(top_srcdir)/conf/conf_value.c \
	$(top_srcdir)/conf/conf_listen.c $(top_srcdir)/conf/conf_links.c
t/conf/fuzz_conf: $(top_srcdir)/t/conf/fuzz_conf.c $(CONF_FUZZ_SRC) config.h
	@echo "  FUZZ     $@"; mkdir -p t/conf
	$(AM_V_at)$(FUZZ_CC) $(FUZZ_CFLAGS) $(INIH_CFLAGS) $(CONF_FUZZ_SRC) $< \
		$(INIH_LIBS) -o $@
fuzz-conf: t/conf/fuzz_conf
CLEANFILES += t/conf/fuzz_conf
.PHONY: fuzz-conf
