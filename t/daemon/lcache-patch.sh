# A cached listing brought up to date by its events: after each of
# hundreds of random changes (names made, removed, renamed over one
# another, moved out and in, exchanged, hidden, made again; writes,
# truncation, chmod, mtimes; hard links written outside; subdirectories
# filled and removed; symlinks), the listing shows the directory as it
# is, and most of those listings come from the patched cache, not from
# a scan; a write through another link while its name is patched in
# is seen. With symlink targets shown, a symlink keeps the directory out
# of the cache; with them off, it is cached like any entry. And a large
# listing rendered from the cache while its directory changes.
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

# Listings of 8,000 entries, rendered from the cache a chunk at a time
# (other clients served between chunks), while a writer changes the
# directory and checks each change, and two more clients ask back to
# back for a page of 7,000 (rendered each time, not kept). Then a page
# of 29,000 compressed (tens of milliseconds of chunks) and a change
# made while it renders: the patch waits for that render, which shows
# the records as they were when it began.
race() {
	rm -rf "$D"
	mkdir -p "$D/d"
	(cd "$D/d" && seq -f 'f%05g' 1 8000 | xargs touch) || exit 99
	# (one worker: every request meets the same cache)
	printf '[server]\nroot = %s\nworkers = 1\nlog_level = debug\nerror_log = %s\n' \
		"$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"
	local loops= i
	for i in 1 2; do
		(while :; do curl -s -o /dev/null "$URL/d/?format=ndjson&limit=7000"; done) &
		loops="$loops $!"
	done
	check_match "8,000 entries patched while rendered: never stale" '^ok [0-9]+ changes' \
		"$(python3 "$LCK" race "$URL/d/?format=ndjson" "$D/d" 4)"
	kill $loops
	wait $loops 2>/dev/null
	check "... and patched, not rescanned" yes \
		"$([ "$(grep -c 'events applied' "$T/err.log")" -ge 10 ] && echo yes)"

	(cd "$D/d" && seq -f 'g%05g' 1 22000 | xargs touch) || exit 99
	# (a scan, then the fill; then a patch, which indexes the names)
	for i in 1 2 3; do
		[ "$i" = 3 ] && touch "$D/d/f00009"
		python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d" > /dev/null
	done
	local bad= pages
	for i in $(seq 1 40); do
		curl -s --compressed -o "$T/page" "$URL/d/?format=html&limit=29000" &
		pages=$!
		curl -s --compressed -o /dev/null "$URL/d/?format=html&limit=29000" &
		pages="$pages $!"
		sleep "$(printf '0.%03d' $((4 * (i % 4) + 4)))"
		touch "$D/d/f$(printf %05d "$i")"
		curl -s -o /dev/null "$URL/d/?format=ndjson"
		wait $pages
		python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d" | grep -q '^ok' || bad="$bad $i"
		[ "$(grep -c '<div class=r>' "$T/page")" -ge 29000 ] || bad="$bad page$i"
		grep -q 'a patch waits for' "$T/err.log" && break
	done
	# The directory itself changed during a render: its entry is dropped
	# while that render reads it, and freed when the render ends.
	for i in $(seq 1 30); do
		python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d" > /dev/null
		python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d" > /dev/null
		curl -s --compressed -o "$T/page" "$URL/d/?format=html&limit=29000" &
		pages=$!
		curl -s --compressed -o /dev/null "$URL/d/?format=html&limit=29000" &
		pages="$pages $!"
		sleep "$(printf '0.%03d' $((4 * (i % 4) + 4)))"
		chmod "$([ $((i % 2)) = 1 ] && echo 700 || echo 755)" "$D/d"
		curl -s -o /dev/null "$URL/d/?format=ndjson"
		wait $pages
		[ "$(grep -c '<div class=r>' "$T/page")" -ge 29000 ] || bad="$bad dropped-page$i"
		grep -q 'dropped while' "$T/err.log" && break
	done
	python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d" | grep -q '^ok' || bad="$bad after-drops"
	stop_daemon
	check "changes during long renders: listed right, the renders whole" "" "$bad"
	echo "# $(grep -c 'dropped while' "$T/err.log") entries dropped during renders"
	check "an entry dropped during a render" yes \
		"$([ "$(grep -c 'dropped while' "$T/err.log")" -ge 1 ] && echo yes)"
	echo "# $(grep -c 'a patch waits for' "$T/err.log") patches waited for renders"
	check "a patch waited for a render in progress" yes \
		"$([ "$(grep -c 'a patch waits for' "$T/err.log")" -ge 1 ] && echo yes)"
}

# A name made in the listed directory, a hard link of a file watched
# already (in the small-file cache), written through its other name
# while the patch that adds the link runs: the listing shows the write.
linkgap() {
	rm -rf "$D"
	mkdir -p "$D"
	printf '[server]\nroot = %s\nworkers = 1\n' "$D" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	check_match "a write through another link during the patch: listed" '^ok 20 trials' \
		"$(python3 "$LCK" linkgap "$URL" "$D" 20)"
	stop_daemon
}

checks() {
	linkgap
	churn beneath 400
	churn off 400
	check "with targets off, a symlink is patched in" "" \
		"$(grep 'events not applied' "$T/err.log")"
	race
}

run_backends mounts_still 3 checks
