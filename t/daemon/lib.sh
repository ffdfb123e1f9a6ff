# t/daemon/lib.sh: sourced by the integration tests. Starts the real
# fileserverd on a free loopback port, drives it with curl and friends,
# and cleans up on any exit. Each test defines checks() and ends with
# `run_backends checks`: the checks run once with the default async
# backend and once with FIBRIL_BACKEND=threads.

set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
FSD=$top_builddir/fileserverd
[ -x "$FSD" ] || { echo "no $FSD"; exit 99; }

. "$top_srcdir/t/lib.sh"
need curl python3

# A quick run (make check-quick) sets FSD_QUICK: a test slow by design
# calls slow_test before its setup and skips (77) there; one slow
# because of a big fixture asks `quick` and makes it smaller.
# free_port [ADDR...]: a port free on every ADDR (127.0.0.1 by default)
free_port() {
	local try p
	for try in $(seq 1 50); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		python3 - "$p" "${@:-127.0.0.1}" <<'PY' 2>/dev/null && { echo "$p"; return 0; }
import socket, sys
for a in sys.argv[2:]:
    s = socket.socket()
    s.bind((a, int(sys.argv[1])))
PY
	done
	return 1
}

# free_low_port: a loopback port below 1024 nobody holds, or nothing
free_low_port() {
	python3 -c '
import socket
for p in range(1023, 600, -1):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break'
}

quick() { [ -n "${FSD_QUICK:-}" ] && [ "$FSD_QUICK" != 0 ]; }
slow_test() {
	if quick; then echo "SKIP: slow, not in a quick run (FSD_QUICK)"; exit 77; fi
}

T=$(mktemp -d "${TMPDIR:-/tmp}/fsd-test.XXXXXX")
DPID=
cleanup() {
	if [ -n "$DPID" ]; then
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT

# slowfs_for_test [slowfs_mount options] BACKING MOUNTPOINT: slowfs
# (t/slowfs/lib.sh, sourced by the test) mounted for this test and
# unmounted at exit, before cleanup; sets MNT. Exits 77 when it cannot
# be mounted here, 99 when mounting fails.
slowfs_for_test() {
	MNT=
	trap 'slowfs_test_umount; cleanup' EXIT
	slowfs_mount "$@"
	case $? in
	0) eval "MNT=\${$#}" ;;
	77) echo "SKIP: cannot mount slowfs"; exit 77 ;;
	*) echo "slowfs_mount failed"; exit 99 ;;
	esac
}
slowfs_test_umount() {
	[ -n "$MNT" ] && slowfs_umount "$MNT" "$SLOWFS_PID"
	MNT=
}
trap 'exit 1' INT TERM

# start_daemon [fileserverd args...]: picks a free port, starts the
# daemon there, waits until it answers. Sets PORT, URL, DPID.
# LISTEN_FLAGS, if set, follow the address (e.g. "status").
start_daemon() {
	local try
	for try in $(seq 1 30); do
		PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1])))' \
			"$PORT" 2>/dev/null || continue
		"$FSD" -l "127.0.0.1:$PORT${LISTEN_FLAGS:+ $LISTEN_FLAGS}" "$@" >"$T/daemon.out" 2>"$T/daemon.err" &
		DPID=$!
		local i
		for i in $(seq 1 100); do
			# any answer will do (a 404 needs no listing, which may be slow)
			if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/.fsd-probe" 2>/dev/null; then
				URL=http://127.0.0.1:$PORT
				return 0
			fi
			kill -0 "$DPID" 2>/dev/null || break
			sleep 0.05
		done
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
		DPID=
		grep -q "in use" "$T/daemon.err" || { cat "$T/daemon.err"; break; }
	done
	echo "could not start fileserverd"
	exit 99
}

stop_daemon() {
	[ -n "$DPID" ] || return 0
	kill "$DPID"
	wait "$DPID"
	local rc=$?
	DPID=
	check "daemon exits 0 on SIGTERM" 0 "$rc"
}

# traced_fsd STRACE-ARGS...: FSD becomes the daemon run by
# `strace -f -qq -o $T/strace.log STRACE-ARGS...`
traced_fsd() {
	{
		echo '#!/bin/bash'
		# (LeakSanitizer cannot run under ptrace: a sanitized build would exit 1)
		echo 'export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0'
		printf 'exec strace -f -qq -o %q' "$T/strace.log"
		printf ' %q' "$@" "$FSD"
		echo ' "$@"'
	} > "$T/fsd-traced"
	chmod +x "$T/fsd-traced"
	FSD=$T/fsd-traced
}

# stop_traced_daemon: stop_daemon for a daemon started under strace
# (DPID is strace, which exits with the daemon's status)
stop_traced_daemon() {
	local pid
	pid=$(pgrep -P "$DPID" -x fileserverd)
	kill "${pid:-$DPID}"
	wait "$DPID"
	check "daemon exits 0 on SIGTERM" 0 "$?"
	DPID=
}

# code URL-PATH [curl args...]: the status code
code() {
	local p=$1
	shift
	curl -s -o /dev/null --path-as-is -w '%{http_code}' "$@" "$URL$p"
}

