# Ranges from the file cache (daemon/fcache.c): a single range of a
# cached file is a hit (the file is not opened) for a small file kept in
# memory, a large one kept as a mapping and one above 64 MiB kept open;
# a client that only ever asks for ranges fills the cache; and a range
# is never stale: after a rewrite in place (same size and mtime), a
# rename over, a truncation, a growth or a write through a hard link,
# the very next range answers from the file as it is now (206 with its
# bytes, 416 past its new end, 200 for an If-Range that no longer
# matches). Several ranges and unsatisfiable ones are answered as
# without the cache, and the access log counts the part's bytes.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D"
. "$top_srcdir/t/daemon/fcache_lib.sh"
echo "access_log = $T/access.log" >> "$conf"

checks() {
	rm -rf "$D" "$T/access.log"; mkdir -p "$D"; chmod 755 "$D"
	head -c 4000 /dev/urandom > "$D/s.bin"
	head -c $((300 * 1024)) /dev/urandom > "$D/m.bin"
	# 80 MiB, sparse, random bytes around the part asked for
	truncate -s 80M "$D/f.bin"
	head -c 65536 /dev/urandom | dd of="$D/f.bin" bs=1M seek=70 conv=notrunc status=none
	chmod 644 "$D"/*.bin
	start_daemon --root "$D" -c "$conf"

	check "4000 B file, bytes 100-2099: the second is a hit" "1 hits, 0 wrong" \
		"$(RANGE=100-2099 python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" s.bin)"
	check "300 KiB file (a mapping), only ranges asked: the second is a hit" "1 hits, 0 wrong" \
		"$(RANGE=200000-259999 python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" m.bin)"
	check "80 MiB file (kept open), only ranges asked: the second is a hit" "1 hits, 0 wrong" \
		"$(RANGE=73400000-73430000 python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" f.bin)"
	check "a whole fetch after ranges only: a hit" "1 hits, 0 wrong" \
		"$(python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" m.bin)"

	# Cached now: several ranges, and none satisfiable, as without it.
	curl -s -o "$T/mp" -D "$T/h" -H "Range: bytes=0-9,1000-1009" "$URL/m.bin"
	check_match "two ranges of a cached file: multipart" \
		"^Content-Type: multipart/byteranges; boundary=" "$(tr -d '\r' < "$T/h" | grep -i '^Content-Type:')"
	check "and both parts' bytes" 2 "$(python3 - "$T/mp" "$D/m.bin" <<'PY'
import sys
got, f = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
print(sum(1 for a, b in ((0, 9), (1000, 1009))
          if b"Content-Range: bytes %d-%d/%d\r\n\r\n" % (a, b, len(f)) + f[a:b + 1] in got))
PY
)"
	# The entry keeps the response of the last range asked: ranges asked
	# in turn, and one asked again after another, are each exact.
	check "ranges asked in turn, of each kind of entry: all exact" "0 wrong of 90" \
		"$(python3 - "$PORT" "$D" <<'PY'
import http.client, os, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
wrong = 0
for name, parts in (("s.bin", ((0, 99), (0, 199), (3000, 3999))),
                    ("m.bin", ((0, 0), (100000, 199999), (307000, 307199))),
                    ("f.bin", ((73400000, 73400999), (73401000, 73430000), (0, 9)))):
    data = open(os.path.join(sys.argv[2], name), "rb")
    for i in range(10):
        for first, last in parts:
            conn.request("GET", "/" + name, headers={"Range": "bytes=%d-%d" % (first, last)})
            r = conn.getresponse()
            body = r.read()
            data.seek(first)
            wrong += (r.status, r.getheader("Content-Range"), body) != \
                (206, "bytes %d-%d/%d" % (first, last, os.path.getsize(data.name)),
                 data.read(last - first + 1))
print("%d wrong of 90" % wrong)
PY
)"
	check "past the end of a cached file: 416" 416 "$(code /m.bin -H 'Range: bytes=999999-')"
	check "its Content-Range" "bytes */307200" \
		"$(curl -s -o /dev/null -D - -H 'Range: bytes=999999-' "$URL/m.bin" | tr -d '\r' |
		   grep -i '^Content-Range:' | cut -d' ' -f2-)"
	curl -s -o /dev/null -H "Range: bytes=10-1033" "$URL/s.bin?logged"
	check_match "the access log counts the part's bytes" '" 206 1024 ' "$(log_line 's.bin?logged')"

	# On one keep-alive connection: a range (a hit), a change, the same
	# range again at once, for each kind of change and each kind of entry.
	check "rewrite, rename over, truncate, grow, hard link: every range fresh" "0 stale of 280" \
		"$(python3 - "$PORT" "$D" <<'PY'
import http.client, os, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
d = sys.argv[2]
stale = 0
def get(name, first, last, if_range=None):
    h = {"Range": "bytes=%d-%d" % (first, last)}
    if if_range:
        h["If-Range"] = if_range
    conn.request("GET", "/" + name, headers=h)
    r = conn.getresponse()
    return r.status, r.getheader("ETag"), r.read()
def want(path, first, last, if_range_ok=True):
    data = open(path, "rb").read()
    if first >= len(data):
        return 416, b""
    if not if_range_ok:
        return 200, data
    return 206, data[first:last + 1]
def fresh(name, first, last):
    st, _, body = get(name, first, last)
    w = want(os.path.join(d, name), first, last)
    return (st, body if st != 416 else b"") == w
def write(p, body):
    with open(p, "wb") as f:
        f.write(body)
    os.chmod(p, 0o644)
for name, size, first, last in (("s.bin", 4000, 100, 2099), ("m.bin", 300 * 1024, 200000, 259999)):
    path = os.path.join(d, name)
    for i in range(20):
        get(name, first, last); get(name, first, last)
        # in place: same size, same mtime, other bytes inside the range
        st = os.stat(path)
        with open(path, "r+b") as f:
            f.seek(first + 10 * i)
            f.write(b"%08d" % i)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        stale += not fresh(name, first, last)
        # another file renamed over it; an If-Range with the old tag
        _, old_tag, _ = get(name, first, last)
        write(path + ".tmp", os.urandom(size + i))
        os.rename(path + ".tmp", path)
        st, new_tag, body = get(name, first, last, if_range=old_tag)
        stale += (st, body) != want(path, first, last, if_range_ok=False)
        st, _, body = get(name, first, last, if_range=new_tag)
        stale += (st, body) != want(path, first, last)
        # truncated inside the range, then below it, then grown back
        get(name, first, last)
        os.truncate(path, first + 500)
        stale += not fresh(name, first, last)
        os.truncate(path, first - 50)
        stale += not fresh(name, first, last)
        with open(path, "ab") as f:
            f.write(os.urandom(size))
        stale += not fresh(name, first, last)
        # written through a hard link made after it was cached
        get(name, first, last)
        os.link(path, path + ".link")
        with open(path + ".link", "r+b") as f:
            f.seek(first)
            f.write(b"LINKED%04d" % i)
        os.unlink(path + ".link")
        stale += not fresh(name, first, last)
    write(path, os.urandom(size))
print("%d stale of 280" % stale)
PY
)"
	check "and the daemon still serves" 200 "$(code /s.bin)"
	stop_daemon

	# A part of a file above 64 MiB goes by sendfile, which would wait
	# for ever on a file cut under it: watched even when small (here
	# up to small_file_max, 4 MiB), so the connection ends and the cut
	# is logged.
	sed 's/^access_log = .*/small_file_max = 4194304/' "$conf" > "$T/big.conf"
	start_daemon --root "$D" -c "$T/big.conf"
	check "80 MiB file: a range fills the cache" "1 hits, 0 wrong" \
		"$(RANGE=1048576-5242879 python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" f.bin)"
	check "a 4 MiB part cut under its sendfile: the connection ends" "ended" \
		"$(python3 - "$PORT" "$D/f.bin" <<'PY'
import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /f.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=1048576-5242879\r\n\r\n")
time.sleep(0.5)
os.truncate(sys.argv[2], 1048576 + 1000)
s.settimeout(15)
try:
    while s.recv(65536):
        pass
    print("ended")
except socket.timeout:
    print("stalled")
PY
)"
	check_log "and the cut is logged" "$T/daemon.err" "read f.bin: file shrank to 1049576 bytes"
	stop_daemon
}

run_backends checks
