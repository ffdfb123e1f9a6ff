# File bodies that do not go as planned: a file truncated while it is
# sent (logged, connection closed at once, not at the idle timeout), a
# download cut by the client (the access log counts the bytes sent, not
# the file's size), and multipart part headers with a content type
# longer than any fixed buffer.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/dir"
BIG=$((100 * 1024 * 1024))
# 180 characters (a configuration line holds 198): its part headers pass
# 256 bytes
LONGTYPE="application/x-$(printf 'q%.0s' $(seq 1 166))"
head -c 5000 /dev/urandom > "$D/blob.unknownext"

cat > "$T/c.conf" <<EOF
[server]
root = $D
access_log = $T/access.log
default_type = $LONGTYPE
# the old behaviour ended a stalled download only at this timeout
connection_timeout = 40
EOF

checks() {
	: > "$T/access.log"
	start_daemon -c "$T/c.conf"

	# 1. truncated while being sent: curl reads 4 MB/s, the file loses
	# all but 1 KiB after a second
	head -c $((50 * 1024 * 1024)) /dev/zero > "$D/dir/shrinks.bin"
	local t0 t1 rc out
	t0=$(date +%s)
	curl -s -o /dev/null --limit-rate 4M --max-time 35 -w '%{size_download}' \
		"$URL/dir/shrinks.bin" > "$T/curl.out" &
	local c=$!
	sleep 1
	truncate -s 1024 "$D/dir/shrinks.bin"
	wait "$c"
	rc=$?
	t1=$(date +%s)
	check "truncated: curl sees the body cut short (exit 18)" 18 "$rc"
	if [ $((t1 - t0)) -lt 25 ]; then ok "truncated: connection closed in $((t1 - t0)) s"
	else not_ok "truncated: connection closed after $((t1 - t0)) s (idle timeout?)"; fi
	check_match "truncated: logged with the path" \
		'\[error\] read dir/shrinks\.bin: file shrank to 1024 bytes' "$(cat "$T/daemon.err")"
	out=$(log_line '"GET /dir/shrinks.bin ')
	local n
	n=$(printf '%s' "$out" | awk '{print $10}')
	if [ -n "$n" ] && [ "$n" != - ] && [ "$n" -lt $((50 * 1024 * 1024)) ]; then
		ok "truncated: access log counts $n bytes sent"
	else not_ok "truncated: access log line '$out'"; fi

	# 2. a download cut by the client after a few MB
	head -c "$BIG" /dev/zero > "$D/dir/big.bin"
	curl -s -o /dev/null --limit-rate 4M --max-time 2 "$URL/dir/big.bin"
	out=$(log_line '"GET /dir/big.bin ')
	n=$(printf '%s' "$out" | awk '{print $10}')
	if [ -n "$n" ] && [ "$n" != - ] && [ "$n" -gt 0 ] && [ "$n" -lt "$BIG" ]; then
		ok "cut by the client: access log counts $n of $BIG bytes"
	else not_ok "cut by the client: access log line '$out'"; fi
	: > "$T/access.log"
	check "whole download" "$BIG" "$(curl -s -o /dev/null -w '%{size_download}' "$URL/dir/big.bin")"
	check_match "whole download: its size logged" "\" 200 $BIG \"" "$(log_line '"GET /dir/big.bin ')"
	rm -f "$D/dir/big.bin" "$D/dir/shrinks.bin"

	# 3. multipart with a content type longer than a part header buffer
	curl -s -D "$T/mp.h" -o "$T/mp.body" -H 'Range: bytes=0-0,2-2,4000-4099' \
		"$URL/blob.unknownext"
	check_match "multipart: 206" "^HTTP/1.1 206" "$(head -n1 "$T/mp.h")"
	check "multipart: parts exact" ok "$(python3 - "$T/mp.h" "$T/mp.body" "$D/blob.unknownext" "$LONGTYPE" <<'PY'
import re, sys
head = open(sys.argv[1], "rb").read().decode("latin-1")
body = open(sys.argv[2], "rb").read()
data = open(sys.argv[3], "rb").read()
ctype = sys.argv[4].encode()
m = re.search(r"(?im)^content-type: multipart/byteranges; boundary=(\S+)", head)
cl = re.search(r"(?im)^content-length: (\d+)", head)
if not m or not cl or int(cl.group(1)) != len(body):
    print("bad headers or length", len(body)); sys.exit()
b = m.group(1).encode()
want = b""
for first, last in ((0, 0), (2, 2), (4000, 4099)):
    want += (b"\r\n--" + b + b"\r\nContent-Type: " + ctype + b"\r\nContent-Range: bytes %d-%d/%d\r\n\r\n"
             % (first, last, len(data)) + data[first:last + 1])
want += b"\r\n--" + b + b"--\r\n"
print("ok" if body == want else "body differs (%d vs %d bytes)" % (len(body), len(want)))
PY
)"

	# 4. bodies that are not a file's count too: an error page, a
	# redirect's, and a streamed listing (of a directory of 256 KiB or
	# more: 12,000 names), whose length no header gives
	local n
	n=$(curl -s -o /dev/null -w '%{size_download}' "$URL/missing")
	check_match "a 404 page: its size logged" "\" 404 $n \"" "$(log_line '"GET /missing ')"
	n=$(curl -s -o /dev/null -w '%{size_download}' "$URL/dir")
	check_match "a 301 page: its size logged" "\" 301 $n \"" "$(log_line '"GET /dir ')"
	n=$(curl -s -o /dev/null -w '%{size_download}' "$URL/many/")
	check_match "a streamed listing: its size logged" "\" 200 $n \"" "$(log_line '"GET /many/ ')"
	check "a HEAD's 404 logs no bytes" yes \
		"$(curl -s -o /dev/null -I "$URL/missing2"; log_line '"HEAD /missing2 ' | grep -q '" 404 - "' && echo yes)"
}

mkdir -p "$D/many"
(cd "$D/many" && python3 -c 'for i in range(12000): open("n%06d" % i, "w").close()')
run_backends checks
