# /healthz answers 200 while the worker accepts and 503 once it drains:
# asked on a connection opened before SIGTERM, after a download that
# the drain lets finish.
. "$top_srcdir/t/daemon/lib.sh"
MC=$top_srcdir/t/daemon/metrics_check.py
D=$T/www
mkdir -p "$D"
BIG=$((16 * 1024 * 1024))
head -c $BIG /dev/urandom > "$D/big.bin"

# A stop that drains (shutdown_timeout) is what lets a request be
# answered after SIGTERM; without it the stop cuts every connection
# after a second and there is nothing to ask.
printf '[server]\nshutdown_timeout = 30\n' > "$T/drain.conf"
if ! "$FSD" -t -c "$T/drain.conf" >/dev/null 2>&1; then
	echo "SKIP: this build has no draining stop (shutdown_timeout)"
	exit 77
fi

checks() {
	local out rc
	LISTEN_FLAGS=status start_daemon -r "$D" -c "$T/drain.conf"
	out=$(python3 "$MC" drain "$URL" "$DPID" "$BIG")
	echo "$out"
	echo "$out" | grep -q "^not ok\|^cut" && fails=$((fails + 1))
	wait "$DPID"
	rc=$?
	DPID=
	check "daemon exits 0 after the drain" 0 "$rc"
}
run_backends checks
