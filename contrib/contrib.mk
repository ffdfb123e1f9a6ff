# contrib/contrib.mk: benchmark scripts that run fileserverd against its
# peers (nginx, lighttpd) side by side; see the head of each script.
#   make bench-http       contrib/bench/http-bench     (wrk, 3 file sizes)
#   make bench-listing    contrib/bench/listing-bench  (100k, 1M, slow FUSE)
#   make soak             contrib/bench/soak           (10 min mixed load; leaks)
# Both need a built fileserverd; listing-bench also t/slowfs/slowfs (built
# by plain `make` when fuse3 is found).
dist_noinst_SCRIPTS += contrib/bench/peers.sh contrib/bench/http-bench \
	contrib/bench/listing-bench contrib/bench/soak

bench-http: fileserverd
	bash $(srcdir)/contrib/bench/http-bench "$(abs_top_builddir)"
bench-listing: fileserverd
	bash $(srcdir)/contrib/bench/listing-bench "$(abs_top_builddir)"
soak: fileserverd
	bash $(srcdir)/contrib/bench/soak "$(abs_top_builddir)"
.PHONY: bench-http bench-listing soak
