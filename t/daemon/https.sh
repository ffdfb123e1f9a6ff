# HTTPS: an ssl listener next to a plain one, with a certificate made
# here by openssl; files small and large, ranges, a listing, keep-alive,
# TLS versions, plain HTTP sent to the TLS port, the bytes a TLS body
# cut short is logged with, and the configuration errors. Pipelined
# bursts of small responses (GET, HEAD, 304, 404 mixed), whole and
# intact, also to a client that stops reading until the socket is full;
# and one send per small response, counted with strace, and one TLS
# record (header and body together).
. "$top_srcdir/t/daemon/lib.sh"
need openssl sha256sum

D=$T/root
mkdir -p "$D/dir"
echo "small over tls" > "$D/small.txt"
# past small_file_max and not a multiple of any block or record size
head -c $((3 * 1024 * 1024 + 4321)) /dev/urandom > "$D/dir/large.bin"
touch "$D/dir/listed-name.txt"
# under small_file_max (one buffer, header and body sent together) and
# larger than a TLS record
head -c $((60 * 1024 + 17)) /dev/urandom > "$D/mid.bin"
# one TLS record with its header, more than a small socket takes
head -c $((12 * 1024 + 5)) /dev/urandom > "$D/twelve.bin"

# certificate and key (P-256), valid for 127.0.0.1 and localhost
tls_pair() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$1.key" -out "$1.crt" -days 2 -subj /CN=localhost \
		-addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>"$T/openssl.err" ||
		{ cat "$T/openssl.err"; exit 99; }
}
tls_pair "$T/a"
tls_pair "$T/b"

cat > "$T/c.conf" <<EOF
[server]
root = $D
access_log = $T/access.log
ssl_certificate = $T/a.crt
ssl_certificate_key = $T/a.key
EOF


