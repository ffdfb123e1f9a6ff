# A large directory's listing sends its status, headers and prologue
# before any of its names are read: under strace, the response's first
# two sends (the header, then the first chunk) come before the first
# getdents64 of the listed directory, plain and gzip-compressed, and the
# listing is whole; NDJSON, which has no prologue, sends its header
# first. A cached directory's first names are read inline, on the
# thread that sends, so the order is the code's, not the scheduler's.
. "$top_srcdir/t/daemon/lib.sh"

need strace
D=$T/root
traced_fsd -e trace=getdents64,sendto,sendmsg,writev

mkdir -p "$D/big"
# names long enough that the directory is over 256 KiB (a large one)
(cd "$D/big" && seq -f 'an-entry-with-a-long-name-%06g' 1 9000 | xargs touch)
size=$(stat -c %s "$D/big")
[ "$size" -ge 262144 ] || { echo "SKIP: directory of $size bytes, not large here"; exit 77; }

# order FORMAT [gzip]: "ok" when the header (and, with a prologue, the
# first chunk) went before the first getdents64 of the listing
order() {
	local n n0 q=
	[ "$1" = html ] || q="?format=$1"
	n0=$(wc -l < "$T/strace.log")
	n=$(curl -s ${2:+--compressed} "$URL/big/$q" | grep -o 'an-entry-with-a-long-name-[0-9]*' |
		sort -u | wc -l)
	[ "$n" = 9000 ] || { echo "listed $n of 9000"; return; }
	awk -v n0="$n0" -v chunk="$([ "$1" = ndjson ] && echo 0 || echo 1)" 'NR <= n0 { next }
	     /getdents64\(/ { if (!g) g = NR }
	     /send(to|msg)\(/ && /HTTP\/1\.1 200/ { if (!h) h = NR; next }
	     h && !b && /send(to|msg)\(/ { b = NR }
	     END {
		if (!chunk) b = h
		if (!h || !b || !g) print "incomplete trace: header " h ", chunk " b ", getdents " g
		else if (h < g && b < g) print "ok"
		else print "header at " h ", first chunk at " b ", first getdents64 at " g }' \
		"$T/strace.log"
}

checks() {
	printf '[server]\nroot = %s\nlisting_cache_bytes = 0\n' "$D" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	check "HTML: prologue before the names" ok "$(order html)"
	check "HTML, gzip: prologue before the names" ok "$(order html gzip)"
	check "NDJSON: header before the names" ok "$(order ndjson)"
	stop_traced_daemon
}

run_backends checks
