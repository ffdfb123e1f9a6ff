# A cached listing brought up to date by its events: after each of
# hundreds of random changes (names made, removed, renamed over one
# another, moved out and in, exchanged, hidden, made again; writes,
# truncation, chmod, mtimes; hard links written outside; subdirectories
# filled and removed; symlinks), the listing shows the directory as it
# is, and most of those listings come from the patched cache, not from
# a scan. With symlink targets shown, a symlink keeps the directory out
# of the cache; with them off, it is cached like any entry.
. "$top_srcdir/t/daemon/lib.sh"

LCK=$top_srcdir/t/daemon/lcache_check.py
D=$T/root
SEED=${LCACHE_SEED:-$RANDOM}
echo "# seed $SEED (LCACHE_SEED)"

churn() {
	local targets=$1 steps=$2
	rm -rf "$D" "$T/outside"
	mkdir -p "$D/d" "$T/outside"
	for i in $(seq 1 60); do printf '%s\n' "$i" > "$D/d/f$i"; done
	printf '[server]\nroot = %s\nlog_level = debug\nerror_log = %s\n[listing]\nsymlink_targets = %s\n' \
		"$D" "$T/err.log" "$targets" > "$T/c.conf"
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"
	local url="$URL/d/?format=ndjson"
	python3 "$LCK" fresh "$url" "$D/d" > /dev/null
	python3 "$LCK" fresh "$url" "$D/d" > /dev/null
	check_match "symlink_targets = $targets: every listing after a change is fresh" \
		'^ok [0-9]+ changes' \
		"$(python3 "$LCK" churn "$url" "$D/d" "$T/outside" "$steps" "$SEED")"
	stop_daemon
	local patched hits
	patched=$(grep -c 'listing cache: [0-9]* events applied' "$T/err.log")
	hits=$(lcache_hits /d/)
	echo "# $patched patches, $hits listings from the cache of $steps"
	check "symlink_targets = $targets: most changes patched into the cache" yes \
		"$([ "$patched" -ge $((steps / 2)) ] && [ "$hits" -ge $((steps / 2)) ] && echo yes)"
	check "symlink_targets = $targets: nothing the patch could not apply but symlinks" "" \
		"$(grep 'events not applied' "$T/err.log" | grep -v 'Too many links')"
}

checks() {
	churn beneath 400
	churn off 400
	check "with targets off, a symlink is patched in" "" \
		"$(grep 'events not applied' "$T/err.log")"
}

run_backends mounts_still 3 checks
