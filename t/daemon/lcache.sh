# The listing cache: a repeated listing of an unchanged directory comes
# from memory, in any format and order, and no listing is ever stale:
# entries added, removed, renamed, written in place, chmod'ed, a file
# changed through a hard link outside the directory (made before or
# after the listing was cached), a subdirectory's mtime, and a writer
# racing the listings.
. "$top_srcdir/t/daemon/lib.sh"

LCK=$top_srcdir/t/daemon/lcache_check.py
D=$T/root
fixture() {
	rm -rf "$D" "$T/outside"
	mkdir -p "$D/d/sub" "$T/outside"
	for i in 1 2 3 4 5; do printf '%s\n' "$i" > "$D/d/f$i"; done
	ln "$D/d/f5" "$T/outside/f5-link"      # a hard link made before the fill
}

hits() { lcache_hits /d/; }
hits_reach() { lcache_hits_reach /d/ "$1"; }
fresh() { python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d"; }

ORDERS='sort=name sort=size sort=size&order=desc sort=mtime sort=name&order=desc
sort=size&dirsfirst=1 sort=name&dirsfirst=1&order=desc limit=2 limit=2&after=f2
limit=2&after=f3&order=desc format=json format=html sort=none'
# bodies NAME: every order's body and ETag into $T/NAME
bodies() {
	local by
	: > "$T/$1"
	for by in $ORDERS; do
		echo "== $by" >> "$T/$1"
		curl -s -D "$T/h" "$URL/d/?format=ndjson&$by" >> "$T/$1"
		grep -i '^etag' "$T/h" >> "$T/$1"
	done
}

checks() {
	fixture
	# The orders of a scan, without the cache...
	printf '[server]\nroot = %s\nlisting_cache_bytes = 0\n' "$D" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	bodies scanned
	stop_daemon

	printf '[server]\nroot = %s\nlog_level = debug\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"
	check_match "first listing" '^ok 6$' "$(fresh)"
	local n
	sleep 1.5
	check "the first listing scanned" 0 "$(hits)"
	check_match "repeat" '^ok 6$' "$(fresh)"
	# (a mount or unmount anywhere on the machine empties the cache:
	# other programs' mounts may make a repeat scan again)
	local try
	for try in 1 2 3 4; do
		[ "$(hits_reach 1)" -ge 1 ] && break
		fresh > /dev/null
		fresh > /dev/null
	done
	check "a repeat came from the cache" yes "$([ "$(hits_reach 1)" -ge 1 ] && echo yes)"
	# ... are the orders of the cache, byte for byte, ETags included.
	# (the orders are asked again until all of them came from it)
	# (sort=none, the directory's own order, is never from the cache)
	n=$(( $(echo $ORDERS | wc -w) - 1 ))
	local h0 got=
	for try in 1 2 3; do
		h0=$(hits)
		bodies cached
		got=$(( $(hits_reach $((h0 + n))) - h0 ))
		[ "$got" = "$n" ] && break
	done
	check "the repeats came from the cache" "$n" "$got"
	check "every order, page and format from the cache is the scan's" "" \
		"$(diff "$T/scanned" "$T/cached")"
	# Whole listings are rendered once: asked again, the same bytes.
	bodies again
	check "every order and format rendered before is the scan's" "" \
		"$(diff "$T/scanned" "$T/again")"
	check_log "a listing sent as rendered before" "$T/err.log" 'from the cache, as rendered before'
	curl -s "$URL/d/" > "$T/plain"
	curl -s --compressed "$URL/d/" > "$T/gz1"
	curl -s --compressed "$URL/d/" > "$T/gz2"
	check "gzip'ed once, sent twice, the same listing" "" \
		"$(cmp "$T/plain" "$T/gz1" 2>&1; cmp "$T/plain" "$T/gz2" 2>&1)"

	echo new > "$D/d/f6"
	check_match "entry added" '^ok 7$' "$(fresh)"
	fresh > /dev/null
	rm "$D/d/f6"
	check_match "entry removed" '^ok 6$' "$(fresh)"
	fresh > /dev/null
	mv "$D/d/f4" "$D/d/f4b"
	check_match "entry renamed" '^ok 6$' "$(fresh)"
	fresh > /dev/null
	printf 'longer now\n' >> "$D/d/f1"
	check_match "written in place (size, mtime)" '^ok 6$' "$(fresh)"
	fresh > /dev/null
	printf 'x' | dd of="$D/d/f2" bs=1 seek=0 conv=notrunc status=none
	check_match "overwritten in place (mtime only)" '^ok 6$' "$(fresh)"
	fresh > /dev/null
	chmod 600 "$D/d/f3"
	check_match "chmod" '^ok 6$' "$(fresh)"
	fresh > /dev/null
	printf 'through the other name\n' >> "$T/outside/f5-link"
	check_match "written through a hard link outside" '^ok 6$' "$(fresh)"
	fresh > /dev/null
	ln "$D/d/f1" "$T/outside/f1-link"        # linked after the fill...
	printf 'more\n' >> "$T/outside/f1-link"  # ... and written there
	check_match "linked after the fill, written through the link" '^ok 6$' "$(fresh)"
	fresh > /dev/null
	sleep 0.01
	touch "$D/d/sub/new-inside"
	check_match "a subdirectory's mtime" '^ok 6$' "$(fresh)"
	fresh > /dev/null
	touch -d '2001-01-01' "$D/d/sub"
	check_match "a subdirectory's mtime set" '^ok 6$' "$(fresh)"

	# A path that leads to another directory later (a parent renamed,
	# the path made again): the cache knows directories, not paths.
	mkdir -p "$D/p/d"
	echo a > "$D/p/d/old"
	python3 "$LCK" fresh "$URL/p/d/?format=ndjson" "$D/p/d" > /dev/null
	python3 "$LCK" fresh "$URL/p/d/?format=ndjson" "$D/p/d" > /dev/null
	mv "$D/p" "$D/p.old"
	mkdir -p "$D/p/d"
	echo b > "$D/p/d/new"
	check_match "a parent renamed, the path made again" '^ok 1$' \
		"$(python3 "$LCK" fresh "$URL/p/d/?format=ndjson" "$D/p/d")"

	check_match "a writer racing the listings: never stale" '^ok [0-9]+ changes' \
		"$(python3 "$LCK" race "$URL/d/?format=ndjson" "$D/d" 4)"
	stop_daemon

	# Small directories cost what their names need: 60 of three names
	# each, listed twice in turn, all stay in a cache of 1 MiB.
	local i
	for i in $(seq 1 60); do
		mkdir -p "$D/many/d$i"
		: > "$D/many/d$i/a"; : > "$D/many/d$i/b"; : > "$D/many/d$i/c"
	done
	printf '[server]\nroot = %s\nworkers = 1\nlisting_cache_bytes = 1m\nlog_level = debug\nerror_log = %s\n' \
		"$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"
	for n in 1 2 3; do
		for i in $(seq 1 60); do curl -s -o /dev/null "$URL/many/d$i/?format=ndjson"; done
	done
	check "60 small directories in 1 MiB: the third pass from the cache" 60 \
		"$(grep -c 'listing of /many/d[0-9]*/ from the cache' "$T/err.log" | awk '{ print ($1 >= 60) ? 60 : $1 }')"
	stop_daemon
}

run_backends mounts_still 3 checks
