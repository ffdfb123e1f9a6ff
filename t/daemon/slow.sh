# A slow file system (slowfs: FUSE, every metadata op delayed) under
# part of the root: a request waiting on it never holds up the others on
# the same worker; past request_timeout it gets 503 and its calls are
# cancelled; a stop does not wait for it.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"
slow_test  # delayed file system and timeouts by design

D=$T/root
mkdir -p "$D/slow" "$T/back/sub"
printf 'fast\n' > "$D/fast.txt"
printf 'slow data\n' > "$T/back/sub/file.txt"
for i in $(seq 1 20); do printf '%s\n' "$i" > "$T/back/f$i"; done

MNT=
umount_slow() {
	[ -n "$MNT" ] && slowfs_umount "$MNT" "$SLOWFS_PID"
	MNT=
}
mount_slow() { # delay-ms
	umount_slow
	slowfs_mount --delay-ms "$1" -o max_threads=64 "$T/back" "$D/slow"
	local rc=$?
	[ $rc = 77 ] && { echo "SKIP: cannot mount slowfs"; exit 77; }
	[ $rc = 0 ] || { echo "slowfs_mount failed"; exit 99; }
	MNT=$D/slow
}
trap 'umount_slow; cleanup' EXIT

checks() {
	# 1. other requests are served while one waits on the slow fs
	mount_slow 800
	printf '[server]\nroot = %s\nrequest_timeout = 30\n' "$D" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	rm -f "$T/slow.done"
	( curl -s -o "$T/slow.body" "$URL/slow/sub/file.txt"; touch "$T/slow.done" ) &
	local bg=$!
	sleep 0.2
	local i fastok=0
	for i in 1 2 3 4 5; do
		[ "$(curl -s "$URL/fast.txt")" = fast ] && fastok=$((fastok + 1))
	done
	check "5 fast requests answered while the slow one waits" 5 "$fastok"
	check "the slow request is still pending meanwhile" no "$([ -e "$T/slow.done" ] && echo yes || echo no)"
	wait "$bg"
	check "slow request completes, byte-exact" "slow data" "$(cat "$T/slow.body")"
	stop_daemon

	# 2. request_timeout: 503 + Retry-After, and the daemon goes on
	mount_slow 2500
	rm -f "$T/err.log"
	printf '[server]\nroot = %s\nrequest_timeout = 1\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	local h
	h=$(curl -s -D - -o /dev/null --max-time 20 "$URL/slow/f1" | tr -d '\r')
	check_match "503 after request_timeout" "^HTTP/1.1 503" "$h"
	check_match "503 has Retry-After" "Retry-After: " "$h"
	check "still serving after the timeout" fast "$(curl -s "$URL/fast.txt")"
	check_match "abandoned request logged" "abandoned" "$(cat "$T/err.log")"

	# 3. SIGTERM while a request waits: the client gets an answer or a
	# close, and the daemon exits 0 without waiting for the slow fs
	( curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$URL/slow/f2" > "$T/stop.code" ) &
	bg=$!
	sleep 0.3
	stop_daemon
	wait "$bg"
	check_match "pending request answered 503 (or closed) at stop" "^(503|000)$" "$(cat "$T/stop.code")"
	umount_slow
}

run_backends checks
