# proto/proto.mk: HTTP semantics as pure functions (no I/O): URL
# decoding, MIME, dates, ETags and preconditions, ranges, request checks,
# listing rendering, error pages. A convenience library for the daemon.
noinst_LTLIBRARIES += proto/libproto.la
proto_libproto_la_SOURCES = \
	proto/buf.c proto/buf.h \
	proto/url.c proto/url.h \
	proto/mime.c proto/mime.h \
	proto/httpdate.c proto/httpdate.h \
	proto/etag.c proto/etag.h \
	proto/cond.c proto/cond.h \
	proto/range.c proto/range.h \
	proto/reqcheck.c proto/reqcheck.h \
	proto/listing.c proto/listing.h \
	proto/errpage.c proto/errpage.h
