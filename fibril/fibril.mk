# fibril/fibril.mk: owned by its folder's work; appends to the variables of Makefile.am
lib_LTLIBRARIES += fibril/libfibril.la
fibril_libfibril_la_SOURCES =
fibril_libfibril_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(URING_CFLAGS) $(LIBEVENT_CFLAGS)
fibril_libfibril_la_LIBADD = $(URING_LIBS) $(LIBEVENT_LIBS) -lpthread
fibril_libfibril_la_LDFLAGS = -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/fibril/libfibril.map
EXTRA_DIST += fibril/libfibril.map fibril/libfibril.pc.in
fibrilincludedir = $(includedir)/fibril
fibrilinclude_HEADERS = fibril/include/fibril/fibril.h
