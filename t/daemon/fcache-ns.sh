# Changes no inotify event reports, in a private mount namespace (as
# root; nothing leaks out of it):
# - a same-size rewrite that lands right after the daemon read a file it
#   is about to cache, on ramfs (timestamps in jiffies: the rewrite
#   usually keeps the ctime the daemon saw). The test runs on the
#   daemon's CPU at real-time priority and is woken by fanotify the
#   moment the daemon's read completes, so the rewrite lands in the
#   daemon's read-to-watch window on nearly every trial;
# - a directory, then the file itself, bind-mounted over, and unmounted;
#   a file beneath a mount point is not cached at all;
# - a casefolded directory (tmpfs -o casefold, where the kernel has it):
#   a write through the file's real name, requested in another case.
if [ -z "${FSD_NS_TEST:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (mounts)"; exit 77; }
	for t in unshare mount umount chrt taskset; do
		command -v "$t" >/dev/null 2>&1 || { echo "SKIP: $t not installed"; exit 77; }
	done
	FSD_NS_TEST=1 exec unshare -m --propagation private "${SHELL:-/bin/sh}" "$0" "$@"
fi
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
trap 'umount -R "$D" 2>/dev/null; cleanup' EXIT

race() {
	# taskset: the daemon and the test share CPU 0, where the test's
	# real-time priority makes it run as soon as fanotify wakes it
	python3 - "$PORT" "$D" 15 400 <<'PY'
import ctypes, http.client, os, select, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64,
                               ctypes.c_int, ctypes.c_char_p]
port, root, budget, most = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
FAN_NONBLOCK, FAN_ACCESS, FAN_MARK_ADD, FAN_MARK_MOUNT = 2, 1, 1, 0x10
fan = libc.fanotify_init(FAN_NONBLOCK, os.O_RDONLY)
if fan < 0 or libc.fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_ACCESS,
                                 -100, root.encode()):
    print("fanotify: %s" % os.strerror(ctypes.get_errno()))
    sys.exit(0)
def drain_fan():
    while True:
        try:
            buf = os.read(fan, 4096)
        except BlockingIOError:
            return
        off = 0
        while off < len(buf):
            ln, _, _, _, _, fd, _ = struct.unpack_from("IBBHQii", buf, off)
            if fd >= 0:
                os.close(fd)
            off += ln
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
def get(p):
    conn.request("GET", p)
    return conn.getresponse().read()
os.makedirs(root + "/race", exist_ok=True)
stale = trials = hits = 0
end = time.monotonic() + budget
while trials < most and time.monotonic() < end:
    trials += 1
    name = "/race/%d.txt" % trials
    a = b"A%07d" % trials + b"a" * 792 + b"\n"
    b = b"B%07d" % trials + b"b" * 792 + b"\n"
    with open(root + name, "wb") as f:
        f.write(a)
    fd = os.open(root + name, os.O_WRONLY)
    drain_fan()
    conn.request("GET", name)
    # the daemon read the file: rewrite it in place at once, once
    select.select([fan], [], [], 5)
    os.pwrite(fd, b, 0)
    os.close(fd)
    conn.getresponse().read()
    drain_fan()
    if get(name) != b:
        stale += 1
    drain_fan()
    if get(name) != b:
        stale += 1
    elif not select.select([fan], [], [], 0)[0]:
        hits += 1       # not read for this answer: the cache gave it
print("# %d of %d trials answered from the cache afterwards" % (hits, trials), file=sys.stderr)
print("%d stale" % stale)
PY
}

checks() {
	umount "$D" 2>/dev/null
	rm -rf "$D" "$T/other"
	mkdir -p "$D" "$T/other"
	mount -t ramfs ramfs "$D"
	chmod 755 "$D"
	printf '[server]\nlog_level = debug\nerror_log = %s\n' "$T/err.log" > "$T/ns.conf"
	: > "$T/err.log"
	start_daemon --root "$D" -c "$T/ns.conf"
	# the daemon's threads on CPU 0 (start_daemon runs it in the background)
	taskset -a -p -c 0 "$DPID" >/dev/null
	check "same-size rewrite between read and watch (ramfs)" "0 stale" \
		"$(chrt -f 10 taskset -c 0 bash -c "$(declare -f race); PORT=$PORT D=$D race" 2>"$T/race.err")"
	cat "$T/race.err"
	taskset -a -p -c 0-1023 "$DPID" >/dev/null 2>&1

	# bind mounts over a cached directory, then over the cached file
	mkdir -p "$D/a" "$T/other/a"
	echo "under the mount point" > "$D/a/f.txt"
	echo "from the other tree, mounted over" > "$T/other/a/f.txt"
	chmod 644 "$D/a/f.txt" "$T/other/a/f.txt"
	check "before: served from the cache" "1 hits, 0 wrong" \
		"$(python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" a/f.txt)"
	mount --bind "$T/other/a" "$D/a"
	check "directory bind-mounted over" "from the other tree, mounted over" "$(curl -s "$URL/a/f.txt")"
	check_log "the caches emptied, and why, in the log" "$T/err.log" \
		"caches emptied: the mount table changed"
	check "and again" "from the other tree, mounted over" "$(curl -s "$URL/a/f.txt")"
	umount "$D/a"
	check "unmounted" "under the mount point" "$(curl -s "$URL/a/f.txt")"
	check "unmounted, again" "under the mount point" "$(curl -s "$URL/a/f.txt")"
	mount --bind "$T/other/a/f.txt" "$D/a/f.txt"
	check "file bind-mounted over" "from the other tree, mounted over" "$(curl -s "$URL/a/f.txt")"
	umount "$D/a/f.txt"
	check "file unmounted" "under the mount point" "$(curl -s "$URL/a/f.txt")"
	# beneath a mount point from the start: served, never cached
	mkdir -p "$D/m"
	mount -t tmpfs tmpfs "$D/m"
	echo "on another mount" > "$D/m/f.txt"
	chmod 755 "$D/m"
	chmod 644 "$D/m/f.txt"
	check "beneath a mount point: served, not cached" "0 hits, 0 wrong" \
		"$(python3 "$top_srcdir/t/daemon/fcache-hits.py" "$PORT" "$D" m/f.txt)"
	umount "$D/m"
	stop_daemon

	# casefolded tree: keys are request paths, names on disk differ in case
	umount "$D"
	if mount -t tmpfs -o casefold tmpfs "$D" 2>/dev/null; then
		chmod 755 "$D"
		echo "first" > "$D/Name.txt"
		chmod 644 "$D/Name.txt"
		start_daemon --root "$D"
		check "casefold: cached" "first first" \
			"$(curl -s "$URL/name.txt" "$URL/name.txt" | tr '\n' ' ' | sed 's/ $//')"
		mv "$D/Name.txt" "$D/Old.txt"
		echo "second" > "$D/NAME.TXT"
		chmod 644 "$D/NAME.TXT"
		check "casefold: replaced under another case" "second" "$(curl -s "$URL/name.txt")"
		printf 'sidecar' | gzip > "$D/NAME.TXT.GZ"
		chmod 644 "$D/NAME.TXT.GZ"
		check "casefold: a sidecar in another case is used" "gzip" \
			"$(curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip' "$URL/name.txt" |
			   tr -d '\r' | sed -n 's/^Content-Encoding: //Ip')"
		stop_daemon
		umount "$D"
	else
		echo "# this kernel has no casefolded tmpfs: casefold case not run"
	fi
}

run_backends checks
