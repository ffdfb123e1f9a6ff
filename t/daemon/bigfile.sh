# A sparse file larger than 2 GiB (and 4 GiB): sizes, ranges near the
# end, and a sendfile stream across the 2 GiB mark.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D"
SIZE=$((5 * 1024 * 1024 * 1024 + 12345))      # 5 GiB + a bit
truncate -s "$SIZE" "$D/sparse.img" 2>/dev/null || { echo "SKIP: no sparse files"; exit 77; }
# recognisable bytes at a few places, the rest is a hole (zeros)
put() { printf '%s' "$2" | dd of="$D/sparse.img" bs=1 seek="$1" conv=notrunc status=none; }
put $((SIZE - 10)) "0123456789"
put $((2 * 1024 * 1024 * 1024 - 3)) "ABCDEF"        # straddles 2 GiB
put $((4 * 1024 * 1024 * 1024 - 2)) "wxyz"          # straddles 4 GiB

checks() {
	start_daemon --root "$D"
	local h
	h=$(curl -s -I "$URL/sparse.img" | tr -d '\r')
	check_match "HEAD Content-Length > 4 GiB" "Content-Length: $SIZE" "$h"
	check "last 10 bytes" 0123456789 "$(curl -s -H 'Range: bytes=-10' "$URL/sparse.img")"
	check "Content-Range at the end" "bytes $((SIZE - 10))-$((SIZE - 1))/$SIZE" \
		"$(curl -s -o /dev/null -D - -H 'Range: bytes=-10' "$URL/sparse.img" | tr -d '\r' | grep -i '^Content-Range:' | cut -d' ' -f2-)"
	check "open range near the end" 789 "$(curl -s -H "Range: bytes=$((SIZE - 3))-" "$URL/sparse.img")"
	check "range across 2 GiB" ABCDEF \
		"$(curl -s -H "Range: bytes=$((2 * 1024 * 1024 * 1024 - 3))-$((2 * 1024 * 1024 * 1024 + 2))" "$URL/sparse.img")"
	check "range across 4 GiB" wxyz \
		"$(curl -s -H "Range: bytes=$((4 * 1024 * 1024 * 1024 - 2))-$((4 * 1024 * 1024 * 1024 + 1))" "$URL/sparse.img")"
	check "multi-range near both ends" 2 \
		"$(curl -s -H "Range: bytes=0-1,$((SIZE - 2))-" "$URL/sparse.img" | grep -ac '^Content-Range: bytes')"
	check "416 past the end" 416 "$(code /sparse.img -H "Range: bytes=$SIZE-")"
	# 64 MiB streamed (sendfile) from just below 2 GiB, compared with dd
	local off=$((2 * 1024 * 1024 * 1024 - 32 * 1024 * 1024)) len=$((64 * 1024 * 1024))
	local rc=0
	curl -s -o "$T/chunk" -H "Range: bytes=$off-$((off + len - 1))" "$URL/sparse.img" || rc=$?
	dd if="$D/sparse.img" of="$T/want" bs=1M skip=$((off / 1048576)) count=64 status=none
	if cmp -s "$T/chunk" "$T/want"; then ok "64 MiB across 2 GiB byte-exact"; else
		not_ok "64 MiB across 2 GiB differs: $(stat -c %s "$T/chunk" 2>/dev/null) bytes, curl exit $rc, first difference: $(cmp "$T/chunk" "$T/want" 2>&1 | head -1)"
		tail -5 "$T/daemon.err"
	fi
	rm -f "$T/chunk" "$T/want"
}

run_backends checks
