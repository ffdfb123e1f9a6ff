# Limits that hold against hostile clients: a request head must arrive
# within header_timeout however it is trickled; at max_connections and
# max_connections_per_ip a client gets an immediate, logged 503; a
# client taking a response slower than min_send_rate is disconnected;
# 1,000 slowloris connections (slowhttptest) from one address do not
# keep a client of another address from being served; a port in use
# fails start-up; root without `user` is warned about.
. "$top_srcdir/t/daemon/lib.sh"
need slowhttptest
CLIENT="python3 $top_srcdir/t/daemon/limits_client.py"

D=$T/root
mkdir -p "$D"
printf 'hello\n' > "$D/a.txt"
head -c 8388608 /dev/zero > "$D/big.bin"

# conf KEY=VALUE...: a [server] section with root and error log.
conf() {
	{
		printf '[server]\nroot = %s\nerror_log = %s\n' "$D" "$T/err.log"
		for kv in "$@"; do printf '%s\n' "${kv/=/ = }"; done
	} > "$T/c.conf"
	: > "$T/err.log"
}
# trickle_bg OUT N SECONDS [SRC]: starts trickling clients, waits until
# they are connected.
trickle_bg() {
	rm -f "$T/$1.ready"
	$CLIENT trickle "$PORT" "$2" "$3" "${4:-127.0.0.1}" > "$T/$1" 2> "$T/$1.ready" &
	TPID=$!
	local i
	for i in $(seq 1 100); do
		grep -q ready "$T/$1.ready" 2>/dev/null && return 0
		sleep 0.1
	done
}

