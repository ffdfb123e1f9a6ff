# The listing cache's fill of a large directory, whose names are
# watched on a pool thread: a change made while the fill is in progress
# (written through a hard link outside, chmod, a name made, removed or
# renamed, written in place) never leaves a stale entry, and the
# directory is cached once nothing changes.
. "$top_srcdir/t/daemon/lib.sh"

LCK=$top_srcdir/t/daemon/lcache_check.py
D=$T/root
N=20000
quick && N=5000
ROUNDS=24

watches() {
	cat /proc/"$DPID"/fdinfo/* 2>/dev/null | grep -c '^inotify wd:'
}

fetch_d() { curl -s -o /dev/null "$URL/d/?format=ndjson"; }

# small_opened: GET /small.txt; "opened" if the daemon opened the file
# for it, else "not opened" (the small-file cache answered)
small_opened() {
	python3 - "$PORT" "$D/small.txt" <<'PY'
import ctypes, http.client, os, sys
libc = ctypes.CDLL(None, use_errno=True)
ifd = libc.inotify_init1(os.O_NONBLOCK)
libc.inotify_add_watch(ifd, sys.argv[2].encode(), 0x20)   # IN_OPEN
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
c.request("GET", "/small.txt")
body = c.getresponse().read()
try:
    opened = len(os.read(ifd, 4096)) > 0
except BlockingIOError:
    opened = False
print("opened" if opened else "not opened" if body == b"small\n" else "wrong body")
PY
}

checks() {
	rm -rf "$D" "$T/outside"
	mkdir -p "$D/d" "$T/outside"
	(cd "$D/d" && seq -f 'f%06g' 0 $((N - 1)) | xargs touch) || exit 99
	# hard links outside, to entries spread over the directory
	for i in $(seq 1 $((N / 400)) $((N - 2))); do
		ln "$D/d/$(printf 'f%06d' "$i")" "$T/outside/"
	done
	printf '[server]\nroot = %s\nlog_level = debug\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	start_daemon -c "$T/c.conf"
	check_match "changes during fills: never stale" '^ok [0-9]+ rounds' \
		"$(python3 "$LCK" fill "$URL/d/?format=ndjson" "$D/d" "$T/outside" "$ROUNDS")"
	# Nothing changes now: the next whole listing fills the cache, and
	# a page after it comes from the cache, the same as the directory.
	local h0 i
	wait_for "$T/err.log" 'fill of [0-9]+ entries' 30
	h0=$(grep -c 'listing of /d/ from the cache' "$T/err.log")
	for i in 1 2 3; do
		python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d" > "$T/fresh"
		grep -q '^ok' "$T/fresh" || break
		wait_for "$T/err.log" 'listing of /d/ from the cache' 20 &&
			[ "$(grep -c 'listing of /d/ from the cache' "$T/err.log")" -gt "$h0" ] && break
	done
	check_match "a whole listing afterwards is the directory" '^ok [0-9]+$' "$(cat "$T/fresh")"
	check "the unchanged directory then came from the cache" yes \
		"$([ "$(grep -c 'listing of /d/ from the cache' "$T/err.log")" -gt "$h0" ] && echo yes)"
	# The cached directory holds a watch per entry; once a change to the
	# directory itself drops it, they all go (none is left behind by the
	# fills).
	check "a watch per entry while cached" yes "$([ "$(watches)" -ge "$N" ] && echo yes)"
	# (removed a thousand or so at a time, not all at once: 20,000
	# IN_IGNORED events at once would overflow the inotify queue, 16,384
	# by default, and that empties the small-file cache too; so does a
	# mount anywhere on the machine: up to three tries). The first time,
	# one request drops the entry and the idle worker removes the rest.
	echo small > "$D/small.txt"
	local try kept=
	for try in 1 2 3; do
		[ "$try" = 1 ] || { fetch_d; fetch_d; }
		curl -s -o /dev/null "$URL/small.txt"
		curl -s -o /dev/null "$URL/small.txt"
		chmod 755 "$D/d"
		code "/d/?format=ndjson&limit=1" > /dev/null
		for i in $(seq 1 $((N / 500))); do
			[ "$try" = 1 ] && sleep 0.2 || code "/d/?format=ndjson&limit=1" > /dev/null
			[ "$(watches)" -lt 100 ] && break
		done
		[ "$try" = 1 ] && check "the watches go with the entry, no request after" yes \
			"$([ "$(watches)" -lt 100 ] && echo yes)"
		kept=$(small_opened)
		[ "$kept" = "not opened" ] && break
	done
	check "the small-file cache kept its entry meanwhile" "not opened" "$kept"
	echo "# fills: $(grep -c 'entries kept' "$T/err.log") kept," \
		"$(grep -c 'not kept (changed meanwhile)' "$T/err.log") hit by a change"
	stop_daemon
}

run_backends mounts_still 3 checks
