# Listings on a slow file system (slowfs: FUSE, every metadata op
# delayed): other requests on the same worker are answered while a
# listing waits; concurrent identical listings share one directory read;
# listings beyond max_listings and an empty queue get 503 + Retry-After.
. "$top_srcdir/t/daemon/lib.sh"
slow_test  # delayed file system by design
. "$top_srcdir/t/slowfs/lib.sh"

command -v ps >/dev/null 2>&1 || { echo "SKIP: ps is not installed"; exit 77; }
LC=$top_srcdir/t/daemon/listing_check.py
D=$T/root
mkdir -p "$D/slow" "$D/fastdir" "$T/back" "$T/back3"
echo a > "$T/back3/a"
echo b > "$T/back3/b"
printf 'fast\n' > "$D/fast.txt"
python3 -c '
import os, sys
for i in range(2000):
    with open(os.path.join(sys.argv[1], "e%04d" % i), "w") as f:
        f.write("x" * (i % 100))
' "$T/back"

MNT=
umount_slow() {
	[ -n "$MNT" ] && slowfs_umount "$MNT" "$SLOWFS_PID"
	MNT=
}
mount_slow() { # delay-ms [backing dir [readdir delay-ms]]
	umount_slow
	slowfs_mount --delay-ms "$1" --readdir-delay-ms "${3:-$1}" -o max_threads=64 \
		"${2:-$T/back}" "$D/slow"
	local rc=$?
	[ $rc = 77 ] && { echo "SKIP: cannot mount slowfs"; exit 77; }
	[ $rc = 0 ] || { echo "slowfs_mount failed"; exit 99; }
	MNT=$D/slow
}
trap 'umount_slow; cleanup' EXIT