checks() {
	# 1. The whole head within header_timeout: one byte every 0.5 s
	# resets an idle timeout (connection_timeout) for ever.
	conf header_timeout=3 connection_timeout=10
	start_daemon -c "$T/c.conf"
	trickle_bg tr1 1 12
	wait "$TPID"
	local r
	r=$(cat "$T/tr1")
	check_match "trickled head cut off after header_timeout, with 408" \
		'^closed ([3-9]|1[01])\.[0-9] HTTP/1.1 408' "$r"
	check_log "head timeout logged" "$T/err.log" "no complete request head within 3s"
	stop_daemon

	# 2. At max_connections a new client gets 503 at once, and is
	# served once the trickling ones are cut off.
	conf max_connections=16 max_connections_per_ip=0 header_timeout=3 connection_timeout=4
	start_daemon -c "$T/c.conf"
	trickle_bg tr2 16 10
	local h
	h=$(curl -s -D - -o /dev/null --max-time 2 "$URL/a.txt" | tr -d '\r')
	check_match "at max_connections: 503 at once" "^HTTP/1.1 503" "$h"
	check_match "... with Retry-After" "Retry-After: 1" "$h"
	local i got=
	for i in $(seq 1 16); do
		got=$(curl -s --max-time 1 "$URL/a.txt")
		[ "$got" = hello ] && break
		sleep 0.5
	done
	check "served again once the slow heads are cut off" hello "$got"
	wait "$TPID"
	check_log "refusal at max_connections logged" "$T/err.log" \
		"refused [0-9]+ connections? with 503: 16 connections per worker"
	stop_daemon

	# 3. max_connections_per_ip: the 9th connection of one address is
	# refused, another address is served.
	conf max_connections_per_ip=8 header_timeout=30
	start_daemon -c "$T/c.conf"
	trickle_bg tr3 8 4
	check "9th connection of 127.0.0.1 refused" 503 "$(code /a.txt --max-time 2)"
	check "127.0.0.2 served meanwhile" 200 "$(code /a.txt --max-time 2 --interface 127.0.0.2)"
	wait "$TPID"
	check_log "per-address refusal logged" "$T/err.log" \
		"refused 1 connection with 503: 8 connections per client address reached \(127.0.0.1\)"
	stop_daemon

	# 4. min_send_rate: a client reading 2 KB/s is cut off once the
	# response is header_timeout old; connection_timeout (an idle
	# timeout, restarted by every write) would hold it for 30 s.
	conf min_send_rate=64k header_timeout=2 connection_timeout=30
	start_daemon -c "$T/c.conf"
	r=$($CLIENT slowread "$PORT" /big.bin 12 2048)
	check_match "slow reader disconnected" '^closed ([2-9]|1[01])\.' "$r"
	check_log "slow reader logged" "$T/err.log" "response taken slower than 65536 bytes/s"
	r=$($CLIENT slowread "$PORT" /big.bin 12 100000000)
	check_match "a fast reader gets all of it" "^complete 83888" "$r"
	stop_daemon

	# 5. slowhttptest -H with the defaults: 1,000 slow heads from
	# 127.0.0.1 (256 admitted, the rest refused, the 256 cut off after
	# header_timeout); 127.0.0.2 is served throughout.
	conf
	start_daemon -c "$T/c.conf"
	timeout 30 slowhttptest -H -c 1000 -r 500 -i 1 -l 14 -x 10 -p 3 \
		-u "$URL/a.txt" > "$T/slowhttptest.out" 2>&1 &
	local sp=$! okc=0
	for i in 1 2 3; do
		sleep 3
		[ "$(code /a.txt --max-time 2 --interface 127.0.0.2)" = 200 ] && okc=$((okc + 1))
	done
	check "127.0.0.2 served during slowhttptest -H (3 of 3)" 3 "$okc"
	sleep 5
	check_log "slowloris refused beyond the per-address limit" "$T/err.log" \
		"256 connections per client address reached \(127.0.0.1\)"
	check_log "slowloris heads cut off after header_timeout" "$T/err.log" \
		"no complete request head within 10s"
	check "none of them left open at 13 s" 1 \
		"$(ss -tn state established "( sport = :$PORT )" | wc -l)"
	wait "$sp"
	stop_daemon

	# 6. A port in use fails start-up, whoever holds it.
	local pp=$((PORT + 1)) out rc
	python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(); print("up", flush=True); time.sleep(10)' \
		"$pp" > "$T/holder" &
	local hp=$!
	for i in $(seq 1 50); do grep -q up "$T/holder" && break; sleep 0.1; done
	out=$(timeout 10 "$FSD" -l "127.0.0.1:$pp" -r "$D" 2>&1 >/dev/null)
	rc=$?
	check "port held by another process: start-up fails" 1 "$rc"
	check_match "... with EADDRINUSE" "listen 127.0.0.1:$pp: Address already in use" "$out"
	kill "$hp"
	wait "$hp" 2>/dev/null
	conf
	start_daemon -c "$T/c.conf"
	out=$(timeout 10 "$FSD" -l "127.0.0.1:$PORT" -r "$D" 2>&1 >/dev/null)
	rc=$?
	check "port held by another fileserverd: start-up fails" 1 "$rc"
	check_match "... with EADDRINUSE" "Address already in use" "$out"
	check "the first one still serves" hello "$(curl -s "$URL/a.txt")"
	stop_daemon

	# 7. Root without `user`: warned about; user = nobody drops it
	# (a mode 000 file is then 403); user = root keeps it, silently.
	if [ "$(id -u)" = 0 ]; then
		chmod 755 "$D"
		printf 'secret\n' > "$D/secret.txt"
		chmod 000 "$D/secret.txt"
		conf
		start_daemon -c "$T/c.conf"
		check_log "root without user: warned" "$T/err.log" "running as root without 'user'"
		stop_daemon
		conf user=nobody
		start_daemon -c "$T/c.conf"
		check "user = nobody: mode 000 file is 403" 403 "$(code /secret.txt)"
		check "user = nobody: readable file is 200" 200 "$(code /a.txt)"
		stop_daemon
		conf user=root
		start_daemon -c "$T/c.conf"
		check "user = root: mode 000 file is 200" 200 "$(code /secret.txt)"
		stop_daemon
		# After the exit, when the log is surely written.
		check "user = root: no warning" "" "$(grep "without 'user'" "$T/err.log")"
		rm -f "$D/secret.txt"
	else
		echo "# not root: root checks skipped"
	fi
}

checks
echo "# $fails failed"
[ "$fails" = 0 ]