# Reads a large body over TLS, pauses after 1 MiB while the file is cut
# to 2 MiB, then reads to the end: prints the body bytes received.
cut_client() {
	python3 - "$SPORT" "$T/a.crt" "$D/dir/cut.bin" <<'PY'
import os, socket, ssl, sys, time
port, ca, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.settimeout(10)
s.connect(("127.0.0.1", port))
t = ctx.wrap_socket(s, server_hostname="localhost")
t.sendall(b"GET /dir/cut.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
buf = b""
while b"\r\n\r\n" not in buf:
    buf += t.recv(65536)
n = len(buf.split(b"\r\n\r\n", 1)[1])
while n < 1 << 20:
    n += len(t.recv(65536))
time.sleep(0.3)
os.truncate(path, 2 << 20)
try:
    while True:
        d = t.recv(65536)
        if not d:
            break
        n += len(d)
except (ssl.SSLError, OSError):
    pass
print(n)
PY
}

# Pipelines requests over one TLS connection and checks every response
# in order: status, length, body byte for byte. Args: port, CA, root,
# count, slow (80 large answers first, then stop reading for a while
# after sending, with a small receive buffer, then read in small
# pieces). Prints "ok N" (N answers) or what went wrong.
pipe_client() {
	timeout 50 python3 - "$@" <<'PY'
import hashlib, socket, ssl, sys, time
port, ca, root, count, slow = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "slow"
files = {p: open(root + p, "rb").read() for p in ("/small.txt", "/mid.bin")}
ctx = ssl.create_default_context(cafile=ca)
def connect():
    s = socket.socket()
    if slow:
        # small, but not below one segment: with a window under the MSS
        # Linux sends one segment per 200 ms
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    s.settimeout(20)
    s.connect(("127.0.0.1", port))
    return ctx.wrap_socket(s, server_hostname="localhost")
def head_of(buf):
    i = buf.find(b"\r\n\r\n")
    if i < 0:
        return None
    lines = buf[:i].decode("latin-1").split("\r\n")
    h = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        h[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), h, i + 4
# the ETag of small.txt, for the 304s
t = connect()
t.sendall(b"HEAD /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
b = b""
while head_of(b) is None:
    b += t.recv(4096)
etag = head_of(b)[1]["etag"]
t.close()
kinds = [("GET", "/small.txt", 200), ("GET", "/mid.bin", 200), ("HEAD", "/small.txt", 200),
         ("GET", "/small.txt", 304), ("GET", "/none.txt", 404), ("GET", "/small.txt", 200),
         ("HEAD", "/mid.bin", 200)]
want = [kinds[(i * 5 + i // 7) % len(kinds)] for i in range(count)]
if slow:
    # first more than the socket holds (4 MiB at most), so that the
    # small answers after it meet a full socket, often within the
    # header record that waits for its body
    want = [kinds[1]] * 80 + want
    count = len(want)
reqs = b""
for m, p, st in want:
    extra = "If-None-Match: %s\r\n" % etag if st == 304 else ""
    reqs += ("%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (m, p, extra)).encode()
t = connect()
t.sendall(reqs)
if slow:
    time.sleep(1.5)           # the server's sends fill the socket meanwhile
buf = bytearray()
pos = got = 0
def need(n):
    global got
    while len(buf) - pos < n:
        d = t.recv(1024 if slow and got < (1 << 20) else 65536)
        if not d:
            raise EOFError("connection closed")
        buf.extend(d)
        got += len(d)
        if slow and got < (1 << 20):
            time.sleep(0.001)
try:
    for i, (m, p, st) in enumerate(want):
        while True:
            r = head_of(bytes(buf[pos:pos + 4096]))
            if r is not None:
                break
            need(len(buf) - pos + 1)
        status, h, hl = r
        pos += hl
        if status != st:
            print("response %d (%s %s): status %d, not %d" % (i, m, p, status, st)); sys.exit(0)
        n = int(h.get("content-length", "0"))
        if m == "HEAD" or st == 304:
            if m == "HEAD" and p in files and n != len(files[p]):
                print("response %d: HEAD length %d" % (i, n)); sys.exit(0)
            continue
        need(n)
        body = bytes(buf[pos:pos + n])
        pos += n
        if p in files and body != files[p]:
            print("response %d (%s): body differs (%d bytes)" % (i, p, len(body))); sys.exit(0)
        if pos > (1 << 20):
            del buf[:pos]
            pos = 0
except (EOFError, OSError, ssl.SSLError) as e:
    print("after %d of %d responses: %s" % (i, count, e)); sys.exit(0)
# nothing more than asked for
t.settimeout(0.3)
try:
    extra = t.recv(1)
except (socket.timeout, ssl.SSLError):
    extra = b""
print("ok %d" % count if not extra and pos == len(buf) else "extra bytes after the last response")
PY
}

# One connection with openssl s_client, resuming the session saved in
# $T/sess if there is one, saving the new one there: prints "New" or
# "Reused", the protocol, and the response's status line. Args: port,
# then s_client options (e.g. -tls1_2).
resume() {
	local port=$1 in=()
	shift
	[ -s "$T/sess" ] && in=(-sess_in "$T/sess")
	printf 'GET /small.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' |
		timeout 10 openssl s_client -connect "127.0.0.1:$port" -CAfile "$T/a.crt" \
			"${in[@]}" -sess_out "$T/sess.new" -ign_eof "$@" 2>/dev/null |
		tr -d '\r' | grep -a -E '^(New|Reused),|^HTTP/' | sed 's/, Cipher.*//; s/,//' | tr '\n' ' '
	mv -f "$T/sess.new" "$T/sess" 2>/dev/null
}

# The send calls (writev, sendmsg, sendto) the daemon makes while a
# client fetches small.txt N times, one request at a time, on one TLS
# connection; empty when strace cannot trace the daemon here.
sends_for() {
	command -v strace > /dev/null 2>&1 || return 0
	strace -f -c -o "$T/strace.out" -e trace=writev,sendmsg,sendto -p "$DPID" 2>/dev/null &
	local sp=$! i
	for i in $(seq 1 50); do
		grep -q . "$T/strace.out" 2>/dev/null && break
		sleep 0.05
	done
	sleep 0.3               # attached to every thread
	timeout 30 python3 - "$SPORT" "$T/a.crt" "$1" <<'PY'
import socket, ssl, sys
port, ca, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context(cafile=ca)
t = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                    server_hostname="localhost")
for _ in range(n):
    t.sendall(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
    b = b""
    while not b.endswith(b"small over tls\n"):
        b += t.recv(4096)
t.close()
PY
	sleep 0.2
	kill -INT "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	awk '$NF == "total" { print $(NF - 1) }' "$T/strace.out" 2>/dev/null
}

# The TLS records of small.txt's responses, one request at a time on
# one connection: prints the records of the last N of N + 1 responses
# (the first may share its reads with the handshake's tickets).
records_for() {
	timeout 30 python3 - "$SPORT" "$T/a.crt" "$1" <<'PY'
import socket, ssl, sys
port, ca, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context(cafile=ca)
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
t = ctx.wrap_bio(inc, out, server_hostname="localhost")
s = socket.create_connection(("127.0.0.1", port), timeout=10)
raw = bytearray()
def flush():
    d = out.read()
    if d:
        s.sendall(d)
def more():
    d = s.recv(65536)
    if not d:
        raise EOFError("closed")
    raw.extend(d)
    inc.write(d)
def records():
    pos = count = 0
    while pos + 5 <= len(raw):
        pos += 5 + int.from_bytes(raw[pos + 3:pos + 5], "big")
        count += 1
    return count
while True:
    try:
        t.do_handshake()
        break
    except ssl.SSLWantReadError:
        flush()
        more()
flush()
want = b"small over tls\n"
for i in range(n + 1):
    if i == 1:
        mark = records()
    t.write(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
    flush()
    b = b""
    while not b.endswith(want):
        try:
            b += t.read(65536)
        except ssl.SSLWantReadError:
            more()
print(records() - mark)
PY
}

# A small response (one record) written to a socket too full to take it
# all: the client makes the daemon's socket small (its descriptor taken
# with pidfd_getfd), reads nothing for a while, then reads. Arg: keep
# (nothing asked after it), close (asked with "Connection: close"), or
# halfclose (after mid.bin, then the client shuts its sending side).
# Prints "ok" or what went wrong.
full_socket_client() {
	timeout 30 python3 - "$SPORT" "$T/a.crt" "$DPID" "$D" "$1" <<'PY'
import ctypes, os, socket, ssl, sys, time
port, ca, pid, root, mode = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
want = open(root + "/twelve.bin", "rb").read()
ctx = ssl.create_default_context(cafile=ca)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.settimeout(10)
s.connect(("127.0.0.1", port))
t = ctx.wrap_socket(s, server_hostname="localhost")
# the daemon's end: /proc/net/tcp names its inode
me = "%04X" % t.getsockname()[1]
inode = None
for line in open("/proc/net/tcp").read().splitlines()[1:]:
    f = line.split()
    if f[1].endswith(":%04X" % port) and f[2].endswith(":" + me):
        inode = f[9]
fd = None
for n in os.listdir("/proc/%d/fd" % pid):
    try:
        if os.readlink("/proc/%d/fd/%s" % (pid, n)) == "socket:[%s]" % inode:
            fd = int(n)
    except OSError:
        pass
if fd is None:
    print("the daemon's socket not found"); sys.exit(0)
libc = ctypes.CDLL(None, use_errno=True)
pfd = os.pidfd_open(pid)
mine = libc.syscall(438, pfd, fd, 0)    # pidfd_getfd
if mine < 0:
    print("pidfd_getfd: errno %d" % ctypes.get_errno()); sys.exit(0)
k = socket.socket(fileno=mine)
k.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
k.detach()
os.close(mine)
req = b"GET /twelve.bin HTTP/1.1\r\nHost: x\r\n%s\r\n"
if mode == "close":
    t.sendall(req % b"Connection: close\r\n")
elif mode == "halfclose":
    t.sendall(b"GET /mid.bin HTTP/1.1\r\nHost: x\r\n\r\n" + req % b"")
    half = socket.socket(fileno=os.dup(t.fileno()))
    half.shutdown(socket.SHUT_WR)
    half.close()
    want = open(root + "/mid.bin", "rb").read() + want
else:
    t.sendall(req % b"")
time.sleep(1)
buf = b""
def body():
    out, rest = b"", buf
    while b"\r\n\r\n" in rest:
        head, rest = rest.split(b"\r\n\r\n", 1)
        n = int([l.split(b":")[1] for l in head.split(b"\r\n")
                 if l.lower().startswith(b"content-length:")][0])
        out, rest = out + rest[:n], rest[n:]
    return out
try:
    while len(body()) < len(want):
        d = t.recv(1024)
        if not d:
            break
        buf += d
        time.sleep(0.002)
except (OSError, ssl.SSLError) as e:
    print("after %d bytes: %s" % (len(buf), e)); sys.exit(0)
print("ok" if body() == want else "bodies differ (%d bytes)" % len(buf))
PY
}

# Asks for a TLS 1.3 key update (openssl s_client's K) between two
# requests: prints the KeyUpdate messages the daemon sent.
key_update() {
	{ printf 'GET /twelve.bin HTTP/1.1\r\nHost: x\r\n\r\n'; sleep 1; printf 'K\n'
	  sleep 1; printf 'GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n'; sleep 1; } |
		timeout 10 openssl s_client -connect "127.0.0.1:$SPORT" -CAfile "$T/a.crt" \
			-tls1_3 -msg 2>/dev/null | grep -a -c '^<<< .*KeyUpdate'
}

checks() {
	: > "$T/access.log"
	SPORT=$(free_port)
	start_daemon -c "$T/c.conf" -l "127.0.0.1:$SPORT ssl"
	local S=https://127.0.0.1:$SPORT TC=(--cacert "$T/a.crt") out n

	check_match "start-up prints the https URL" "on https://127\.0\.0\.1:$SPORT/" \
		"$(cat "$T/daemon.out")"
	check "small file over https" "small over tls" "$(curl -s "${TC[@]}" "$S/small.txt")"
	check "by name (localhost)" "small over tls" \
		"$(curl -s "${TC[@]}" "https://localhost:$SPORT/small.txt")"
	check "large file: sha256" "$(sha256sum < "$D/dir/large.bin")" \
		"$(curl -s "${TC[@]}" "$S/dir/large.bin" | sha256sum)"
	check "range" "$(tail -c +1000001 "$D/dir/large.bin" | head -c 100 | od -An -tx1)" \
		"$(curl -s "${TC[@]}" -r 1000000-1000099 "$S/dir/large.bin" | od -An -tx1)"
	check "range: 206" 206 \
		"$(curl -s -o /dev/null -w '%{http_code}' "${TC[@]}" -r 5-9 "$S/dir/large.bin")"
	check_match "multiple ranges: multipart" "multipart/byteranges" \
		"$(curl -s -o /dev/null -w '%{content_type}' "${TC[@]}" -r 0-0,-1 "$S/dir/large.bin")"
	# a small file's ranges come from the file cache's copy once filled
	# (the first fetch fills it)
	curl -s -o /dev/null "${TC[@]}" "$S/mid.bin"
	check "ranges of a cached file over https" \
		"$(tail -c +101 "$D/mid.bin" | head -c 9900 | od -An -tx1 | sha256sum)$(tail -c 17 "$D/mid.bin" | od -An -tx1 | sha256sum)" \
		"$(curl -s "${TC[@]}" -r 100-9999 "$S/mid.bin" | od -An -tx1 | sha256sum)$(curl -s "${TC[@]}" -r -17 "$S/mid.bin" | od -An -tx1 | sha256sum)"
	check_match "listing" "listed-name\.txt" "$(curl -s "${TC[@]}" "$S/dir/")"
	check "HEAD: length" "$(stat -c %s "$D/dir/large.bin")" \
		"$(curl -s -I "${TC[@]}" "$S/dir/large.bin" | tr -d '\r' | awk 'tolower($1) == "content-length:" { print $2 }')"
	# five requests, one connection (curl reuses it: 1 then 0s)
	check "keep-alive: one connection for five requests" "1 0 0 0 0" \
		"$(curl -s -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
		    -w '%{num_connects} ' "${TC[@]}" "$S/small.txt" "$S/dir/large.bin" \
		    "$S/dir/" "$S/small.txt" "$S/dir/large.bin" | sed 's/ $//')"
	check "TLS 1.3" "200" "$(curl -s -o /dev/null -w '%{http_code}' "${TC[@]}" --tlsv1.3 "$S/small.txt")"
	check "TLS 1.2" "200" "$(curl -s -o /dev/null -w '%{http_code}' "${TC[@]}" --tlsv1.2 --tls-max 1.2 "$S/small.txt")"
	# the client allows TLS 1.1 (security level 0): the server refuses it
	curl -s -o /dev/null "${TC[@]}" --tlsv1.1 --tls-max 1.1 --ciphers 'DEFAULT@SECLEVEL=0' "$S/small.txt"
	check "TLS 1.1 refused (handshake fails, curl 35)" 35 "$?"
	out=$(openssl s_client -connect "127.0.0.1:$SPORT" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' </dev/null 2>&1)
	check_match "TLS 1.1 refused (openssl s_client): no cipher agreed" "Cipher is \(NONE\)" "$out"
	check "TLS 1.0 refused" 35 "$(curl -s -o /dev/null "${TC[@]}" --tlsv1.0 --tls-max 1.0 --ciphers 'DEFAULT@SECLEVEL=0' "$S/small.txt"; echo $?)"

	# plain HTTP on the TLS port: a readable 400, and the daemon serves on
	out=$(curl -s -i --max-time 5 "http://127.0.0.1:$SPORT/small.txt" | tr -d '\r')
	check_match "plain HTTP to the TLS port: 400" "^HTTP/1.1 400" "$out"
	check_match "plain HTTP to the TLS port: says why" "plain HTTP request was sent to an HTTPS port" "$out"
	check "after it, https still served" "small over tls" "$(curl -s "${TC[@]}" "$S/small.txt")"
	# garbage and a bare connect on the TLS port
	printf 'GARBAGE\r\n\r\n' | timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read())
s.settimeout(4); print(s.recv(100)[:12])' "$SPORT" > /dev/null 2>&1
	check "after garbage, https still served" "small over tls" "$(curl -s "${TC[@]}" "$S/small.txt")"

	# pipelined bursts: every response whole, in order, nothing extra
	check "pipelined burst of 3000 small responses" "ok 3000" \
		"$(pipe_client "$SPORT" "$T/a.crt" "$D" 3000 fast)"
	check "pipelined, the client reading slowly once the socket is full" "ok 12080" \
		"$(pipe_client "$SPORT" "$T/a.crt" "$D" 12000 slow)"
	check "a small answer the socket could not take at once" ok "$(full_socket_client keep)"
	check "... asked with Connection: close" ok "$(full_socket_client close)"
	check "... the client's sending side shut after it" ok "$(full_socket_client halfclose)"
	check "after them, https still served" "small over tls" "$(curl -s "${TC[@]}" "$S/small.txt")"
	# one send per small response (libmicrohttpd alone sends header and
	# body records apart: 2); a few more for the handshake
	n=$(sends_for 200)
	if [ -z "$n" ]; then
		echo "# strace cannot trace the daemon here: sends per response not counted"
	elif [ "$n" -ge 200 ] && [ "$n" -le 215 ]; then
		ok "one send per small response ($n for 200)"
	else not_ok "one send per small response: $n sends for 200 responses"; fi

	check "TLS 1.3 key update asked for: answered" 1 "$(key_update)"
	# header and body in one record (libmicrohttpd alone sends two)
	check "one TLS record per small response" 100 "$(records_for 100)"

	# resumption by session ticket, TLS 1.3 and 1.2: no full handshake
	# for a client that comes back
	rm -f "$T/sess"
	check "TLS 1.3: first connection, full handshake" "New TLSv1.3 HTTP/1.1 200 OK " "$(resume "$SPORT")"
	check "TLS 1.3: session resumed by ticket" "Reused TLSv1.3 HTTP/1.1 200 OK " "$(resume "$SPORT")"
	rm -f "$T/sess"
	check "TLS 1.2: first connection, full handshake" "New TLSv1.2 HTTP/1.1 200 OK " "$(resume "$SPORT" -tls1_2)"
	check "TLS 1.2: session resumed by ticket" "Reused TLSv1.2 HTTP/1.1 200 OK " "$(resume "$SPORT" -tls1_2)"

	# the plain port at the same time: plain HTTP, no TLS
	check "plain port: http" "small over tls" "$(curl -s "$URL/small.txt")"
	check "plain port: no TLS" 35 "$(curl -s -o /dev/null "${TC[@]}" "https://127.0.0.1:$PORT/small.txt"; echo $?)"

	# the access log: a whole TLS body is its length; one cut short (the
	# file shrank) is what the client got, not what the socket carried
	# (each 16 KiB record adds 22 bytes or more)
	check_match "whole large body logged" "\" 200 $(stat -c %s "$D/dir/large.bin") \"" \
		"$(log_line '"GET /dir/large.bin HTTP/1.1" 200')"
	head -c $((8 * 1024 * 1024)) /dev/urandom > "$D/dir/cut.bin"
	n=$(cut_client)
	out=$(log_line '"GET /dir/cut.bin ')
	local logged
	logged=$(printf '%s' "$out" | awk '{print $10}')
	if [ -n "$n" ] && [ "$n" -ge $((1 << 20)) ] && [ "$n" -lt $((8 << 20)) ] &&
	   [ -n "$logged" ] && [ "$logged" -ge $((n - 64)) ] && [ "$logged" -le $((n + 64)) ]; then
		ok "body cut short over TLS: logged $logged, client got $n"
	else not_ok "body cut short over TLS: client got '$n', access log line '$out'"; fi
	check_log "body cut short: logged with the path" "$T/daemon.err" \
		"read dir/cut\.bin: file shrank"
	rm -f "$D/dir/cut.bin"

	# Refusals on the TLS port are closes, never plain text a TLS client
	# would take for a broken record: a head not complete within
	# header_timeout (here a handshake that stops), and a connection
	# over max_connections_per_ip.
	stop_daemon
	printf '[server]\nroot = %s\nheader_timeout = 2\nmax_connections_per_ip = 3\n' "$D" > "$T/r.conf"
	printf 'ssl_certificate = %s\nssl_certificate_key = %s\n' "$T/a.crt" "$T/a.key" >> "$T/r.conf"
	SPORT=$(free_port)
	start_daemon -c "$T/r.conf" -l "127.0.0.1:$SPORT ssl"
	out=$(timeout 20 python3 - "$SPORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
def conn():
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"\x16\x03\x01")          # a handshake record, cut
    return s
def answer(s, wait):
    s.settimeout(wait)
    got = b""
    try:
        while True:
            d = s.recv(4096)
            if not d:
                return got or b"<closed>"
            got += d
    except socket.timeout:
        return got or b"<open>"
    except ConnectionResetError:
        return got or b"<reset>"
held = [conn() for _ in range(3)]
time.sleep(0.3)
fourth = conn()
print("over the limit:", answer(fourth, 5).decode("latin-1")[:40])
print("stalled handshake:", answer(held[0], 8).decode("latin-1")[:40])
PY
)
	check_match "TLS port, over max_connections_per_ip: closed, no plain 503" \
		"over the limit: <(closed|reset)>" "$out"
	check_match "TLS port, stalled handshake: closed at header_timeout, no plain 408" \
		"stalled handshake: <(closed|reset)>" "$out"
	check "after them, https still served" "small over tls" \
		"$(curl -s --cacert "$T/a.crt" "https://127.0.0.1:$SPORT/small.txt")"

	# ssl_session_tickets = off: every connection a full handshake
	stop_daemon
	printf 'ssl_session_tickets = off\n' >> "$T/r.conf"
	SPORT=$(free_port)
	start_daemon -c "$T/r.conf" -l "127.0.0.1:$SPORT ssl"
	rm -f "$T/sess"
	resume "$SPORT" > /dev/null
	check "tickets off: a returning client does a full handshake" "New TLSv1.3 HTTP/1.1 200 OK " \
		"$(resume "$SPORT")"
}

# configuration errors, at -t and at start-up
conf_errors() {
	local out rc
	conf_t() {   # lines of [server] after root: fileserverd -t's output
		printf '[server]\nroot = %s\n' "$D" > "$T/e.conf"
		printf '%s\n' "$@" >> "$T/e.conf"
		timeout 10 "$FSD" -t -c "$T/e.conf" 2>&1
	}
	out=$(conf_t "listen = 127.0.0.1:8443 ssl")
	check_match "ssl without certificate: file:line" \
		"e\.conf:3: listen 127\.0\.0\.1:8443 ssl: ssl needs ssl_certificate and ssl_certificate_key" "$out"
	out=$(conf_t "listen = 127.0.0.1:8443 ssl" "ssl_certificate = $T/a.crt")
	check_match "certificate without key: file:line" "e\.conf:4: ssl_certificate is set but ssl_certificate_key is not" "$out"
	out=$(conf_t "listen = 127.0.0.1:8443 tls")
	check_match "unknown listen flag: file:line" "e\.conf:3: listen: unknown flag in '127\.0\.0\.1:8443 tls'" "$out"
	out=$(conf_t "listen = 127.0.0.1:8443 ssl" "ssl_certificate = $T/none.crt" "ssl_certificate_key = $T/a.key")
	check_match "missing certificate file" "e\.conf:4: ssl_certificate $T/none\.crt: No such file or directory" "$out"
	printf 'not a certificate\n' > "$T/junk.pem"
	out=$(conf_t "listen = 127.0.0.1:8443 ssl" "ssl_certificate = $T/junk.pem" "ssl_certificate_key = $T/a.key")
	check_match "not PEM" "e\.conf:4: ssl_certificate $T/junk\.pem: no PEM certificate" "$out"
	{ echo "-----BEGIN CERTIFICATE-----"; echo "bm90IGEgY2VydGlmaWNhdGU="; echo "-----END CERTIFICATE-----"; } > "$T/bad.crt"
	out=$(conf_t "listen = 127.0.0.1:8443 ssl" "ssl_certificate = $T/bad.crt" "ssl_certificate_key = $T/a.key")
	check_match "invalid certificate" "e\.conf:4: ssl_certificate $T/bad\.crt: not a valid PEM certificate" "$out"
	out=$(conf_t "listen = 127.0.0.1:8443 ssl" "ssl_certificate = $T/a.crt" "ssl_certificate_key = $T/a.crt")
	check_match "key file without a key" "e\.conf:5: ssl_certificate_key $T/a\.crt: no PEM private key" "$out"
	out=$(conf_t "listen = 127.0.0.1:8443 ssl" "ssl_certificate = $T/a.crt" "ssl_certificate_key = $T/b.key")
	check_match "key of another certificate" \
		"e\.conf:5: ssl_certificate_key $T/b\.key: does not match ssl_certificate $T/a\.crt" "$out"
	# a FIFO nobody writes to: refused at once, not waited on
	mkfifo "$T/key.fifo"
	out=$(conf_t "listen = 127.0.0.1:8443 ssl" "ssl_certificate = $T/a.crt" \
		"ssl_certificate_key = $T/key.fifo")
	check_match "key file a FIFO: not a regular file" \
		"e\.conf:5: ssl_certificate_key $T/key\.fifo: not a regular file" "$out"
	out=$(conf_t "listen = 127.0.0.1:8443 ssl" "ssl_certificate = $T/a.crt" "ssl_certificate_key = $T/a.key")
	check_match "good pair: valid" "configuration $T/e\.conf is valid" "$out"
	# at start-up: the same message, exit 1, nothing served
	printf '[server]\nroot = %s\nssl_certificate = %s\nssl_certificate_key = %s\n' \
		"$D" "$T/a.crt" "$T/b.key" > "$T/e.conf"
	out=$("$FSD" -c "$T/e.conf" -l "127.0.0.1:$(free_port) ssl" 2>&1)
	rc=$?
	check "start-up with a mismatched key: exit 1" 1 "$rc"
	check_match "start-up with a mismatched key: says why" "does not match ssl_certificate" "$out"
	# the flag on the command line too
	out=$("$FSD" -t -c "$T/c.conf" -l "127.0.0.1:8443 ssl" 2>&1)
	check_match "-l ADDR:PORT ssl accepted" "is valid" "$out"
}

conf_errors
run_backends checks
