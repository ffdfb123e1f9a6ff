# A cached file changed through another name: a hard link made after
# the file was cached, in a directory the daemon does not watch (outside
# the served tree), and a file that already had two names. Writes, a
# truncation and chmod 000 through the other name are seen on the very
# next request, which answers exactly what an uncached request (a Range
# covering the whole file) answers.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
O=$T/elsewhere
HITS="python3 $top_srcdir/t/daemon/fcache-hits.py"
. "$top_srcdir/t/daemon/fcache_lib.sh"

# inplace FILE: other bytes, same size and mtime
inplace() {
	python3 - "$1" <<'PY'
import os, sys
st = os.stat(sys.argv[1])
with open(sys.argv[1], "r+b") as f:
    f.write(b"CHANGED%06d" % (st.st_ctime_ns % 1000000))
os.utime(sys.argv[1], ns=(st.st_atime_ns, st.st_mtime_ns))
PY
}

# fresh URLPATH FILE LABEL: two GETs and a whole-file Range request all
# give the bytes of FILE
fresh() {
	same "$1" "$3" "$2"
	curl -s -o "$T/got" -H "Range: bytes=0-" "$URL/$1"
	if cmp -s "$T/got" "$2"; then ok "$3 (range)"
	else not_ok "$3 (range): body differs from $2"; fi
}

checks() {
	rm -rf "$D" "$O"
	mkdir -p "$D/pub" "$O"
	chmod 755 "$D" "$D/pub" "$O"
	put "$D/pub/f.txt"
	put "$D/pub/h.txt"
	ln "$D/pub/h.txt" "$O/h"
	start_daemon --root "$D" -c "$conf"

	fresh pub/f.txt "$D/pub/f.txt" "cached, one name"
	check "served from the cache" "1 hits, 0 wrong" "$($HITS "$PORT" "$D" pub/f.txt)"
	ln "$D/pub/f.txt" "$O/g"
	inplace "$O/g"
	fresh pub/f.txt "$D/pub/f.txt" "written through a link made after caching"
	check_match "the new bytes" "^CHANGED" "$(head -c 7 "$T/got")"
	chmod 000 "$O/g"
	check "chmod 000 through the link: 403" 403 "$(code /pub/f.txt)"
	check "and still 403" 403 "$(code /pub/f.txt)"
	chmod 644 "$O/g"
	fresh pub/f.txt "$D/pub/f.txt" "chmod 644 through the link"
	truncate -s 100 "$O/g"
	fresh pub/f.txt "$D/pub/f.txt" "truncated through the link"
	rm "$O/g"
	inplace "$D/pub/f.txt"
	fresh pub/f.txt "$D/pub/f.txt" "the link removed, written through its name"

	fresh pub/h.txt "$D/pub/h.txt" "two names from the start"
	check "two names: served from the cache" "1 hits, 0 wrong" "$($HITS "$PORT" "$D" pub/h.txt)"
	inplace "$O/h"
	fresh pub/h.txt "$D/pub/h.txt" "two names: written through the other"
	chmod 000 "$O/h"
	check "two names: chmod 000 through the other: 403" 403 "$(code /pub/h.txt)"
	chmod 644 "$O/h"

	# Keep-alive rounds: fetch (cached), write through the link, fetch.
	put "$D/pub/k.txt"
	ln "$D/pub/k.txt" "$O/k"
	check "rewrites through a link, keep-alive rounds" "0 stale of 200" "$(python3 - "$PORT" "$O/k" <<'PY'
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
def get():
    conn.request("GET", "/pub/k.txt")
    return conn.getresponse().read()
stale = 0
for i in range(200):
    get(); get()
    body = b"%08d" % i + b"z" * 818 + b"\n"
    with open(sys.argv[2], "r+b") as f:
        f.write(body)
    if get() != body:
        stale += 1
print("%d stale of 200" % stale)
PY
)"
}

run_backends checks
