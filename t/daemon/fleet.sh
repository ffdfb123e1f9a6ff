# A fleet: HAProxy with contrib/haproxy/haproxy.cfg (TLS and HTTP/2 at
# HAProxy, checks, retries, redispatch) in front of three fileserverd,
# each in a network namespace of its own joined to the test's by a veth
# pair (as on three hosts, one port), each serving its own copy of one
# tree (cp -a: replicated storage, other inodes). Without network
# namespaces (not root, no iproute2) the nodes listen on 127.0.0.11-13
# instead, and the log says so. wrk loads the fleet through HAProxy over
# HTTPS for 6 s while one node gets SIGTERM and another SIGKILL: no
# request fails with a 5xx, a download from the node stopped finishes
# (it drains), conditional requests get 304 from every node (etag =
# mtime-size), and the survivor's request count (its status listener's
# /metrics) is what HAProxy says it answered.
. "$top_srcdir/t/daemon/lib.sh"
need haproxy wrk openssl

CFG=$top_srcdir/contrib/haproxy/haproxy.cfg
D=$T/root
mkdir -p "$D/d"
for i in 1 2 3 4; do
	head -c $((1000 * i)) /dev/urandom | base64 > "$D/f$i.txt"
done
{ echo "conditional file"; head -c 3000 /dev/urandom | base64; } > "$D/cond.txt"
echo x > "$D/d/a"
for n in 1 2 3; do cp -a "$D" "$T/root-$n"; done
# only n2 has it: more than the socket buffers between n2, HAProxy and
# the client hold, so that n2 is still sending when it is stopped
head -c 32M /dev/urandom > "$T/root-2/big.bin"
chmod -R a+rX "$T"

# TLS: a self-signed certificate for 127.0.0.1 and localhost
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	-keyout "$T/key.pem" -out "$T/cert.pem" >/dev/null 2>&1 ||
	{ echo "openssl req failed"; exit 99; }
cat "$T/cert.pem" "$T/key.pem" > "$T/site.pem"

# The nodes' network. Each node gets a namespace and a veth pair whose
# two ends share a /30 of 10.213.X.0/24, X a /24 nothing here uses yet
# (chosen under a lock, so that two runs take two): the node at .4n+2,
# this namespace at .4n+1. Nothing routes further, so the load stays
# on these links. Names carry this run's own tag.
ADDR=() NS=() NETNS=() HOSTIF=()
TAG=$(printf '%04x%x' "$RANDOM" "$$")
net_down() {
	local ns h
	for ns in "${NETNS[@]}"; do ip netns del "$ns" 2>/dev/null; done
	# (deleting a namespace takes its end of the pair, and so the pair)
	for h in "${HOSTIF[@]}"; do ip link del "$h" 2>/dev/null; done
	NETNS=() HOSTIF=()
}
# net_up: 0 with ADDR and NS set, or 1 (and nothing left behind)
net_up() {
	local x="" try n ns h
	[ "$(id -u)" = 0 ] && command -v ip >/dev/null || return 1
	exec 9>"${TMPDIR:-/tmp}/fsd-fleet-net.lock"
	flock -w 20 9 || { echo "no lock on the choice of addresses" > "$T/netns.err"; return 1; }
	for try in $(seq 1 50); do
		x=$((1 + RANDOM % 254))
		[ -z "$(ip -4 -o addr show to "10.213.$x.0/24" 2>/dev/null)$(ip -4 route show root "10.213.$x.0/24" 2>/dev/null)" ] && break
		x=""
	done
	[ -n "$x" ] || { echo "no free /24 in 10.213.0.0/16" > "$T/netns.err"; exec 9>&-; return 1; }
	for n in 1 2 3; do
		ns=fsd-fleet-$TAG-$n h=f${TAG}h$n
		ip netns add "$ns" 2>"$T/netns.err" || break
		NETNS+=("$ns")
		ip link add "$h" type veth peer name "f${TAG}n$n" netns "$ns" 2>"$T/netns.err" || break
		HOSTIF+=("$h")
		ip addr add "10.213.$x.$((4 * n + 1))/30" dev "$h" 2>"$T/netns.err" &&
			ip link set "$h" up &&
			ip -n "$ns" addr add "10.213.$x.$((4 * n + 2))/30" dev "f${TAG}n$n" &&
			ip -n "$ns" link set "f${TAG}n$n" up &&
			ip -n "$ns" link set lo up || break
		ADDR[$n]=10.213.$x.$((4 * n + 2)) NS[$n]=$ns
	done
	exec 9>&-
	[ "${#NS[@]}" = 3 ] && return 0
	net_down
	ADDR=() NS=()
	return 1
}
HPID=
declare -A NPID
eval "lib_$(declare -f cleanup)"
cleanup() {
	local p
	for p in $HPID "${NPID[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	net_down
	lib_cleanup
}
if net_up; then
	echo "# nodes in network namespaces ${NS[*]}: ${ADDR[*]}"
	# a namespace of its own per node: every port is free there
	P=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	S=$((P == 65535 ? P - 1 : P + 1))
