# Changes to a served file are visible on the very next request: in-place
# rewrite (same size, same mtime), rename over it, chmod 000, delete, a
# parent directory replaced by a symlink or by another directory, and the
# file's directory removed. Holds with or without the small-file cache
# (daemon/fcache.c); each file is fetched twice before a change so that a
# cache, when present, serves the second fetch and must notice.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/a/b"
. "$top_srcdir/t/daemon/fcache_lib.sh"

# stale FIRST LAST: how many of many/FIRST.txt .. many/LAST.txt come
# back different from the file on disk
stale() {
	local i n=0
	for i in $(seq "$1" "$2"); do
		curl -s -o "$T/got" "$URL/many/$i.txt"
		cmp -s "$T/got" "$D/many/$i.txt" || n=$((n + 1))
	done
	echo "$n"
}

checks() {
	rm -rf "$D"; mkdir -p "$D/a/b"; chmod 755 "$D" "$D/a" "$D/a/b"
	put "$D/a/b/f.txt"
	start_daemon --root "$D" -c "$conf"

	same a/b/f.txt "initial"
	local etag
	etag=$(curl -s -D - -o /dev/null "$URL/a/b/f.txt" | tr -d '\r' | sed -n 's/^ETag: //Ip')
	check "304 for the current ETag" 304 "$(code /a/b/f.txt -H "If-None-Match: $etag")"

	# in place: same size, same mtime (so the same ETag), other bytes
	python3 - "$D/a/b/f.txt" <<'PY'
import os, sys
st = os.stat(sys.argv[1])
with open(sys.argv[1], "r+b") as f:
    f.write(b"INPLACE")
os.utime(sys.argv[1], ns=(st.st_atime_ns, st.st_mtime_ns))
PY
	same a/b/f.txt "rewritten in place, same size and mtime"
	check_match "in-place body served" "^INPLACE" "$(head -c 7 "$T/got")"

	put "$D/a/b/new"
	mv "$D/a/b/new" "$D/a/b/f.txt"
	same a/b/f.txt "another file renamed over it"
	check "old ETag no longer 304" 200 "$(code /a/b/f.txt -H "If-None-Match: $etag")"

	chmod 000 "$D/a/b/f.txt"
	check "chmod 000: 403" 403 "$(code /a/b/f.txt)"
	if wait_for "$T/daemon.err" "\\[notice\\].*a/b/f\\.txt.*Permission denied"; then
		ok "the unreadable file is logged (notice), with its path and the error"
	else not_ok "no notice for the unreadable file: $(tail -3 "$T/daemon.err")"; fi
	chmod 644 "$D/a/b/f.txt"
	same a/b/f.txt "chmod 644 again"

	rm "$D/a/b/f.txt"
	check "deleted: 404" 404 "$(code /a/b/f.txt)"
	check "deleted: still 404" 404 "$(code /a/b/f.txt)"

	put "$D/a/b/f.txt"
	same a/b/f.txt "created again"

	# the parent directory becomes a symlink to another directory
	mkdir "$D/a/c"
	put "$D/a/c/f.txt"
	mv "$D/a/b" "$D/a/b.old"
	ln -s c "$D/a/b"
	curl -s -o "$T/got" "$URL/a/b/f.txt"
	if cmp -s "$T/got" "$D/a/c/f.txt"; then ok "parent replaced by a symlink"
	else not_ok "parent replaced by a symlink: body differs from $D/a/c/f.txt"; fi
	same a/b/f.txt "through the symlinked parent"

	# the grandparent replaced by another tree
	rm "$D/a/b"
	mv "$D/a/b.old" "$D/a/b"
	same a/b/f.txt "parent back"
	mkdir -p "$D/a2/b"
	put "$D/a2/b/f.txt"
	mv "$D/a" "$D/a.old"
	mv "$D/a2" "$D/a"
	same a/b/f.txt "grandparent replaced by another directory"

	# the parent made unreadable, then removed
	chmod 000 "$D/a/b"
	check "parent chmod 000: 403" 403 "$(code /a/b/f.txt)"
	chmod 755 "$D/a/b"
	same a/b/f.txt "parent chmod 755 again"
	rm -r "$D/a/b"
	check "parent removed: 404" 404 "$(code /a/b/f.txt)"

	# many distinct files, then a change to each is seen
	local i bad=0
	mkdir -p "$D/many"
	for i in $(seq 1 20); do put "$D/many/$i.txt"; done
	for i in $(seq 1 20); do curl -s -o /dev/null -o /dev/null "$URL/many/$i.txt" "$URL/many/$i.txt"; done
	for i in $(seq 1 20); do put "$D/many/$i.txt"; done
	check "20 rewritten files all fresh" 0 "$(stale 1 20)"

	# One keep-alive connection, many rounds of: fetch (cached), rewrite
	# in place (same size), fetch. The second fetch arrives on a
	# connection the daemon is already reading, right after the write
	# returned: a hit that skipped pending events would be stale here.
	put "$D/many/k.txt"
	check "keep-alive rewrite rounds all fresh" "0 stale of 300" "$(python3 - "$PORT" "$D/many/k.txt" <<'PY'
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
path = sys.argv[2]
def get():
    conn.request("GET", "/many/k.txt")
    r = conn.getresponse()
    return r.read()
stale = 0
for i in range(300):
    get(); get()
    body = b"%08d" % i + b"y" * 818 + b"\n"
    with open(path, "r+b") as f:
        f.write(body)
    if get() != body:
        stale += 1
print("%d stale of 300" % stale)
PY
)"

	# Sidecars: an Accept-Encoding request is answered from the cache
	# only for a file with no FILE.gz/.br/.zst; one created is used on
	# the very next request (same keep-alive connection), and once it is
	# removed the plain body is back. Vary on every answer.
	put "$D/many/s.txt"
	local h
	h=$(curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip' "$URL/many/s.txt" "$URL/many/s.txt" | tr -d '\r')
	check "no sidecar, Accept-Encoding: Vary on both answers" 2 "$(grep -c '^Vary: Accept-Encoding' <<< "$h")"
	check "no sidecar, Accept-Encoding: no Content-Encoding" 0 "$(grep -ci '^Content-Encoding' <<< "$h")"
	check "no Accept-Encoding: Vary too" "Accept-Encoding" \
		"$(curl -s -D - -o /dev/null "$URL/many/s.txt" | tr -d '\r' | sed -n 's/^Vary: //Ip')"
	check "sidecar appears and goes, keep-alive rounds" "0 wrong of 100" "$(python3 - "$PORT" "$D/many/s.txt" <<'PY'
import gzip, http.client, os, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
path = sys.argv[2]
plain = open(path, "rb").read()
def get():
    conn.request("GET", "/many/s.txt", headers={"Accept-Encoding": "gzip"})
    r = conn.getresponse()
    return r.getheader("Content-Encoding"), r.read()
wrong = 0
for i in range(100):
    get(); get()                          # cached (no sidecar)
    gz = gzip.compress(plain)
    with open(path + ".gz.tmp", "wb") as f:
        f.write(gz)
    os.chmod(path + ".gz.tmp", 0o644)
    os.rename(path + ".gz.tmp", path + ".gz")
    if get() != ("gzip", gz):
        wrong += 1
    os.unlink(path + ".gz")
    if get() != (None, plain):
        wrong += 1
print("%d wrong of 100" % wrong)
PY
)"

	# A cache of 3 entries (fcache_entries): 20 files evict each other,
	# every fetch still byte-exact, every change still seen.
	stop_daemon
	{ cat "$conf"; echo "fcache_entries = 3"; } > "$T/small.conf"
	start_daemon --root "$D" -c "$T/small.conf"
	bad=0
	for i in $(seq 1 20); do
		curl -s -o "$T/got" -o "$T/got2" "$URL/many/$i.txt" "$URL/many/$i.txt"
		cmp -s "$T/got" "$D/many/$i.txt" && cmp -s "$T/got2" "$D/many/$i.txt" || bad=$((bad + 1))
	done
	for i in $(seq 18 20); do put "$D/many/$i.txt"; done
	check "fcache_entries = 3: 20 files, all fresh" 0 "$((bad + $(stale 1 20)))"
	stop_daemon

	# Many directories, fetched by 64 clients at once (as root the
	# dentry cache is dropped first so that the lookups do park): fills
	# interleave, evict each other and are dropped while parked. Every
	# answer stays right and the daemon keeps serving.
	{ cat "$conf"; echo "fcache_entries = 100000"; } > "$T/big.conf"
	rm -rf "$D/w"
	python3 - "$D/w" <<'PY'
