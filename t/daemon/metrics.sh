# The status endpoints: /metrics (Prometheus text), /status (JSON) and
# /healthz on a status_listen listener and on a listener with the
# `status` flag; the counters move as requests are made; nothing of it
# when off.
. "$top_srcdir/t/daemon/lib.sh"
MC=$top_srcdir/t/daemon/metrics_check.py
D=$T/www
mkdir -p "$D/d"
for i in 1 2 3 4 5 6 7 8; do head -c $((i * 1000 + i)) /dev/urandom > "$D/f$i"; done
head -c 300000 /dev/urandom > "$D/f9-large"
echo cached > "$D/cached.txt"
head -c 300000 /dev/urandom > "$D/cached-large.bin"
echo a > "$D/d/a"
echo b > "$D/d/b"
printf 'the file named metrics\n' > "$D/metrics"


# ok_gets BASE: fileserverd_requests_total of GETs answered 2xx
ok_gets() {
	curl -s "$1/metrics" | awk '/^fileserverd_requests_total\{method="GET",status="2xx"\}/ { print $2 }'
}

out=$(python3 "$MC" selftest)
echo "$out"
echo "$out" | grep -q "^not ok" && fails=$((fails + 1))

checks() {
	local sp out
	# a status listener beside the files
	sp=$(free_port)
	printf '[server]\nstatus_listen = 127.0.0.1:%s\n' "$sp" > "$T/st.conf"
	start_daemon -c "$T/st.conf" -r "$D" -w 2
	out=$(python3 "$MC" counters "$URL" "http://127.0.0.1:$sp" "$D")
	echo "$out"
	echo "$out" | grep -q "^not ok" && fails=$((fails + 1))
	out=$(python3 "$MC" endpoints "http://127.0.0.1:$sp")
	echo "$out"
	echo "$out" | grep -q "^not ok" && fails=$((fails + 1))
	check "status_listen: a file path is 404" 404 \
		"$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$sp/f1")"
	check "status_listen: a listing path is 404" 404 \
		"$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$sp/d/")"
	check "files listener without the flag: /metrics is the file" \
		"the file named metrics" "$(curl -s "$URL/metrics")"
	check "files listener without the flag: /healthz is 404" 404 "$(code /healthz)"
	# a reload keeps the status listener and the counts
	local n0 n1
	n0=$(ok_gets "http://127.0.0.1:$sp")
	kill -HUP "$DPID"
	wait_for "$T/daemon.err" "reloaded" || not_ok "reload logged"
	curl -s -o /dev/null "$URL/f1"
	n1=$(ok_gets "http://127.0.0.1:$sp")
	check "reload: counters kept (GET 2xx $n0, then $n1)" yes \
		"$([ -n "$n1" ] && [ "$n1" -ge $((n0 + 1)) ] && echo yes)"
	stop_daemon

	# the flag on the files listener: the endpoints shadow files
	LISTEN_FLAGS=status start_daemon -r "$D"
	check_match "status flag: /metrics is the metrics" '^# HELP fileserverd_' \
		"$(curl -s "$URL/metrics" | head -1)"
	check "status flag: files still served" "$(cat "$D/cached.txt")" "$(curl -s "$URL/cached.txt")"
	out=$(python3 "$MC" endpoints "$URL")
	echo "$out"
	echo "$out" | grep -q "^not ok" && fails=$((fails + 1))
	stop_daemon

	# off by default
	start_daemon -r "$D"
	check "off: /metrics is the file" "the file named metrics" "$(curl -s "$URL/metrics")"
	check "off: /status is 404" 404 "$(code /status)"
	check "off: /healthz is 404" 404 "$(code /healthz)"
}
run_backends checks