else
	why=$(head -n1 "$T/netns.err" 2>/dev/null)
	echo "# network namespaces not usable (${why:-not root, or no ip from iproute2}):" \
		"the nodes on loopback, 127.0.0.11-13"
	ADDR=([1]=127.0.0.11 [2]=127.0.0.12 [3]=127.0.0.13)
	P=$(free_port "${ADDR[@]}") && S=$(free_port "${ADDR[@]}") || { echo "no free ports"; exit 99; }
fi
H=$(free_port 127.0.0.1) && R=$(free_port 127.0.0.1) && ST=$(free_port 127.0.0.1) ||
	{ echo "no free ports"; exit 99; }

# node_conf N
node_conf() {
	{
		printf '[server]\nroot = %s\nlisten = %s:%s\netag = mtime-size\n' \
			"$T/root-$1" "${ADDR[$1]}" "$P"
		echo "max_connections_per_ip = 0"
		echo "status_listen = ${ADDR[$1]}:$S"
		# SIGTERM drains: what is in progress finishes first
		echo "shutdown_timeout = 20"
	} > "$T/node-$1.conf"
}
# start_node N: in its namespace (ip netns exec execs: $! is the daemon)
start_node() {
	local i in=()
	[ -n "${NS[$1]:-}" ] && in=(ip netns exec "${NS[$1]}")
	"${in[@]}" "$FSD" -c "$T/node-$1.conf" >"$T/node-$1.out" 2>"$T/node-$1.err" &
	NPID[$1]=$!
	for i in $(seq 1 100); do
		curl -s -o /dev/null --max-time 1 "http://${ADDR[$1]}:$P/.fsd-probe" && return 0
		sleep 0.05
	done
	cat "$T/node-$1.err"
	echo "could not start node $1 (${ADDR[$1]})"
	exit 99
}

# The shipped configuration, with this test's addresses.
start_haproxy() {
	local i
	FSD_HAPROXY_LOG=stdout FSD_HAPROXY_SOCKET=$T/haproxy.sock \
	FSD_TLS_CERT=$T/site.pem FSD_HTTPS_BIND=127.0.0.1:$H FSD_HTTP_BIND=127.0.0.1:$R \
	FSD_STATS_BIND=127.0.0.1:$ST FSD_CHECK_PORT=$S \
	FSD_NODE1=${ADDR[1]}:$P FSD_NODE2=${ADDR[2]}:$P FSD_NODE3=${ADDR[3]}:$P \
		haproxy -n 2000 -db -f "$CFG" >"$T/haproxy.out" 2>&1 &
	HPID=$!
	# every node up by its health check
	for i in $(seq 1 100); do
		[ "$(hp_stat fsd | awk -F, '$2 ~ /^n[123]$/ && $18 == "UP"' | wc -l)" = 3 ] && return 0
		kill -0 "$HPID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$T/haproxy.out"
	echo "HAProxy did not come up"
	exit 99
}
# hp_cli COMMAND: HAProxy's runtime API
hp_cli() {
	python3 - "$T/haproxy.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
PY
}
# hp_stat PROXY: the "show stat" CSV lines of PROXY
hp_stat() {
	hp_cli "show stat" 2>/dev/null | grep "^$1,"
}
# hp_field PROXY SERVER COLUMN-NAME
hp_field() {
	hp_cli "show stat" | awk -F, -v p="$1" -v s="$2" -v c="$3" '
		NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == p && $2 == s { v = $col[c]; print v == "" ? 0 : v }'
}
# hp_answered SERVER: the responses HAProxy had from SERVER
hp_answered() {
	local k n=0
	for k in 1xx 2xx 3xx 4xx 5xx other; do
		n=$((n + $(hp_field fsd "$1" "hrsp_$k")))
	done
	echo "$n"
}

HTTPS=https://127.0.0.1:$H
# etag URL: the ETag header
etag() {
	curl -sk -o /dev/null -D - "$1" | tr -d '\r' | awk -F': ' 'tolower($1) == "etag" { print $2 }'
}

# wrk's script: five files; counts statuses over all threads. (No
# conditional request: a 304 carries the 200's Content-Length, and
# wrk's parser, against RFC 9112 6.3, waits for a body after it; the
# 304s are checked with curl before and after the load.)
cat > "$T/fleet.lua" <<'LUA'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
	statuses, n = {}, 0
