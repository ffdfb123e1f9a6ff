# Listing slots are not held by slow readers: once a streamed listing's
# client has shown itself slow, its scan runs to its end (the output
# past 256 KiB waits in an unlinked temporary file, and
# fileserverd_listings_spilled_total counts it), and its place in
# max_listings is given back then, not when the client is done.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/big"
python3 -c '
import os, sys
for i in range(20000):
    open(os.path.join(sys.argv[1], "entry-with-a-longish-name-%06d.txt" % i), "w").close()' "$D/big"
export TMPDIR=$T

checks() {
	# (no listing cache: every listing is a scan, streamed, in a slot)
	printf '[server]\nroot = %s\nmax_listings = 2\nerror_log = %s\nlisting_cache_bytes = 0\n' \
		"$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	LISTEN_FLAGS=status start_daemon -c "$T/c.conf"
	local spilled0
	spilled0=$(spilled)
	# 4 clients reading the 20,000-entry listing at 1 KB/s, one after
	# the other, all still reading when the last one starts.
	local i pids=
	for i in 1 2 3 4; do
		python3 "$top_srcdir/t/daemon/limits_client.py" slowread "$PORT" /big/ 6 1024 \
			> "$T/slow$i" &
		pids="$pids $!"
		sleep 0.5
	done
	check "a further listing meanwhile: 200" 200 "$(code /big/ --max-time 10)"
	check "and another, JSON" 200 "$(code '/big/?format=json' --max-time 10)"
	wait $pids
	for i in 1 2 3 4; do
		# (a 503 page would be complete at once)
		check_match "slow reader $i was admitted and kept reading" '^open [0-9]+' "$(cat "$T/slow$i")"
	done
	check "a complete listing afterwards" 20000 \
		"$(curl -s "$URL/big/?format=ndjson" | grep -c entry-with)"
	local got=$(( $(spilled) - spilled0 ))
	check "each slow reader's listing went through the spill file" yes \
		"$( [ "$got" -ge 4 ] && echo yes || echo "no: $got")"
}

spilled() {
	curl -s "$URL/metrics" | awk '$1 == "fileserverd_listings_spilled_total" { print $2 }'
}

run_backends checks
