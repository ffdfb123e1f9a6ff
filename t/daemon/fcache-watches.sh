# The small-file cache under watch pressure: a crawl of more files in
# distinct directories than its watches allow evicts the least recently
# used entries instead of turning the cache off, and a worker never holds
# more inotify watches than fcache_watches. The cache keeps answering
# (a second fetch is served without opening the file) and stays right.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
HITS="python3 $top_srcdir/t/daemon/fcache-hits.py"

# crawl N: GET d0/e/f.txt .. d(N-1)/e/f.txt once each; prints the wrong ones
crawl() {
	python3 - "$PORT" "$D" "$1" <<'PY'
import http.client, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
wrong = 0
for i in range(int(sys.argv[3])):
    conn.request("GET", "/d%d/e/f.txt" % i)
    if conn.getresponse().read() != open("%s/d%d/e/f.txt" % (sys.argv[2], i), "rb").read():
        wrong += 1
print("%d wrong" % wrong)
PY
}

watches() {
	cat /proc/"$DPID"/fdinfo/* 2>/dev/null | grep -c '^inotify wd:'
}

checks() {
	rm -rf "$D"
	python3 - "$D" <<'PY'
import os, sys
for i in range(1800):
    d = os.path.join(sys.argv[1], "d%d" % i, "e")
    os.makedirs(d)
    with open(os.path.join(d, "f.txt"), "w") as f:
        f.write("file %d\n" % i)
PY
	chmod -R a+rX "$D"

	# defaults: 1,700 files, each in its own two directories
	printf '[server]\n' > "$T/fsd.conf"
	start_daemon --root "$D" -c "$T/fsd.conf"
	check "default limits: a crawl of 1,700 files" "0 wrong" "$(crawl 1700)"
	check "default limits: the cache still answers after it" "20 hits, 0 wrong" \
		"$($HITS "$PORT" "$D" $(seq -f 'd%g/e/f.txt' 1700 1719))"
	stop_daemon

	# fcache_watches = 16: at most 4 entries of 4 watches each (root,
	# dN, dN/e, the file) at a time
	printf '[server]\nfcache_watches = 16\n' > "$T/fsd.conf"
	start_daemon --root "$D" -c "$T/fsd.conf"
	check "fcache_watches = 16: 300 files, each cached while recent" "300 hits, 0 wrong" \
		"$($HITS "$PORT" "$D" $(seq -f 'd%g/e/f.txt' 0 299))"
	local w
	w=$(watches)
	if [ "$w" -ge 1 ] && [ "$w" -le 16 ]; then ok "inotify watches held: $w (1..16)"
	else not_ok "inotify watches held: $w, expected 1..16"; fi
	# a file deeper than the budget allows is served, never cached
	mkdir -p "$D/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16"
	echo deep > "$D/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/f.txt"
	chmod -R a+rX "$D/1"
	check "deeper than the budget: served, not cached" "0 hits, 0 wrong" \
		"$($HITS "$PORT" "$D" 1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/f.txt)"
	# every change still seen, evicted or cached
	local i
	for i in 0 1 296 297 298 299; do echo "changed $i" > "$D/d$i/e/f.txt"; done
	check "changes after eviction all seen" "0 wrong" "$(crawl 300)"
	check "and the last ones cached again" "4 hits, 0 wrong" \
		"$($HITS "$PORT" "$D" $(seq -f 'd%g/e/f.txt' 296 299))"
}

run_backends checks