checks() {
	local out i fastok r1 r3 before

	# 1. A listing of 2,000 entries at 2 ms per op: the worker answers
	# other requests meanwhile, and the listing is exact.
	mount_slow 2
	printf '[server]\nroot = %s\nmax_listings = 8\n' "$D" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	rm -f "$T/list.done"
	( python3 "$LC" match "$URL/slow/?format=json" "$T/back" > "$T/list.out"
	  touch "$T/list.done" ) &
	local bg=$!
	fastok=0
	for i in $(seq 1 20); do
		[ "$(curl -s --max-time 5 "$URL/fast.txt")" = fast ] && fastok=$((fastok + 1))
		[ -e "$T/list.done" ] && break
	done
	check "fast requests answered while the listing waits on the slow fs" yes \
		"$([ "$fastok" -ge 1 ] && [ "$fastok" = "$i" ] && echo yes)"
	echo "# $fastok fast requests answered before the listing ended"
	wait "$bg"
	check_match "slow listing names every entry" "^ok 2000" "$(cat "$T/list.out")"

	# 2. Single flight: three identical listings that come while the
	# first still reads names read the directory once (slowfs counts
	# readdir calls); one that came after its first stat would run a
	# scan of its own. The others' own lookups of the directory take
	# 50 ms each, so the names take longer (500 ms a readdir), and the
	# three leave from one curl at once: three curls started in turn on
	# a loaded machine (make check -j2) can come too late.
	mount_slow 50 "$T/back" 500
	before=$(slowfs_stats "$MNT" readdir)
	curl -s -o /dev/null "$URL/slow/?format=json"
	r1=$(( $(slowfs_stats "$MNT" readdir) - before ))
	before=$(slowfs_stats "$MNT" readdir)
	curl -s -Z --parallel-immediate --parallel-max 3 \
		-o "$T/sf1" "$URL/slow/?format=json" -o "$T/sf2" "$URL/slow/?format=json" \
		-o "$T/sf3" "$URL/slow/?format=json"
	r3=$(( $(slowfs_stats "$MNT" readdir) - before ))
	check "3 concurrent listings: readdir calls of one" "$r1" "$r3"
	check "and all three identical" yes \
		"$(cmp -s "$T/sf1" "$T/sf2" && cmp -s "$T/sf1" "$T/sf3" && [ -s "$T/sf1" ] && echo yes)"
	stop_daemon

	# 2b. attrs_from_lookup (on by default): an entry's attributes come
	# with its lookup, so a listing makes no getattr per entry; off, each
	# entry is asked again. Both listings stay exact.
	local on_l on_g off_g
	start_daemon --root "$D"
	before=$(slowfs_stats "$MNT" getattr); on_l=$(slowfs_stats "$MNT" lookup)
	check_match "listing with attrs_from_lookup on is exact" "^ok 2000" \
		"$(python3 "$LC" match "$URL/slow/?format=json" "$T/back")"
	on_g=$(( $(slowfs_stats "$MNT" getattr) - before ))
	on_l=$(( $(slowfs_stats "$MNT" lookup) - on_l ))
	echo "# attrs_from_lookup on: $on_l lookups, $on_g getattrs for 2000 entries"
	check "on: at least one lookup per entry" yes "$([ "$on_l" -ge 2000 ] && echo yes)"
	check "on: next to no getattr per entry" yes "$([ "$on_g" -lt 200 ] && echo yes)"
	# [listing] background (on by default): the listing's calls ran on
	# threads of the daemon that the kernel schedules at SCHED_IDLE.
	local idle
	idle=$(ps -L -o cls= -p "$DPID" | grep -c IDL)
	echo "# background on: $idle daemon threads at SCHED_IDLE after the listing"
	check "background on: the listing ran on SCHED_IDLE threads" yes \
		"$([ "$idle" -ge 1 ] && echo yes)"
	stop_daemon
	printf '[server]\nroot = %s\n[listing]\nattrs_from_lookup = off\nbackground = off\n' "$D" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	before=$(slowfs_stats "$MNT" getattr)
	check_match "listing with attrs_from_lookup and background off is exact" "^ok 2000" \
		"$(python3 "$LC" match "$URL/slow/?format=json" "$T/back")"
	off_g=$(( $(slowfs_stats "$MNT" getattr) - before ))
	echo "# attrs_from_lookup off: $off_g getattrs for 2000 entries"
	check "off: a getattr per entry" yes "$([ "$off_g" -ge 2000 ] && echo yes)"
	check "background off: no SCHED_IDLE thread" 0 \
		"$(ps -L -o cls= -p "$DPID" | grep -c IDL)"
	stop_daemon

	# 3. The bound: with max_listings = 1 and no queue, a second listing
	# while one waits (each op 1 s) gets 503 + Retry-After; files are
	# still served. (The listing cache off: a cached listing needs no
	# place.)
	mount_slow 1000 "$T/back3"
	printf '[server]\nroot = %s\nmax_listings = 1\nlisting_queue = 0\nlisting_cache_bytes = 0\nrequest_timeout = 60\n' "$D" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	rm -f "$T/first.code"
	( curl -s -o /dev/null -w '%{http_code}' --max-time 60 "$URL/slow/" > "$T/first.code.tmp"
	  mv "$T/first.code.tmp" "$T/first.code" ) &
	bg=$!
	# Ask for a fast listing until the slow one holds the only place
	# (it counts from its scan on, after the slow lookup of /slow).
	out=
	for i in $(seq 1 100); do
		[ -e "$T/first.code" ] && break
		out=$(curl -s -D - -o /dev/null "$URL/fastdir/" | tr -d '\r')
		case "$out" in "HTTP/1.1 503"*) break ;; esac
		sleep 0.2
	done
	check_match "listing beyond max_listings -> 503" "^HTTP/1.1 503" "$out"
	check_match "503 has Retry-After" "Retry-After: [0-9]+" "$out"
	check "files still served" fast "$(curl -s "$URL/fast.txt")"
	wait "$bg"
	check "the listing in progress completes" 200 "$(cat "$T/first.code")"
	check "after it, listings are served again" 200 "$(code /)"
	umount_slow
}

run_backends checks
