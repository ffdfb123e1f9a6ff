# /healthz answers 200 while the worker accepts and 503 once it drains
# for a stop: asked, after SIGTERM, on connections accepted before it,
# while a slow download keeps the worker draining.
. "$top_srcdir/t/daemon/lib.sh"
MC=$top_srcdir/t/daemon/metrics_check.py
D=$T/www
mkdir -p "$D"
BIG=$((16 * 1024 * 1024))
head -c $BIG /dev/urandom > "$D/big.bin"

checks() {
	local out rc
	LISTEN_FLAGS=status start_daemon -r "$D"
	out=$(python3 "$MC" drain "$URL" "$DPID" "$BIG" "$T/daemon.err")
	echo "$out"
	echo "$out" | grep -q "^not ok" && fails=$((fails + 1))
	wait "$DPID"
	rc=$?
	DPID=
	check "daemon exits 0 after the stop" 0 "$rc"
}
run_backends checks