# raw BYTES: sends BYTES (printf-style escapes) on one connection and
# prints what comes back: the responses, then "<closed>" if the server
# closed the connection after them. Reads until the answers to every
# request sent are complete (Content-Length framing), then waits briefly
# for a close. raw_batch FILE does the same for many requests in one
# python process (python starts slowly on a loaded machine): FILE holds
# one BYTES per line; the output for each is followed by "<end>".
raw() {
	printf '%s\n' "$1" > "$T/raw.one"
	raw_batch "$T/raw.one" | sed '/^<end>$/d'
}
raw_batch() {
	python3 - "$PORT" "$1" <<'PY'
import socket, sys
def complete(buf):
    """number of complete responses at the start of buf (100s skipped)"""
    n, pos = 0, 0
    while True:
        end = buf.find(b"\r\n\r\n", pos)
        if end < 0:
            return n
        head = buf[pos:end].decode("latin-1").lower()
        cl = 0
        for line in head.split("\r\n")[1:]:
            if line.startswith("content-length:"):
                cl = int(line.split(":", 1)[1])
        if head.startswith("http/1.1 100"):
            pos = end + 4
            continue
        if len(buf) < end + 4 + cl and not head.startswith("http/1.1 304") and " 204 " not in head[:13]:
            return n
        pos = end + 4 + cl
        n += 1
for line in open(sys.argv[2], encoding="latin-1"):
    req = line.rstrip("\n").encode("latin-1").decode("unicode_escape").encode("latin-1")
    want = max(1, req.count(b"HTTP/1."))
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(req)
    s.settimeout(5)
    out, closed = b"", False
    try:
        while True:
            if complete(out) >= want:
                s.settimeout(0.5)
            b = s.recv(65536)
            if not b:
                closed = True
                break
            out += b
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    sys.stdout.write(out.decode("latin-1"))
    if closed:
        sys.stdout.write("\n<closed>")
    sys.stdout.write("\n<end>\n")
PY
}

# lcache_hits PATH: listings of PATH answered from the listing cache so
# far (the error log says so, at debug level, written once a second)
lcache_hits() { grep -c "listing of $1 from the cache" "$T/err.log"; }
# lcache_hits_reach PATH N: waits (at most 5 s) for N of them; prints
# the count
lcache_hits_reach() {
	local i
	for i in $(seq 1 50); do
		[ "$(lcache_hits "$1")" -ge "$2" ] && break
		sleep 0.1
	done
	lcache_hits "$1"
}

# mounts_still N FN...: runs FN, which starts and stops its own daemon
# with its error log at debug level in $T/err.log (emptied first), up
# to N times while that log says the mount table changed meanwhile:
# another test mounting a file system empties every cache, which a test
# of what the caches hold cannot tell from a bug. The checks of the
# first try that saw no mount change, or of the last, count.
mounts_still() {
	local n=$1 try saved=$fails
	shift
	for try in $(seq 1 "$n"); do
		fails=$saved
		"$@" > "$T/try.out"
		grep -q 'caches emptied: the mount table changed' "$T/err.log" || break
		[ "$try" = "$n" ] || echo "# try $try: the mount table changed meanwhile; again"
	done
	cat "$T/try.out"
}

# wait_for FILE REGEX [TENTHS]: FILE matches within TENTHS tenths of a
# second (default 50; logs are written by the log thread, which flushes
# once a second)
wait_for() {
	local i
	for i in $(seq 1 "${3:-50}"); do
		grep -aEq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# check_log NAME FILE REGEX: a log of the running daemon comes to match
# REGEX (within wait_for's bound; its writer is a thread of its own).
check_log() {
	wait_for "$2" "$3"
	check_match "$1" "$3" "$(cat "$2" 2>/dev/null)"
}

# log_line PATTERN: the last line of $T/access.log matching PATTERN,
# waiting (10 s at most) for the daemon's once-a-second flush.
log_line() {
	local i
	for i in $(seq 1 40); do
		if grep -q -- "$1" "$T/access.log" 2>/dev/null; then
			grep -- "$1" "$T/access.log" | tail -n1
			return
		fi
		sleep 0.25
	done
}

# need_root_nobody: skips (77) unless run as root with a user nobody to
# switch to.
need_root_nobody() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
	id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
}

# raw_status BYTES: the status code of the first response to BYTES.
raw_status() {
	raw "$1" | head -n1 | awk '{print $2}'
}

run_backends() {
	local be
	for be in default threads; do
		echo "# backend: $be"
		if [ "$be" = default ]; then unset FIBRIL_BACKEND; else export FIBRIL_BACKEND=$be; fi
		"$@"
		if [ "$be" = threads ]; then
			check_match "async backend is threads" "backend threads" \
				"$(cat "$T"/*.log "$T/daemon.err" 2>/dev/null | grep -m1 backend)"
		fi
		stop_daemon
		if [ -s "$T/daemon.err" ] && grep -q "\[error\]" "$T/daemon.err"; then
			echo "# daemon error log:"; sed 's/^/#   /' "$T/daemon.err"
		fi
	done
	echo "# $fails failed"
	[ "$fails" = 0 ]
}
