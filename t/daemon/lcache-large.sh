# A large directory (its own size 256 KiB or more) is cached from its
# second listing with no name come or gone between: the first is a
# plain scan, the second fills the cache, the third comes from it. A
# name made or a file written in place is patched into it, no fill
# again; a change to the directory itself drops it and starts over.
# Every listing is the directory's. A mount anywhere empties every cache, so
# the checks are tried again when one came in between (mounts_still).
. "$top_srcdir/t/daemon/lib.sh"

LCK=$top_srcdir/t/daemon/lcache_check.py
D=$T/root
fresh() { python3 "$LCK" fresh "$URL/big/?format=ndjson" "$D/big"; }
kept() { grep -cE 'listing cache: a fill of [0-9]{3,} entries kept' "$T/err.log"; }
patched() { grep -c 'listing cache: [0-9]* events applied' "$T/err.log"; }
# settled: the log has caught up (a listing of small/ from the cache is
# the marker: the log is written in order)
settled() {
	local h
	h=$(lcache_hits /small/)
	curl -s -o /dev/null "$URL/small/"
	lcache_hits_reach /small/ $((h + 1)) > /dev/null
}

checks() {
	rm -rf "$D"
	mkdir -p "$D/big" "$D/small"
	echo a > "$D/small/a"
	local long i=0 n=0
	long=$(printf 'n%.0s' $(seq 1 200))
	while [ "$(stat -c %s "$D/big")" -lt 262144 ]; do
		for i in $(seq 1 100); do : > "$D/big/$long-$n-$i"; done
		n=$((n + 1))
	done
	local count
	count=$(ls "$D/big" | wc -l)
	printf '[server]\nroot = %s\nlog_level = debug\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"
	curl -s -o /dev/null "$URL/small/"

	check_match "first listing" "^ok $count\$" "$(fresh)"
	settled
	check "the first, a scan: no fill" 0 "$(kept)"
	check_match "second listing" "^ok $count\$" "$(fresh)"
	settled
	check "the second, unchanged, filled the cache" 1 "$(kept)"
	check_match "third listing" "^ok $count\$" "$(fresh)"
	check "the third came from the cache" 1 "$(lcache_hits_reach /big/ 1)"

	: > "$D/big/a-new-name"
	check_match "a name made: listed right" "^ok $((count + 1))\$" "$(fresh)"
	settled
	check "the listing after a name made: patched, no fill" "1 1" \
		"$(kept) $(patched)"
	echo more >> "$D/big/a-new-name"
	check_match "a file written in place: listed right" "^ok $((count + 1))\$" "$(fresh)"
	settled
	check "a file written in place: patched, no fill" "1 2" "$(kept) $(patched)"
	check "both from the cache" 3 "$(lcache_hits_reach /big/ 3)"

	chmod 700 "$D/big"
	check_match "the directory's mode changed: listed right" "^ok $((count + 1))\$" "$(fresh)"
	settled
	check "the listing after it: a scan" 1 "$(kept)"
	check_match "and the next" "^ok $((count + 1))\$" "$(fresh)"
	settled
	check "the next, unchanged, filled it" 2 "$(kept)"
	stop_daemon
}

run_backends mounts_still 3 checks
