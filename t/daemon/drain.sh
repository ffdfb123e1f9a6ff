# A stop that drains: on SIGTERM the daemon refuses new connections,
# finishes a download in progress byte for byte and exits 0; with
# shutdown_timeout = 2 a longer download is cut and the exit is still 0;
# a second SIGTERM during the drain stops at once.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/daemon/reload_lib.sh"
need sha256sum

D=$T/root
mkdir -p "$D"
echo hi > "$D/hi.txt"
if quick; then size=24M; else size=100M; fi
head -c "$size" /dev/urandom > "$D/big"
want=$(sha256sum < "$D/big")

# conf PORT [extra line]
conf() {
	printf '[server]\nroot = %s\nlisten = 127.0.0.1:%s\n%s\n' "$D" "$1" "${2:-}" > "$T/c.conf"
}

checks() {
	local dl rc

	# the default shutdown_timeout (30 s) lets a ~5 s download finish
	conf "$(free_port)"
	start_conf "$T/c.conf" "$(sed -n 's/^listen = .*://p' "$T/c.conf")"
	curl -s --limit-rate 20M -o "$T/dl" "$URL/big" &
	dl=$!
	sleep 0.5
	kill -TERM "$DPID"
	sleep 0.3
	curl -s -o /dev/null --max-time 2 "$URL/hi.txt"
	check "draining: new connections refused" 7 "$?"
	wait "$dl"
	check "draining: download completes (curl exits 0)" 0 "$?"
	check "draining: byte for byte" "$want" "$(sha256sum < "$T/dl")"
	wait_exit 40
	check "draining: exit status 0" 0 "$RC"
	check_match "draining: logged" "SIGTERM: stopping" "$(cat "$T/daemon.err")"

	# shutdown_timeout = 2 cuts a download that would take ~20 s
	conf "$(free_port)" "shutdown_timeout = 2"
	start_conf "$T/c.conf" "$(sed -n 's/^listen = .*://p' "$T/c.conf")"
	curl -s --limit-rate 5M -o "$T/dl" "$URL/big" &
	dl=$!
	sleep 0.5
	kill -TERM "$DPID"
	wait_exit 15
	check "shutdown_timeout: exit status 0 (within 15 s)" 0 "$RC"
	wait "$dl"
	rc=$?
	check "shutdown_timeout: the download was cut" yes "$([ "$rc" != 0 ] && echo yes)"
	check_match "shutdown_timeout: cut logged" "connection.* cut: still busy after shutdown_timeout \(2s\)" \
		"$(cat "$T/daemon.err")"

	# a second SIGTERM stops at once, well before 30 s
	conf "$(free_port)"
	start_conf "$T/c.conf" "$(sed -n 's/^listen = .*://p' "$T/c.conf")"
	curl -s --limit-rate 5M -o "$T/dl" "$URL/big" &
	dl=$!
	sleep 0.5
	kill -TERM "$DPID"
	sleep 0.5
	kill -TERM "$DPID"
	wait_exit 10
	check "second SIGTERM: exit status 0 (within 10 s)" 0 "$RC"
	wait "$dl"
	check_match "second SIGTERM: logged" "SIGTERM again: stopping now" "$(cat "$T/daemon.err")"
}
run_backends checks
