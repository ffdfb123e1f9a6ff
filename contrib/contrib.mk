# contrib/contrib.mk: benchmark scripts that run fileserverd against its
# peers (nginx, lighttpd) side by side; see the head of each script.
#   make bench-http       contrib/bench/http-bench     (wrk, 3 file sizes)
#   make bench-listing    contrib/bench/listing-bench  (100k, 1M, slow FUSE)
# Both need a built fileserverd; listing-bench also t/slowfs/slowfs.
dist_noinst_SCRIPTS += contrib/bench/peers.sh contrib/bench/http-bench

bench-http: fileserverd
	$(SHELL) -c 'exec bash $(srcdir)/contrib/bench/http-bench "$(abs_top_builddir)"'
.PHONY: bench-http
