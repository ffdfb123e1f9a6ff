# Reload on SIGHUP: a download started before it completes byte for
# byte while new requests see the new configuration (another root, its
# listing setting); a file with an error is reported with file:line and
# the old configuration goes on serving; a changed listen address
# answers at once and the dropped one refuses connections. A request
# half sent before the reload is answered with Connection: close, and
# an idle keep-alive connection is closed.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/daemon/reload_lib.sh"
need sha256sum

A=$T/a
B=$T/b
mkdir -p "$A/dir" "$B/dir"
echo A > "$A/who.txt"
echo B > "$B/who.txt"
echo f > "$A/dir/f"
echo f > "$B/dir/f"
if quick; then size=16M; else size=48M; fi
head -c "$size" /dev/urandom > "$A/big"
want=$(sha256sum < "$A/big")

# conf ROOT PORT [extra line]: the configuration file
conf() {
	printf '[server]\nroot = %s\nlisten = 127.0.0.1:%s\n%s\n' "$1" "$2" "${3:-}" > "$T/c.conf"
}

checks() {
	local p1 p2 rc i
	p1=$(free_port)
	conf "$A" "$p1"
	start_conf "$T/c.conf" "$p1"
	check "before: root a" A "$(curl -s "$URL/who.txt")"
	check "before: listing on" 200 "$(code /dir/)"

	curl -s --limit-rate 12M -o "$T/dl" "$URL/big" &
	local dl=$!
	sleep 0.5
	printf '[server]\nroot = %s\nlisten = 127.0.0.1:%s\n[listing]\nenabled = off\n' \
		"$B" "$p1" > "$T/c.conf"
	reload && ok "reload logged" || not_ok "reload not logged: $(tail -3 "$T/daemon.err")"
	check "after: new root" B "$(curl -s "$URL/who.txt")"
	check "after: listing off" 403 "$(code /dir/)"
	wait "$dl"
	check "download across the reload: curl exits 0" 0 "$?"
	check "download across the reload: byte for byte" "$want" "$(sha256sum < "$T/dl")"

	# connections of the old workers: the request one is on gets its
	# answer, its last; an idle one is closed
	python3 - "$p1" "$DPID" > "$T/conns" <<'PY'
import os, signal, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
half = socket.create_connection(("127.0.0.1", port))
half.sendall(b"GET /who.txt HTTP/1.1\r\nHost: x\r\n")
idle = socket.create_connection(("127.0.0.1", port))
idle.sendall(b"GET /who.txt HTTP/1.1\r\nHost: x\r\n\r\n")
idle.settimeout(5)
first = idle.recv(65536)
time.sleep(0.3)
os.kill(pid, signal.SIGHUP)
time.sleep(1)
half.sendall(b"\r\n")
half.settimeout(5)
out = b""
try:
    while True:
        b = half.recv(65536)
        if not b:
            out += b"<closed>"
            break
        out += b
except socket.timeout:
    pass
print(out.decode("latin-1").replace("\r", ""))
try:
    print("idle:", b"200 OK" in first, idle.recv(100) == b"")
except socket.timeout:
    print("idle: still open")
PY
	local conns
	conns=$(cat "$T/conns")
	check_match "half-sent request answered by the old workers" "^HTTP/1.1 200" "$conns"
	check_match "... with Connection: close" "Connection: close" "$conns"
	check_match "... its body" "^B$" "$conns"
	check_match "... and closed" "<closed>" "$conns"
	check "idle keep-alive connection closed" "idle: True True" "$(tail -n1 "$T/conns")"
	RELOADS=$((RELOADS + 1))

	# an error: reported with file and line, the old configuration serves
	printf '[server]\nroot = %s\nlisten = 127.0.0.1:%s\n\nworkers = many\n' "$A" "$p1" > "$T/c.conf"
	reload
	check_log "broken file: file:line in the error log" "$T/daemon.err" \
		"\[error\] $T/c.conf:5: workers: expected a number"
	check_log "broken file: says the old one serves" "$T/daemon.err" \
		"\[error\] reload: .*still serving with the previous one"
	check "broken file: old root still served" B "$(curl -s "$URL/who.txt")"
	check "broken file: daemon runs" yes "$(kill -0 "$DPID" 2>/dev/null && echo yes)"

	# another listen address: it answers, the dropped one refuses
	p2=$(free_port)
	conf "$A" "$p2"
	reload
	check "new address answers" A "$(curl -s --max-time 5 "http://127.0.0.1:$p2/who.txt")"
	for i in $(seq 1 50); do
		curl -s -o /dev/null --max-time 1 "$URL/who.txt"
		rc=$?
		[ "$rc" = 7 ] && break
		sleep 0.1
	done
	check "dropped address refuses connections" 7 "$rc"
	URL=http://127.0.0.1:$p2
	check_log "new address logged" "$T/daemon.err" "listening on 127.0.0.1:$p2"
}
run_backends checks