end
function request()
	n = n + 1
	if n % 5 == 0 then
		return wrk.format("GET", "/cond.txt")
	end
	return wrk.format("GET", "/f" .. (n % 5) .. ".txt")
end
function response(status, headers, body)
	statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency, requests)
	local tot = {}
	for _, t in ipairs(threads) do
		for k, v in pairs(t:get("statuses")) do tot[k] = (tot[k] or 0) + v end
	end
	for k, v in pairs(tot) do io.write(string.format("status %d %d\n", k, v)) end
	io.write(string.format("requests %d\n", summary.requests))
	local e = summary.errors
	io.write(string.format("errors %d %d %d %d\n", e.connect, e.read, e.write, e.timeout))
end
LUA

# sum_metric URL: the node's request count from its /metrics (every
# sample of fileserverd_requests_total, whatever its labels)
sum_metric() {
	curl -s --max-time 2 "$1" | awk '/^fileserverd_requests_total[{ ]/ { s += $NF } END { printf "%d\n", s }'
}

checks() {
	local n
	for n in 1 2 3; do node_conf "$n"; start_node "$n"; done
	if [ -n "${NS[1]:-}" ]; then
		for n in 1 2 3; do
			check "node n$n: fileserverd in a network namespace of its own" \
				"fileserverd ${NS[$n]}" \
				"$(basename "$(readlink "/proc/${NPID[$n]}/exe")") $(ip netns identify "${NPID[$n]}")"
			check "node n$n: its address is not one of this namespace" "" \
				"$(ip -4 -o addr show to "${ADDR[$n]}/32")"
		done
	fi
	start_haproxy

	# TLS and HTTP/2 end at HAProxy; plain HTTP redirects
	check "HTTPS through HAProxy over HTTP/2" "2 200" \
		"$(curl -sk --http2 -o /dev/null -w '%{http_version} %{http_code}' "$HTTPS/f1.txt")"
	check "the body through HAProxy" "$(cat "$D/f1.txt")" "$(curl -sk "$HTTPS/f1.txt")"
	check "HTTP/1.1 over TLS too" "1.1 200" \
		"$(curl -sk --http1.1 -o /dev/null -w '%{http_version} %{http_code}' "$HTTPS/f1.txt")"
	check "plain HTTP -> 301 to https" "301 https://127.0.0.1:$R/f1.txt" \
		"$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://127.0.0.1:$R/f1.txt")"
	check "TLS 1.2 accepted" 200 \
		"$(curl -sk --tlsv1.2 --tls-max 1.2 -o /dev/null -w '%{http_code}' "$HTTPS/f1.txt")"
	check "TLS 1.3 accepted" 200 \
		"$(curl -sk --tlsv1.3 -o /dev/null -w '%{http_code}' "$HTTPS/f1.txt")"
	# the client's own floor lowered, so that the refusal is HAProxy's
	check_match "TLS 1.1 refused by HAProxy" "alert protocol version" \
		"$(openssl s_client -connect "127.0.0.1:$H" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' \
			</dev/null 2>&1)"

	# one validator for the whole fleet
	local et
	et=$(etag "$HTTPS/cond.txt")
	check_match "an ETag through HAProxy" '^"[0-9a-f]+-[0-9a-f]+"$' "$et"
	for n in 1 2 3; do
		check "node n$n: the fleet's tag -> 304" 304 \
			"$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $et" "http://${ADDR[$n]}:$P/cond.txt")"
	done
	local codes="" i
	for i in $(seq 1 9); do
		codes="$codes$(curl -sk -o /dev/null -w '%{http_code} ' -H "If-None-Match: $et" "$HTTPS/cond.txt")"
	done
	check "9 conditional requests through HAProxy -> 304" \
		"304 304 304 304 304 304 304 304 304 " "$codes"
	for n in 1 2 3; do
		check_match "node n$n answered some of them" '^[1-9]' \
			"$(hp_field fsd "n$n" hrsp_3xx)"
	done

	# a download in progress on n2 (the others set aside while it
	# starts) must finish although n2 is stopped in the middle of it
	hp_cli "disable server fsd/n1" >/dev/null
	hp_cli "disable server fsd/n3" >/dev/null
	curl -sk --limit-rate 4M -o "$T/big.got" "$HTTPS/big.bin" &
	local dl=$!
	for i in $(seq 1 100); do
		[ -s "$T/big.got" ] && break
		sleep 0.05
	done
	hp_cli "enable server fsd/n1" >/dev/null
	hp_cli "enable server fsd/n3" >/dev/null

	# load, and two nodes lost under it. n1, which stays, leaves its
	# health to the other nodes' fate from here: its count of requests
	# is then only what HAProxy forwarded, and the scrapes.
	local before_fe n1_before n1_hp_before
	hp_cli "disable health fsd/n1" >/dev/null
	sleep 0.2       # a check in flight lands
	n1_before=$(sum_metric "http://${ADDR[1]}:$S/metrics")
	n1_hp_before=$(hp_answered n1)
	before_fe=$(hp_field www FRONTEND req_tot)
	timeout 30 wrk -t2 -c12 -d6s --timeout 10s -s "$T/fleet.lua" "$HTTPS/" \
		>"$T/wrk.out" 2>&1 &
	local wpid=$! rc
	sleep 1.5
	local killed_at_term
	killed_at_term=$(sum_metric "http://${ADDR[2]}:$S/metrics")
	kill -TERM "${NPID[2]}"
	sleep 1.5
	kill -KILL "${NPID[3]}"
	wait "$wpid"
	rc=$?
	check "wrk ran to its end" 0 "$rc"
	wait "${NPID[2]}"
	check "the node stopped by SIGTERM exits 0" 0 "$?"
	wait "$dl"
	check "a download from the drained node through HAProxy: complete" 0 "$?"
	check "... and byte for byte" same \
		"$(cmp -s "$T/root-2/big.bin" "$T/big.got" && echo same)"
	{ wait "${NPID[3]}"; } 2>/dev/null
	unset 'NPID[2]' 'NPID[3]'
	sed 's/^/# wrk: /' "$T/wrk.out" | grep -E 'status|requests|errors|Requests/sec'

	local total s5 other
	total=$(awk '$1 == "requests" { print $2 }' "$T/wrk.out")
	s5=$(awk '$1 == "status" && $2 >= 500 { s += $3 } END { print s + 0 }' "$T/wrk.out")
	other=$(awk '$1 == "status" && $2 != 200 { s += $3 } END { print s + 0 }' "$T/wrk.out")
	check_match "wrk made requests" '^[1-9][0-9]+$' "$total"
	check "no 5xx through HAProxy" 0 "$s5"
	check "nothing but 200" 0 "$other"
	# a request in flight on the killed node when its connection broke
	# after part of the answer cannot be replayed: at most one per
	# connection (wrk's timeouts only count answers slower than 10 s)
	local rerr
	rerr=$(awk '$1 == "errors" { print $2 + $3 + $4 }' "$T/wrk.out")
	check_match "at most one broken response per wrk connection ($rerr)" '^([0-9]|1[0-2])$' "$rerr"
	check "HAProxy's 5xx to clients" 0 "$(hp_field www FRONTEND hrsp_5xx)"
	echo "# HAProxy: retries $(hp_field fsd BACKEND wretr), redispatches $(hp_field fsd BACKEND wredis)"

	# the survivor still validates the fleet's tag, directly and through
	# HAProxy
	check "n1 after the load: the fleet's tag -> 304" 304 \
		"$(curl -sk -o /dev/null -w '%{http_code}' -H "If-None-Match: $et" "$HTTPS/cond.txt")"

	# what HAProxy forwarded, and what wrk sent, seen by the nodes
	# wrk counts the answers it read: those in flight at its end (at
	# most one per connection) reached HAProxy too
	local fe
	fe=$(($(hp_field www FRONTEND req_tot) - before_fe - 1))
	check "HAProxy received what wrk sent ($total <= $fe <= $total + 12)" 1 \
		"$([ "$fe" -ge "$total" ] && [ "$fe" -le $((total + 12)) ] && echo 1)"
	local got answered
	got=$(($(sum_metric "http://${ADDR[1]}:$S/metrics") - n1_before))
	answered=$(($(hp_answered n1) - n1_hp_before))
	# and the first scrape, counted once it was answered
	check "n1 counted every request HAProxy had it answer ($answered)" \
		$((answered + 1)) "$got"
	echo "# n2 had counted $killed_at_term before SIGTERM; n3's count died with it"
	check "n2 and n3 out of the rotation" "n2 DOWN n3 DOWN " \
		"$(hp_stat fsd | awk -F, '$2 == "n2" || $2 == "n3" { printf "%s %s ", $2, $18 }')"

	kill "$HPID"
	wait "$HPID" 2>/dev/null
	HPID=
	kill "${NPID[1]}"
	wait "${NPID[1]}"
	check "n1 exits 0 on SIGTERM" 0 "$?"
	unset 'NPID[1]'
	cat "$T"/node-*.err > "$T/daemon.err"
}

run_backends checks
