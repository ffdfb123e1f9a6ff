# A directory with more entries than a fill of the listing cache may
# watch: listed right by a scan every time, logged once with its path,
# and not tried again (no watch added and removed per listing) while it
# is unchanged; once it changes it is tried again, and once it fits it
# is cached. A small directory beside it is cached meanwhile, and
# dropped (least recently used) to make room for another's watches.
. "$top_srcdir/t/daemon/lib.sh"

LCK=$top_srcdir/t/daemon/lcache_check.py
D=$T/root
fresh() { python3 "$LCK" fresh "$URL/$1/?format=ndjson" "$D/$1"; }
tries() { grep -c 'listing cache: no fill' "$T/err.log"; }
noted() { grep -c 'listing cache: /big/ not cached' "$T/err.log"; }
# flushed: the log has caught up with the requests so far (a listing of
# small/ from the cache is the marker: the log is written in order)
flushed() {
	local h
	h=$(lcache_hits /small/)
	fresh small > /dev/null
	lcache_hits_reach /small/ $((h + 1)) > /dev/null
}

# cached_soon DIR: yes once a listing of DIR came from the cache, listed
# again up to 4 times (an event of a change made just before may spoil
# the first fill: it then is not kept, and the next listing fills);
# each listing must be right
cached_soon() {
	local try
	for try in 1 2 3 4; do
		fresh "$1" | grep -q '^ok' || { echo "wrong listing"; return; }
		[ "$(lcache_hits_reach "/$1/" 1)" -ge 1 ] && { echo yes; return; }
	done
	echo no
}

checks() {
	rm -rf "$D"
	mkdir -p "$D/big" "$D/small"
	for i in $(seq 1 20); do echo "$i" > "$D/big/f$i"; done
	for i in 1 2 3; do echo "$i" > "$D/small/f$i"; done
	printf '[server]\nroot = %s\nlog_level = debug\nerror_log = %s\nfcache_watches = 12\n' \
		"$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"
	fresh small > /dev/null
	local i
	for i in 1 2 3 4; do
		check_match "too large, listed by a scan ($i)" '^ok 20$' "$(fresh big)"
	done
	flushed
	check "logged once, with its path and the limit" 1 \
		"$(grep -c 'listing cache: /big/ not cached: more than 12 entries' "$T/err.log")"
	check "one fill tried while it is unchanged" 1 "$(tries)"
	check "never from the cache" 0 "$(lcache_hits /big/)"

	sleep 0.01
	echo 21 > "$D/big/f21"
	check_match "changed: listed right" '^ok 21$' "$(fresh big)"
	check_match "changed, listed again" '^ok 21$' "$(fresh big)"
	flushed
	check "changed: tried once more" 2 "$(tries)"
	check "still logged once" 1 "$(noted)"

	for i in $(seq 6 21); do rm "$D/big/f$i"; done
	check_match "now small enough" '^ok 5$' "$(fresh big)"
	check "small enough: cached" yes "$(cached_soon big)"
	check_match "from the cache, right" '^ok 5$' "$(fresh big)"

	# 9 names and the directory: 10 of the 12 watches, more than the
	# two cached directories leave; they are dropped to make room.
	mkdir "$D/mid"
	for i in $(seq 1 9); do echo "$i" > "$D/mid/f$i"; done
	check_match "needing the others' watches" '^ok 9$' "$(fresh mid)"
	check "room made for it: cached" yes "$(cached_soon mid)"
	check_match "the one dropped for it, listed again, right" '^ok 3$' "$(fresh small)"
	stop_daemon
}

run_backends mounts_still 3 checks
