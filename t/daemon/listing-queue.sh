# Listings beyond max_listings wait in a bounded queue (listing_queue,
# listing_queue_timeout) instead of being refused at once, and identical
# concurrent listings take one place between them. The listings that
# hold the place are on slowfs (FUSE, every op delayed, [listing]
# window = 1: one entry stat'ed at a time, so 20 entries hold it for
# about 4 s); those that wait are on the local disk.
. "$top_srcdir/t/daemon/lib.sh"
slow_test  # delayed file system by design
. "$top_srcdir/t/slowfs/lib.sh"

D=$T/root
mkdir -p "$D/slow" "$D/fast" "$T/back"
for d in a b c; do
	mkdir "$T/back/$d"
	n=20
	[ $d = c ] && n=40
	[ $d = b ] && n=3000
	for i in $(seq 1 $n); do echo "$i" > "$T/back/$d/f$i"; done
done
for d in f1 f2 f3 f4; do mkdir "$D/fast/$d"; echo x > "$D/fast/$d/x"; done

MNT=
umount_slow() {
	[ -n "$MNT" ] && slowfs_umount "$MNT" "$SLOWFS_PID"
	MNT=
}
slowfs_mount --delay-ms 200 -o max_threads=64 "$T/back" "$D/slow"
case $? in
0) MNT=$D/slow ;;
77) echo "SKIP: cannot mount slowfs"; exit 77 ;;
*) echo "slowfs_mount failed"; exit 99 ;;
esac
trap 'umount_slow; cleanup' EXIT

conf() { # max_listings listing_queue listing_queue_timeout
	printf '[server]\nroot = %s\nmax_listings = %s\nlisting_queue = %s\nlisting_queue_timeout = %s\nlog_level = debug\nerror_log = %s\n[listing]\nwindow = 1\n' \
		"$D" "$1" "$2" "$3" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
}
# get NAME PATH [curl args]: status into $T/NAME, headers into $T/NAME.h
get() {
	local n=$1 p=$2
	shift 2
	curl -s -D "$T/$n.h" -o /dev/null -w '%{http_code}' --max-time 50 "$@" "$URL$p" \
		> "$T/$n.tmp"
	mv "$T/$n.tmp" "$T/$n"
}
# logged REGEX: the error log matches within 20 s (bounds, not speed)
logged() { wait_for "$T/err.log" "$1" 200; }
retry_after() { grep -i '^Retry-After:' "$T/$1.h" | tr -d '\r'; }

checks() {
	local pids i

	# 1. One place, room in the queue: the listings behind the slow one
	# wait for it and are all served.
	conf 1 8 30
	start_daemon -c "$T/c.conf"
	get a /slow/a/ &
	pids=$!
	logged 'listing of /slow/a/ takes a place'
	check "the slow listing holds the only place" 0 $?
	for i in 1 2 3; do
		get q$i /fast/f$i/ &
		pids="$pids $!"
	done
	wait $pids
	check "the slow listing: 200" 200 "$(cat "$T/a")"
	for i in 1 2 3; do
		check "queued listing $i: 200" 200 "$(cat "$T/q$i")"
	done
	check "they waited in the queue" 3 "$(grep -c 'listing of /fast/f[123]/ waits for a place' "$T/err.log")"
	stop_daemon

	# 2. No queue at all, one place: identical listings at once (any
	# format, any page) share the scan, and its place. A scan is joined
	# only until its first stat, after its names are read: the three
	# requests are written on three connections at the same moment, so
	# that none depends on how fast a client process starts; and the
	# directory's 3,000 names take slowfs several delayed reads (about a
	# second), so that the last request still finds them being read when
	# its own lookup of the directory was slow. Each asks for 10
	# entries, all that the scan then stats.
	conf 1 0 30
	start_daemon -c "$T/c.conf"
	python3 - "$PORT" "$T" <<'PY'
import socket, sys
port, t = int(sys.argv[1]), sys.argv[2]
paths = ["/slow/b/?limit=10", "/slow/b/?format=json&limit=10",
         "/slow/b/?format=ndjson&limit=10"]
socks = [socket.create_connection(("127.0.0.1", port), timeout=50) for _ in paths]
for s, p in zip(socks, paths):
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % p.encode())
for i, s in enumerate(socks, 1):
    data = b""
    while True:
        c = s.recv(65536)
        if not c:
            break
        data += c
    open("%s/s%d" % (t, i), "w").write(data.split(b" ", 2)[1].decode() if data else "none")
PY
	for i in 1 2 3; do
		check "identical listing $i shares the place: 200" 200 "$(cat "$T/s$i")"
	done
	check_match "three listings on one scan" '3 on its scan' "$(cat "$T/err.log")"
	stop_daemon

	# 3. One place, one queue entry, 3 s in it.
	conf 1 1 3
	start_daemon -c "$T/c.conf"
	get c /slow/c/ &
	pids=$!
	logged 'listing of /slow/c/ takes a place'
	# A queued client that goes away gives its entry back...
	get gone /fast/f1/ --max-time 1
	logged 'listing of /fast/f1/ not queued any longer: its client went away'
	check "a queued request whose client leaves is dropped" 0 $?
	# ... which the next one takes,
	get t /fast/f2/ &
	pids="$pids $!"
	logged 'listing of /fast/f2/ waits for a place'
	check "its entry is free for the next request" 0 $?
	# past the bound (the entry taken): 503 + Retry-After at once,
	get full /fast/f3/
	check "past listing_queue: 503" 503 "$(cat "$T/full")"
	check_match "with Retry-After" '^Retry-After: [0-9]+$' "$(retry_after full)"
	check "refused, not queued" 0 "$(grep -c 'listing of /fast/f3/ waits' "$T/err.log")"
	# and the queued one gives up after listing_queue_timeout.
	wait $pids
	check "a queued request times out: 503" 503 "$(cat "$T/t")"
	check_match "with Retry-After" '^Retry-After: [0-9]+$' "$(retry_after t)"
	logged 'listing of /fast/f2/ not queued any longer: no place within listing_queue_timeout'
	check "the time-out is logged" 0 $?
	check "the listing holding the place: 200" 200 "$(cat "$T/c")"
	check "afterwards, listings are served at once" 200 "$(code /fast/f4/)"
}

run_backends checks
