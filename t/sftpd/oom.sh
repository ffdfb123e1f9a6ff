#!/bin/sh
# A reply buffer that cannot grow (every allocation above 4 MiB fails)
# closes that connection, with "out of memory" in the log, and nothing
# else: no crash, no use of the freed connection (the sanitizer build
# runs this test in make check-unit), and the server serves the next
# connection. The failure comes from ASan's allocation limit in the
# sanitizer build, else from t/sftpd/oom_shim.c, built here and
# preloaded; skips (77) when neither can be set up.
. "$top_srcdir/t/sftpd/lib.sh"

R=$T/root
mkdir -p "$R"
echo hello > "$R/a.txt"
head -c 300000 /dev/urandom > "$R/big.bin"

real=$top_builddir/contrib/sftpd/.libs/fsd-sftp
[ -x "$real" ] || real=$SFTPD
limit=$((4 * 1024 * 1024))
if ldd "$real" 2>/dev/null | grep -q libasan; then
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=4
	export ASAN_OPTIONS
	preload=
else
	"${CC:-cc}" -std=c11 -O2 -shared -fPIC -o "$T/oom_shim.so" \
		"$top_srcdir/t/sftpd/oom_shim.c" 2>"$T/cc.log" ||
		{ echo "SKIP: cannot build the allocation-failure shim"; cat "$T/cc.log"; exit 77; }
	preload=$T/oom_shim.so
	LD_PRELOAD=$preload FSD_TEST_MAX_ALLOC=$limit true ||
		{ echo "SKIP: the allocation-failure shim cannot be preloaded"; exit 77; }
fi

for backend in uring threads; do
	echo "# backend $backend"
	LD_PRELOAD=$preload FSD_TEST_MAX_ALLOC=$limit FIBRIL_BACKEND=$backend \
		start_sftpd "$R"
	timeout 20 python3 "$SFTPC" oomburst "$SPORT" /big.bin 64 || fails=$((fails + 1))
	if grep -q 'connection closed: out of memory' "$T/sftpd.log"; then
		ok "the connection's end is logged as out of memory"
	else
		not_ok "the connection's end is logged as out of memory"
	fi
	if timeout 20 python3 "$SFTPC" probe "$SPORT" /a.txt >"$T/probe.out"; then
		check_match "the next connection is served" '^/a\.txt attrs data ' \
			"$(cat "$T/probe.out")"
	else
		not_ok "the next connection is served"
	fi
	stop_sftpd
done
finish
