# The kernel refusing a watch (ENOSPC: the user's max_user_watches is
# reached) makes the small-file cache evict and retry, not turn itself
# off; when no watch is left at all it serves without caching and starts
# caching again once watches free up. Runs in a user namespace of its
# own, whose inotify limit the test lowers to 30 watches: the limit of
# that namespace (user.max_inotify_watches), not fs.inotify's, which is
# the whole machine's and which root mapped to root may still write.
if [ -z "${FSD_USERNS_TEST:-}" ]; then
	command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not installed"; exit 77; }
	unshare -U -r true 2>/dev/null || { echo "SKIP: no user namespaces here"; exit 77; }
	FSD_USERNS_TEST=1 exec unshare -U -r "${SHELL:-/bin/sh}" "$0" "$@"
fi
echo 30 > /proc/sys/user/max_inotify_watches 2>/dev/null ||
	{ echo "SKIP: cannot lower max_inotify_watches in a user namespace"; exit 77; }
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
HITS="python3 $top_srcdir/t/daemon/fcache-hits.py"

# The kernel frees the count of a closed inotify instance's watches a
# little after the close (a daemon stopped, the hog gone): wait until
# 27 of the 30 can be had, then for those to be freed in turn.
wait_watches() {
	python3 - "$T/probe" <<'PY'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
for p in range(27):
    os.makedirs(os.path.join(sys.argv[1], str(p)), exist_ok=True)
end = time.monotonic() + 10
while time.monotonic() < end:
    ifd = libc.inotify_init1(0)
    ok = all(libc.inotify_add_watch(ifd, os.path.join(sys.argv[1], str(p)).encode(), 2) >= 0
             for p in range(27))
    os.close(ifd)
    time.sleep(0.5)
    if ok:
        break
PY
}

checks() {
	wait_watches
	rm -rf "$D"
	local i
	for i in $(seq 0 59); do
		mkdir -p "$D/d$i"
		echo "file $i" > "$D/d$i/f.txt"
	done
	chmod -R a+rX "$D"
	# a budget far above the kernel's limit: the kernel says no first
	printf '[server]\nfcache_watches = 100000\n' > "$T/fsd.conf"
	start_daemon --root "$D" -c "$T/fsd.conf"
	check "60 files in their own directories, 30 watches: all cached in turn" \
		"60 hits, 0 wrong" "$($HITS "$PORT" "$D" $(seq -f 'd%g/f.txt' 0 59))"
	echo "changed" > "$D/d59/f.txt"
	check "a change to a cached one seen" "changed" "$(curl -s "$URL/d59/f.txt")"

	# Another process of the same user takes every watch but two before
	# the daemon starts (one for fcache-hits.py; a file in its own
	# directory needs three): files are served, not cached; once it lets
	# them go, caching resumes. The kernel frees a removed watch's count
	# a little later: the hog grabs in rounds until a round gets nothing,
	# and waits after letting its two go.
	stop_daemon
	rm -f "$T/hog.ready" "$T/hog.done"
	python3 - "$T/hog" <<'PY' &
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
ifd = libc.inotify_init1(0)
wds, n = [], 0
while True:
    got = 0
    while True:
        p = os.path.join(sys.argv[1], str(n))
        os.makedirs(p, exist_ok=True)
        wd = libc.inotify_add_watch(ifd, p.encode(), 2)
        if wd < 0:
            break
        wds.append(wd)
        n, got = n + 1, got + 1
    if not got:
        break
    time.sleep(0.3)
for wd in wds[-2:]:
    libc.inotify_rm_watch(ifd, wd)
time.sleep(0.5)
open(sys.argv[1] + ".ready", "w").close()
while not os.path.exists(sys.argv[1] + ".done"):
    time.sleep(0.05)
PY
	local hog=$!
	for i in $(seq 1 150); do [ -e "$T/hog.ready" ] && break; sleep 0.1; done
	start_daemon --root "$D" -c "$T/fsd.conf"
	check "no watch left: served, not cached" "0 hits, 0 wrong" \
		"$($HITS "$PORT" "$D" d1/f.txt d2/f.txt 2>&1)"
	touch "$T/hog.done"
	wait "$hog"
	wait_watches
	check "watches free again: cached again" "3 hits, 0 wrong" \
		"$($HITS "$PORT" "$D" d3/f.txt d4/f.txt d5/f.txt)"
}

run_backends checks
