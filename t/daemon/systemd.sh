# The systemd unit and the daemon's side of it: `systemd-analyze verify`
# accepts contrib/systemd/fileserverd.service without a warning (with
# the build's binary in its Exec lines and the man pages its
# Documentation= names); the daemon sends READY=1 over NOTIFY_SOCKET
# from its main process once the port answers, after switching user,
# RELOADING=1 then READY=1 around a good and a broken reload, and
# STOPPING=1 on SIGTERM; and it serves files, listings, ranges and
# log rotation on both async backends under the unit's SystemCallFilter=
# enforced with seccomp (a call outside it kills the daemon), HTTPS and
# a reload included.
. "$top_srcdir/t/daemon/lib.sh"
need systemd-analyze

UNIT=$top_srcdir/contrib/systemd/fileserverd.service
chmod 755 "$T"
D=$T/root
mkdir -p "$D/sub" "$T/unit" "$T/man/man8" "$T/man/man5"
chmod 755 "$D" "$D/sub"
printf 'hello\n' > "$D/a.txt"
printf 'x\n' > "$D/sub/b.txt"
head -c 3000000 /dev/urandom > "$D/big.bin"
chmod 644 "$D"/*.* "$D/sub/b.txt"

# --- the unit file ---
sed -e "s#/usr/local/sbin/fileserverd#$FSD#g" "$UNIT" > "$T/unit/fileserverd.service"
ln -s "$top_srcdir/man/fileserverd.8" "$T/man/man8/"
ln -s "$top_srcdir/man/fileserverd.conf.5" "$T/man/man5/"
out=$(MANPATH=$T/man systemd-analyze verify "$T/unit/fileserverd.service" 2>&1)
check "systemd-analyze verify: exit status" 0 "$?"
# verify exits 0 even for an unknown key or a value it cannot parse
check "systemd-analyze verify: no warning" "" "$out"
check "the unit's type is notify" 1 "$(grep -cx 'Type=notify' "$UNIT")"
check "the unit reloads with SIGHUP" 1 "$(grep -cx 'ExecReload=/bin/kill -HUP $MAINPID' "$UNIT")"
stop_s=$(sed -n 's/^TimeoutStopSec=//p' "$UNIT")
if [ "${stop_s:-0}" -gt 30 ] 2>/dev/null; then ok "TimeoutStopSec ($stop_s) above the default shutdown_timeout"
else not_ok "TimeoutStopSec '$stop_s' must exceed 30 s"; fi

# --- notifications ---
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then user=nobody; else user=; fi
printf '[server]\nroot = %s\n%s' "$D" "${user:+user = $user
}" > "$T/notify.conf"
python3 "$top_srcdir/t/daemon/notify_listen.py" "$T/notify.sock" "$T/daemon.out" 30 \
	> "$T/notify.log" 2>&1 &
LPID=$!
wait_for "$T/notify.log" '^listening' || not_ok "notify listener did not start"
NOTIFY_SOCKET=$T/notify.sock start_daemon -c "$T/notify.conf"
[ -n "$user" ] && check "daemon runs as $user" "$user" "$(ps -o user= -p "$DPID" | tr -d ' ')"
wait_for "$T/notify.log" '^probe ' || not_ok "no READY=1 within 5 s: $(cat "$T/notify.log")"
check "READY=1 once" 1 "$(grep -c "^msg [0-9]* READY=1$" "$T/notify.log")"
check "READY=1 from the main process" "$DPID" "$(awk '$3 == "READY=1" {print $2}' "$T/notify.log")"
check "the port answers when READY=1 arrives" "probe 404" "$(grep '^probe ' "$T/notify.log")"
check_match "STATUS= names the root" "^msg $DPID STATUS=serving $D with 1 worker$" \
	"$(grep STATUS= "$T/notify.log")"
check "no STOPPING=1 while serving" 0 "$(grep -c STOPPING=1 "$T/notify.log")"
# a reload that takes, then one with a broken file: RELOADING=1 (with
# the MONOTONIC_USEC= that Type=notify-reload wants), then READY=1 again
cp "$T/notify.conf" "$T/notify.conf.good"
kill -HUP "$DPID"
for i in $(seq 1 50); do
	[ "$(grep -c 'READY=1$' "$T/notify.log")" -ge 2 ] && break
	sleep 0.1
done
check_match "RELOADING=1 on SIGHUP, with MONOTONIC_USEC=" \
	"^msg $DPID RELOADING=1 msg $DPID MONOTONIC_USEC=[0-9]+ " \
	"$(grep -A1 RELOADING=1 "$T/notify.log" | tr '\n' ' ')"
check "READY=1 after the reload" 2 "$(grep -c "^msg $DPID READY=1$" "$T/notify.log")"
check_match "STATUS= after the reload" "^msg $DPID STATUS=serving $D with 1 worker$" \
	"$(grep STATUS= "$T/notify.log" | sed -n 2p)"
printf '[server]\nroot = %s\nbogus_key = 1\n' "$D" > "$T/notify.conf"
kill -HUP "$DPID"
for i in $(seq 1 50); do
	[ "$(grep -c 'READY=1$' "$T/notify.log")" -ge 3 ] && break
	sleep 0.1
done
check "READY=1 after a failed reload" 3 "$(grep -c "^msg $DPID READY=1$" "$T/notify.log")"
check_match "STATUS= says the reload failed" "^msg $DPID STATUS=reload failed: still serving $D" \
	"$(grep STATUS= "$T/notify.log" | sed -n 3p)"
check "still serving after a failed reload" 200 "$(code /a.txt)"
MAIN=$DPID
kill -TERM "$DPID"
wait "$DPID"
check "daemon exits 0 on SIGTERM" 0 "$?"
DPID=
wait "$LPID"
check "STOPPING=1 on SIGTERM, from the main process" "msg $MAIN STOPPING=1" \
	"$(grep STOPPING=1 "$T/notify.log")"

# --- under the unit's system call filter ---
L=$T/logs
mkdir -p "$L"
chmod 755 "$L"
printf '[server]\nroot = %s\n%saccess_log = %s\nerror_log = %s\nlog_level = info\n' \
	"$D" "${user:+user = $user
}" "$L/access.log" "$L/error.log" > "$T/filter.conf"
# HTTPS too (GnuTLS), with a key only root may read: through the root
# helper at a reload
need openssl
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-keyout "$T/tls.key" -out "$T/tls.crt" -days 2 -subj /CN=localhost \
	-addext subjectAltName=IP:127.0.0.1 2>"$T/openssl.err" || { cat "$T/openssl.err"; exit 99; }
chmod 600 "$T/tls.key"
printf 'ssl_certificate = %s\nssl_certificate_key = %s\n' "$T/tls.crt" "$T/tls.key" >> "$T/filter.conf"
printf '#!/bin/sh\nexec python3 "%s" "%s" "%s" "$@"\n' \
	"$top_srcdir/t/daemon/seccomp_exec.py" "$UNIT" "$FSD" > "$T/fsd-filtered"
chmod 755 "$T/fsd-filtered"
checks() {
	SPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	FSD=$T/fsd-filtered start_daemon -c "$T/filter.conf" -l "127.0.0.1:$SPORT ssl"
	check "file" hello "$(curl -s "$URL/a.txt")"
	check "file over HTTPS" hello "$(curl -s --cacert "$T/tls.crt" "https://127.0.0.1:$SPORT/a.txt")"
	check "listing" 200 "$(code /sub/)"
	check "big file, sendfile" "$(md5sum < "$D/big.bin")" "$(curl -s "$URL/big.bin" | md5sum)"
	check "range" 206 "$(code /big.bin -r 100-199)"
	check "missing" 404 "$(code /nope)"
	mv "$L/access.log" "$L/access.log.1"
	kill -USR1 "$DPID"
	for i in $(seq 1 50); do [ -e "$L/access.log" ] && break; sleep 0.1; done
	curl -s -o /dev/null "$URL/after-rotate"
	wait_for "$L/access.log" "GET /after-rotate " && ok "log reopened" ||
		not_ok "no new access log after SIGUSR1"
	kill -HUP "$DPID"
	wait_for "$L/error.log" "reloaded" || not_ok "no reload under the filter"
	check "file after a reload" hello "$(curl -s "$URL/a.txt")"
	check "file over HTTPS after a reload" hello \
		"$(curl -s --cacert "$T/tls.crt" "https://127.0.0.1:$SPORT/a.txt")"
	check "daemon alive under the filter" yes "$(kill -0 "$DPID" 2>/dev/null && echo yes)"
	if [ -z "${FIBRIL_BACKEND:-}" ]; then
		wait_for "$L/error.log" "backend" || true
		check_match "io_uring allowed by the filter" "async: backend uring" \
			"$(grep -m1 'async: backend' "$L/error.log")"
	fi
	cp "$L/error.log" "$T/daemon.err"
	rm -f "$L"/*
}
run_backends checks