import os, sys
for i in range(2000):
    d = os.path.join(sys.argv[1], "d%d" % i, "e")
    os.makedirs(d)
    with open(os.path.join(d, "f.txt"), "w") as f:
        f.write("w%d\n" % i)
    os.chmod(os.path.join(d, "f.txt"), 0o644)
for root, dirs, files in os.walk(sys.argv[1]):
    os.chmod(root, 0o755)
PY
	start_daemon --root "$D" -c "$T/big.conf"
	[ -w /proc/sys/vm/drop_caches ] && echo 2 > /proc/sys/vm/drop_caches
	check "2,000 files in their own directories from 64 clients, all right" "0 wrong of 2000" \
		"$(python3 - "$PORT" <<'PY'
import http.client, sys, threading
port = int(sys.argv[1]); wrong = [0]; lock = threading.Lock()
def client(k):
    conn = None
    for i in range(k, 2000, 64):
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/w/d%d/e/f.txt" % i)
            r = conn.getresponse()
            ok = r.read() == b"w%d\n" % i
        except (OSError, http.client.HTTPException):
            ok, conn = False, None
        if not ok:
            with lock:
                wrong[0] += 1
ts = [threading.Thread(target=client, args=(k,)) for k in range(64)]
for t in ts: t.start()
for t in ts: t.join()
print("%d wrong of 2000" % wrong[0])
PY
)"
	check "and the daemon still serves" "w7" "$(curl -s "$URL/w/d7/e/f.txt")"
}

run_backends checks
