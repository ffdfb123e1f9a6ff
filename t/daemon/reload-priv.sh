# A reload after the daemon has switched to nobody: what needs root goes
# through the root helper. A new access log in a root-owned directory is
# created (root's, 0640) and gets the lines; a new listen address below
# 1024 is bound and answers; a changed user is refused with a warning.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/daemon/reload_lib.sh"

need_root_nobody

chmod 755 "$T"
D=$T/root
L=$T/logs
mkdir -p "$D" "$L"
chmod 755 "$D" "$L"
echo hi > "$D/hi.txt"

# a free port below 1024 on loopback
low=$(free_low_port)
[ -n "$low" ] || { echo "SKIP: no free port below 1024"; exit 77; }

# conf PORT LOG [extra line]
conf() {
	printf '[server]\nroot = %s\nuser = nobody\nlisten = 127.0.0.1:%s\naccess_log = %s\n%s\n' \
		"$D" "$1" "$2" "${3:-}" > "$T/c.conf"
}

checks() {
	local p
	p=$(free_port)
	rm -f "$L"/*
	conf "$p" "$L/access.log"
	start_conf "$T/c.conf" "$p"
	check "runs as nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"

	conf "$p" "$L/other.log"
	reload
	curl -s -o /dev/null "$URL/hi.txt?after-reload"
	if wait_for "$L/other.log" 'GET /hi.txt\?after-reload '; then ok "new access log gets the lines"
	else not_ok "new access log: $(ls -l "$L" | tr '\n' ' '); $(tail -3 "$T/daemon.err")"; fi
	check "new access log is root's, 0640" "0 640" "$(stat -c '%u %a' "$L/other.log" 2>/dev/null)"
	check "old access log left behind" 0 "$(grep -c after-reload "$L/access.log")"

	conf "$p" "$L/other.log" "listen = 127.0.0.1:$low"
	reload
	check "port $low bound at a reload" 200 \
		"$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$low/hi.txt")"
	check "first address still served" 200 "$(code /hi.txt)"
	check "still nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"

	sed -i 's/^user = nobody/user = daemon/' "$T/c.conf"
	reload
	check_log "user change: warned" "$T/daemon.err" \
		"\[warning\] .*user and group take effect at a restart"
	check "user change: still nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"
	check "user change: still serving" 200 "$(code /hi.txt)"
}
run_backends checks
