# proto/proto.mk: HTTP semantics as pure functions (no I/O).
# Headers first (the contract with daemon/); sources follow.
EXTRA_DIST += proto/buf.h proto/url.h proto/mime.h proto/httpdate.h \
	proto/etag.h proto/cond.h proto/range.h proto/reqcheck.h \
	proto/listing.h proto/errpage.h
