# Files above small_file_max: the cache keeps them open and sends every
# hit from that descriptor (daemon/fcache.c), and is never stale: a file
# rewritten in place (same size and mtime), renamed over, truncated,
# grown, written through a hard link or deleted is served as it is now
# on the very next request; one truncated while a hit is being sent
# (from a mapping, or by sendfile above 64 MiB) ends that connection
# instead of stalling it, and is logged; more files than the cache keeps
# open evict each other and stay exact.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/big"
# Under a limit of 4,096 the connections take nearly every descriptor
# and the cache keeps 1/64 of the limit open: 64 files, so that 80
# evict each other below.
ulimit -n 4096 || { echo "SKIP: cannot set the open file limit"; exit 77; }
. "$top_srcdir/t/daemon/fcache_lib.sh"

# big FILE KIB: KIB KiB of fresh random bytes
big() {
	head -c "$(($2 * 1024))" /dev/urandom > "$1"
	chmod 644 "$1"
}

checks() {
	rm -rf "$D"; mkdir -p "$D/big"; chmod 755 "$D" "$D/big"
	big "$D/big/f.bin" 300
	start_daemon --root "$D" -c "$conf"

	check "a 300 KiB file: the second fetch is a hit (not opened)" "1 hits, 0 wrong" \
		"$(python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" big/f.bin)"
	same big/f.bin "initial"

	# On one keep-alive connection: fetch (a hit), change the file
	# one way or another, fetch again at once. Each change must show.
	check "rewrite, rename over, truncate, grow, hard link: all fresh" "0 stale of 200" \
		"$(python3 - "$PORT" "$D/big" <<'PY'
import http.client, os, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
d = sys.argv[2]
path = os.path.join(d, "f.bin")
def get():
    conn.request("GET", "/big/f.bin")
    r = conn.getresponse()
    return r.read()
def write(p, body):
    with open(p, "wb") as f:
        f.write(body)
    os.chmod(p, 0o644)
stale = 0
for i in range(40):
    get(); get()
    # in place: same size, same mtime, other bytes
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(1000 * i)
        f.write(b"%08d" % i)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    stale += get() != open(path, "rb").read()
    # another file renamed over it
    write(path + ".tmp", os.urandom(200 * 1024 + i))
    os.rename(path + ".tmp", path)
    get()
    stale += get() != open(path, "rb").read()
    # truncated, then grown
    os.truncate(path, 100 * 1024 + i)
    stale += get() != open(path, "rb").read()
    with open(path, "ab") as f:
        f.write(os.urandom(150 * 1024))
    stale += get() != open(path, "rb").read()
    # written through a hard link made after it was cached
    get()
    os.link(path, path + ".link")
    with open(path + ".link", "r+b") as f:
        f.write(b"LINKED%04d" % i)
    os.unlink(path + ".link")
    stale += get() != open(path, "rb").read()
print("%d stale of 200" % stale)
PY
)"

	rm "$D/big/f.bin"
	check "deleted: 404" 404 "$(code /big/f.bin)"
	big "$D/big/f.bin" 300
	same big/f.bin "created again"

	# A hit being sent to a client that reads slowly when the file is
	# truncated: what left is the file's start, the connection ends (no
	# stall) and the new file is served exactly. A 16 MiB file is sent
	# from a mapping, an 80 MiB one (sparse) by sendfile; the cut of the
	# latter is logged.
	big "$D/big/t.bin" 16384
	truncate -s 80M "$D/big/s.bin"
	chmod 644 "$D/big/s.bin"
	check "16 MiB and 80 MiB files: hits" "2 hits, 0 wrong" \
		"$(python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" big/t.bin big/s.bin)"
	local f
	for f in t s; do
		check "$f.bin truncated under a cached send" "cut, prefix exact" \
			"$(python3 - "$PORT" "$D/big/$f.bin" "/big/$f.bin" <<'PY'
import os, socket, sys, time
path = sys.argv[2]
want = open(path, "rb").read()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.settimeout(20)
s.sendall(b"GET " + sys.argv[3].encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
got = b""
while len(got) < 256 * 1024:
    got += s.recv(65536)
os.truncate(path, 1024 * 1024)
t0 = time.monotonic()
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
except (ConnectionResetError, socket.timeout) as e:
    print("no end: %r" % e)
    sys.exit(0)
body = got[got.index(b"\r\n\r\n") + 4:]
if len(body) >= len(want):
    print("not cut: %d bytes" % len(body))
elif body != want[:len(body)]:
    print("prefix differs")
elif time.monotonic() - t0 > 10:
    print("cut late")
else:
    print("cut, prefix exact")
PY
)"
		same big/$f.bin "$f.bin truncated, afterwards"
	done
	check_log "the cut under sendfile logged" "$T/daemon.err" "read big/s.bin: file shrank"
	check_log "the cut under a mapping logged" "$T/daemon.err" "read big/t.bin: file shrank"

	# Cut inside the page the file then ends in, under a send from a
	# mapping: there the kernel's copy reads zeros and the response ends
	# as if whole; the end of the request logs it, or the once-a-second
	# check of bodies in flight if it comes first.
	big "$D/big/u.bin" 16384
	curl -s -o /dev/null "$URL/big/u.bin"
	python3 - "$PORT" "$D/big/u.bin" <<'PY'
import os, socket, sys, time
path = sys.argv[2]
size = os.path.getsize(path)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.settimeout(20)
s.sendall(b"GET /big/u.bin HTTP/1.1\r\nHost: x\r\n\r\n")
got = 0
while got < 1024 * 1024:
    got += len(s.recv(65536))
os.truncate(path, size - 100)
try:
    while got < size:
        b = s.recv(1 << 20)
        if not b:
            break
        got += len(b)
except socket.timeout:
    pass
PY
	check_log "a cut inside the last page under a mapping: logged" "$T/daemon.err" \
		"read big/u.bin: file shrank to $((16384 * 1024 - 100)) bytes while $((16384 * 1024)) were being sent; (the client may|connection closed)"

	# More large files than the cache keeps open (64 here): they
	# evict each other; every fetch exact, every change seen.
	local i bad=0
	for i in $(seq 1 80); do big "$D/big/m$i.bin" 80; done
	for i in $(seq 1 80); do
		curl -s -o "$T/got" -o "$T/got2" "$URL/big/m$i.bin" "$URL/big/m$i.bin"
		cmp -s "$T/got" "$D/big/m$i.bin" && cmp -s "$T/got2" "$D/big/m$i.bin" || bad=$((bad + 1))
	done
	for i in 1 40 79 80; do big "$D/big/m$i.bin" 90; done
	for i in $(seq 1 80); do
		curl -s -o "$T/got" "$URL/big/m$i.bin"
		cmp -s "$T/got" "$D/big/m$i.bin" || bad=$((bad + 1))
	done
	check "80 large files, then 4 rewritten: all exact" 0 "$bad"
	check "and the daemon still serves" 200 "$(code /big/m7.bin)"
	stop_daemon
}

run_backends checks
