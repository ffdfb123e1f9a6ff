# loopback_sndbuf: a connection from this host gets that fixed send
# buffer (as the kernel reports it, within twice net.core.wmem_max); 0
# leaves the kernel's autotuning; a connection from another address
# (a network namespace joined by a veth pair) keeps the kernel's.
. "$top_srcdir/t/daemon/lib.sh"
need ss

D=$T/root
mkdir -p "$D"
head -c 4194304 /dev/urandom > "$D/big.bin"
wmem_max=$(cat /proc/sys/net/core/wmem_max)

# held ADDR PORT [PREFIX...]: fetches /big.bin twice on one connection
# and keeps it open for 2 s; prints the server side's send buffer (ss:
# tb) while it is open. PREFIX runs the client (e.g. in a namespace);
# ss runs here, where the server is, and picks the server's socket of
# this connection by both ports (another test's client may have been
# given PORT as its own ephemeral port).
held() {
	local addr=$1 port=$2
	shift 2
	rm -f "$T/cport"
	"$@" python3 -c '
import os, socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[3] + ".tmp", sys.argv[3])
for _ in range(2):
    s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    got, want = b"", None
    while want is None or len(got) < want:
        got += s.recv(1 << 20)
        if want is None and b"\r\n\r\n" in got:
            head, _, rest = got.partition(b"\r\n\r\n")
            n = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
            want, got = int(n[0].split(b":")[1]), rest
time.sleep(2)
' "$addr" "$port" "$T/cport" &
	local cpid=$! tb= cport=
	# (until the client has gone: on a loaded machine its start alone
	# can take longer than the 2 s it holds the connection)
	while kill -0 "$cpid" 2>/dev/null; do
		sleep 0.05
		[ -s "$T/cport" ] || continue
		cport=$(cat "$T/cport")
		tb=$(ss -tmnH state established "( sport = :$port and dport = :$cport )" |
			grep -o 'tb[0-9]*' | head -n1)
		[ -n "$tb" ] && break
	done
	wait "$cpid"
	echo "${tb#tb}"
}

expect() {   # the buffer a configured size gives under wmem_max
	local v=$(($1 / 2))
	[ "$v" -le "$wmem_max" ] || v=$wmem_max
	echo $((2 * v))
}

checks() {
	rm -f "$T/err.log"
	printf '[server]\nroot = %s\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	check "default: a loopback connection's send buffer is 1 MiB" \
		"$(expect 1048576)" "$(held 127.0.0.1 "$PORT")"
	stop_daemon

	printf 'loopback_sndbuf = 256k\n' >> "$T/c.conf"
	start_daemon -c "$T/c.conf"
	check "loopback_sndbuf = 256k gives 256 KiB" "$(expect 262144)" "$(held 127.0.0.1 "$PORT")"
	stop_daemon

	printf '[server]\nroot = %s\nerror_log = %s\nloopback_sndbuf = 0\n' "$D" "$T/err.log" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	tb=$(held 127.0.0.1 "$PORT")
	check "loopback_sndbuf = 0: the kernel's own buffer (got $tb)" yes \
		"$([ -n "$tb" ] && [ "$tb" != "$(expect 1048576)" ] && [ "$tb" != "$(expect 262144)" ] && echo yes)"
	stop_daemon
}
run_backends checks || true

# From another network: a namespace with a veth pair to this one.
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
	echo "# skipped: a connection from outside loopback needs root and ip"
	exit $((fails > 0))
fi
ns=fsdsb$$ h=sb$$h x=$(($$ % 250 + 1))
cleanup_ns() { ip link del "$h" 2>/dev/null; ip netns del "$ns" 2>/dev/null; cleanup; }
trap cleanup_ns EXIT
if ! { ip netns add "$ns" && ip link add "$h" type veth peer name sb$$n netns "$ns" &&
       ip addr add "10.214.$x.1/30" dev "$h" && ip link set "$h" up &&
       ip -n "$ns" addr add "10.214.$x.2/30" dev sb$$n && ip -n "$ns" link set sb$$n up &&
       ip -n "$ns" link set lo up; } 2>"$T/ns.err"; then
	echo "# skipped: no network namespace: $(head -n1 "$T/ns.err")"
	exit $((fails > 0))
fi
printf '[server]\nroot = %s\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"
P=$(free_port 127.0.0.1 "10.214.$x.1")
"$FSD" -c "$T/c.conf" -l "10.214.$x.1:$P" -l "127.0.0.1:$P" >"$T/daemon.out" 2>"$T/daemon.err" &
DPID=$!
for _ in $(seq 1 100); do
	curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$P/.fsd-probe" && break
	sleep 0.05
done
check "a loopback connection to the same daemon: 1 MiB" "$(expect 1048576)" "$(held 127.0.0.1 "$P")"
tb=$(held "10.214.$x.1" "$P" ip netns exec "$ns")
check "a connection from 10.214.$x.2 keeps the kernel's buffer (got $tb)" yes \
	"$([ -n "$tb" ] && [ "$tb" != "$(expect 1048576)" ] && echo yes)"
kill "$DPID"; wait "$DPID"; DPID=
echo "# $fails failed"
[ "$fails" = 0 ]
