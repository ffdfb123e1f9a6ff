# No client byte reaches a log as anything but text: a percent-encoded
# newline in a path that hits an unexpected errno (EIO from slowfs) must
# not forge a second error log line; raw ESC, DEL and bytes >= 0x80 in a
# request target logged at log_level = info are escaped (\xNN, a
# backslash doubled) in the error log exactly as in the access log.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

D=$T/root
mkdir -p "$D/fs" "$T/back"
printf 'hi\n' > "$D/a.txt"

MNT=
umount_eio() {
	[ -n "$MNT" ] && slowfs_umount "$MNT" "$SLOWFS_PID"
	MNT=
}
trap 'umount_eio; cleanup' EXIT
slowfs_mount --delay-ms 0 "$T/back" "$D/fs"
case $? in
0) MNT=$D/fs ;;
77) echo "# slowfs cannot be mounted: the EIO part is left out" ;;
*) echo "slowfs_mount failed"; exit 99 ;;
esac

# no_raw_controls NAME FILE: FILE has no byte < 0x20 but newline, no DEL
# and no byte >= 0x80
no_raw_controls() {
	if LC_ALL=C grep -aq '[^ -~]' "$2"; then
		not_ok "$1: raw control or 8-bit bytes: $(LC_ALL=C grep -an '[^ -~]' "$2" | cat -v)"
	else
		ok "$1"
	fi
}

checks() {
	rm -f "$T/err.log" "$T/acc.log"
	printf '[server]\nroot = %s\nerror_log = %s\naccess_log = %s\nlog_level = info\n' \
		"$D" "$T/err.log" "$T/acc.log" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	wait_for "$T/err.log" "started" || not_ok "start not logged"
	local before
	before=$(wc -l < "$T/err.log")

	if [ -n "$MNT" ]; then
		check "forged EIO path: 500" 500 \
			"$(code '/fs/nope%0a2026-12-04T00:00:00Z%20[error]%20FORGED.eio' --globoff)"
		if wait_for "$T/err.log" 'FORGED'; then
			check "EIO: one error line for one request" 1 "$(grep -ac 'FORGED' "$T/err.log")"
			check_match "EIO: the newline is \\x0a on the same line" \
				'\[error\] .*[ /]fs/nope\\x0a2026-12-04T00:00:00Z \[error\] FORGED\.eio: Input/output error$' \
				"$(grep -a 'FORGED' "$T/err.log")"
			check "EIO: no line starts with the forged time" 0 \
				"$(grep -ac '^2026-12-04T00:00:00Z' "$T/err.log")"
		else
			not_ok "EIO not logged: $(cat -v "$T/err.log")"
		fi
	fi

	# info: the request check logs the target; ESC, DEL, UTF-8 é, a
	# backslash and a quote, raw on the wire. A first request line like
	# this is refused before libmicrohttpd reads it (not HTTP); the same
	# line later on a kept-alive connection reaches the request check.
	check "raw ESC in a second request's target: 400" 400 \
		"$(raw 'GET /.probe HTTP/1.1\r\nHost: x\r\n\r\nGET /esc\x1b[31mRED\x7f\xc3\xa9\\"q HTTP/1.1\r\nHost: x\r\n\r\n' |
			grep -a '^HTTP/1' | sed -n 2p | awk '{print $2}')"
	if wait_for "$T/err.log" 'esc'; then
		check "info: one line for the request" 1 "$(grep -ac 'esc' "$T/err.log")"
		check_match "info: ESC DEL 8-bit and backslash escaped" \
			'\[info\] GET /esc\\x1b\[31mRED\\x7f\\xc3\\xa9\\\\"q: 400: ' \
			"$(grep -a 'esc' "$T/err.log")"
	else
		not_ok "info line not logged: $(cat -v "$T/err.log")"
	fi
	# a header value the server may log
	check "bare CR in a header: 400" 400 \
		"$(raw_status 'GET /cr HTTP/1.1\r\nHost: x\r\nX-A: 1\r2026-12-04T00:00:00Z [error] CR\r\n\r\n')"
	stop_daemon

	local expect=$((before + 3))
	[ -n "$MNT" ] || expect=$((before + 2))
	# + the stop lines ("signal 15: stopping", "stopped")
	check "error log: exactly the expected lines" $((expect + 2)) "$(wc -l < "$T/err.log")"
	check "error log: every line is ours" 0 \
		"$(grep -avEc '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z \[(emerg|alert|crit|error|warning|notice|info|debug)\] ' "$T/err.log")"
	no_raw_controls "error log: no raw control or 8-bit byte" "$T/err.log"
	no_raw_controls "access log: no raw control or 8-bit byte" "$T/acc.log"
	check_match "access log: the same escaping, quote escaped too" \
		'"GET /esc\\x1b\[31mRED\\x7f\\xc3\\xa9\\\\\\"q HTTP/1.1" 400 ' "$(cat "$T/acc.log")"
}

run_backends checks
