# Log rotation with the daemon running as nobody and its logs in a
# root-owned directory nobody may not write: after the files are moved
# away, SIGUSR1 (and a reload, SIGHUP) make new files that receive the new lines;
# a reopen that fails (the new name is a symbolic link, the directory
# became writable by all) is reported on the old error log and standard
# error, and logging goes on in the old files. The shipped logrotate
# configuration, run by the real logrotate, rotates both logs.
. "$top_srcdir/t/daemon/lib.sh"

need_root_nobody

chmod 755 "$T"
D=$T/root
L=$T/logs
mkdir -p "$D" "$L"
chmod 755 "$D" "$L"
printf 'hi\n' > "$D/a.txt"
printf 'precious\n' > "$T/target"

# wait_exists FILE: FILE appears within 5 s
wait_exists() {
	local i
	for i in $(seq 1 50); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# rotated NAME SIGNAL N: moves both logs to *.N, sends SIGNAL, and checks
# that a request made afterwards lands in the new access log only.
rotated() {
	local name=$1 sig=$2 n=$3
	mv "$L/access.log" "$L/access.log.$n"
	mv "$L/error.log" "$L/error.log.$n"
	kill -"$sig" "$DPID"
	wait_exists "$L/access.log"
	curl -s -o /dev/null "$URL/after-$sig-$n"
	if wait_for "$L/access.log" "GET /after-$sig-$n "; then ok "$name: new access log gets new lines"
	else not_ok "$name: no new access log line ($(ls -l "$L" | tr '\n' ' '))"; fi
	check "$name: not in the rotated file" 0 "$(grep -c "after-$sig-$n" "$L/access.log.$n")"
	check "$name: new access log is root's" "0 640" "$(stat -c '%u %a' "$L/access.log" 2>/dev/null)"
	check "$name: daemon still runs" yes "$(kill -0 "$DPID" 2>/dev/null && echo yes)"
}

printf '[server]\nroot = %s\nuser = nobody\naccess_log = %s\nerror_log = %s\n' \
	"$D" "$L/access.log" "$L/error.log" > "$T/c.conf"
start_daemon -c "$T/c.conf"
check "runs as nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"
HELPER=$(ps -o pid= --ppid "$DPID" | tr -d ' ')
check "one helper, root's" "root" "$(ps -o user= -p "${HELPER:-0}" | tr -d ' ')"
curl -s -o /dev/null "$URL/a.txt"
wait_for "$L/access.log" 'GET /a.txt ' || not_ok "first line not logged"

rotated "SIGUSR1" USR1 1
rotated "SIGHUP" HUP 2
wait_for "$L/error.log" '\[notice\] logs reopened' && ok "new error log gets lines" ||
	not_ok "new error log: $(cat "$L/error.log.2" "$L/error.log" 2>/dev/null)"

# a failing reopen: the new name is a symbolic link
mv "$L/access.log" "$L/access.log.3"
ln -s "$T/target" "$L/access.log"
kill -USR1 "$DPID"
if wait_for "$L/error.log" "reopening access_log $L/access.log: is a symbolic link"; then
	ok "failed reopen reported in the error log"
else
	not_ok "failed reopen not in the error log: $(cat "$L/error.log")"
fi
wait_for "$T/daemon.err" "reopening access_log .*symbolic link" &&
	ok "failed reopen reported on standard error" || not_ok "not on standard error: $(cat "$T/daemon.err")"
curl -s -o /dev/null "$URL/after-failed"
wait_for "$L/access.log.3" 'GET /after-failed ' &&
	ok "failed reopen: lines go on in the old file" || not_ok "lost the line after a failed reopen"
check "failed reopen: target untouched" precious "$(cat "$T/target")"
rm -f "$L/access.log"

# both fail: the directory became writable by all; the error log's own
# failure is written to the old error log (still open) and stderr
mv "$L/access.log.3" "$L/access.log"
mv "$L/error.log" "$L/error.log.4"
chmod 777 "$L"
kill -USR1 "$DPID"
wait_for "$L/error.log.4" "reopening error_log $L/error.log: its directory .* writable by others" &&
	ok "error log failure reported in the old error log" ||
	not_ok "error log failure: $(cat "$L/error.log.4")"
check "nothing created in the open directory" no "$([ -e "$L/error.log" ] && echo yes || echo no)"
chmod 755 "$L"
mv "$L/error.log.4" "$L/error.log"

# the shipped logrotate file, on these paths, with this daemon's pid
if command -v logrotate >/dev/null 2>&1; then
	rm -f "$L"/*.log.*
	# only the postrotate command changes (and never reaches another
	# daemon): the pid of this one
	sed -e "s#/var/log/fileserverd/#$L/#" \
	    -e "/^\s*postrotate/,/^\s*endscript/{/postrotate\|endscript/!s#.*#\t\tkill -USR1 $DPID#}" \
		"$top_srcdir/contrib/logrotate/fileserverd" > "$T/logrotate.conf"
	if grep -q "kill -USR1 $DPID" "$T/logrotate.conf" &&
	   ! grep -q "pkill\|systemctl" "$T/logrotate.conf"; then
		logrotate -f -s "$T/logrotate.state" "$T/logrotate.conf" 2>"$T/logrotate.err"
	else
		not_ok "logrotate file: postrotate not replaced: $(cat "$T/logrotate.conf")"
		false
	fi
	check "logrotate exits 0" 0 "$?"
	check "logrotate: access log rotated" yes "$([ -s "$L/access.log.1" ] && echo yes)"
	curl -s -o /dev/null "$URL/after-logrotate"
	wait_for "$L/access.log" 'GET /after-logrotate ' &&
		ok "logrotate: new lines in the new access log" ||
		not_ok "logrotate: $(ls -l "$L" | tr '\n' ' '); $(cat "$T/logrotate.err")"
else
	echo "# logrotate not installed: the shipped configuration is not run"
fi

stop_daemon
check "helper gone with the daemon" no "$(kill -0 "${HELPER:-0}" 2>/dev/null && echo yes || echo no)"

echo "# $fails failed"
[ "$fails" = 0 ]
