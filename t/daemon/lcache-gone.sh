# A large directory's fill watches its names after the listing's
# prologue has left, so its client may go, or the daemon stop, while
# they are being added (30,000 names: some tens of milliseconds; the
# client goes, or the daemon is told to stop, as soon as the header has
# come). A client gone: the fill is given up, the daemon serves on, and
# the next listing, a fill of its own, is right and kept; the one after
# it comes from the cache. A stop: the daemon exits 0 (under the
# sanitizers, a report or a leak would change that).
. "$top_srcdir/t/daemon/lib.sh"

LCK=$top_srcdir/t/daemon/lcache_check.py
D=$T/root
fresh() { python3 "$LCK" fresh "$URL/big/?format=ndjson" "$D/big"; }
kept() { grep -cE 'listing cache: a fill of [0-9]+ entries kept' "$T/err.log"; }
given_up() { grep -c 'not kept (not listed to the end)' "$T/err.log"; }
# A listing of big/ that waits for its header, prints the status line,
# then runs "$@" and closes.
header_then() {
	python3 - "$PORT" "$@" <<'PY'
import socket, subprocess, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /big/?format=ndjson HTTP/1.1\r\nHost: t\r\n\r\n")
d = b""
while b"\r\n\r\n" not in d:
    k = s.recv(4096)
    if not k:
        break
    d += k
print(d.split(b"\r\n")[0].decode(), flush=True)
if len(sys.argv) > 2:
    subprocess.run(sys.argv[2:])
s.close()
PY
}

checks() {
	rm -rf "$D"
	mkdir -p "$D/big"
	python3 -c 'import os, sys
for i in range(30000):
    open(os.path.join(sys.argv[1], "file-%06d" % i), "w").close()' "$D/big"
	printf '[server]\nroot = %s\nlog_level = debug\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"

	check_match "first listing, a scan" "^ok 30000\$" "$(fresh)"
	check "the second: its header came" "HTTP/1.1 200 OK" "$(header_then)"
	wait_for "$T/err.log" 'not kept \(not listed to the end\)'
	check "its fill given up" 1 "$(given_up)"
	check "nothing kept from it" 0 "$(kept)"
	check_match "the next listing is right" "^ok 30000\$" "$(fresh)"
	wait_for "$T/err.log" 'listing cache: a fill of [0-9]+ entries kept'
	check "its fill kept" 1 "$(kept)"
	check_match "the one after it too" "^ok 30000\$" "$(fresh)"
	check "and came from the cache" 1 "$(lcache_hits_reach /big/ 1)"
	stop_daemon

	# The daemon stopped while a fill's names are being watched.
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"
	check_match "a fresh daemon: first listing" "^ok 30000\$" "$(fresh)"
	check "the second: its header came" "HTTP/1.1 200 OK" "$(header_then kill "$DPID")"
	wait "$DPID"
	check "daemon exits 0 on SIGTERM during the fill" 0 "$?"
	DPID=
}

run_backends mounts_still 3 checks
