# A hung mount never stops the worker: with more calls waiting on a
# slow FUSE file system than the async engine's parallelism limit
# (4,096), further calls wait in the engine's queue instead of running
# on the worker thread, so a request for a file on the fast root is
# still answered at once.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

N=4300
ulimit -n 20000 2>/dev/null || { echo "SKIP: cannot raise the open file limit"; exit 77; }

D=$T/root
mkdir -p "$D/slow" "$T/back"
printf 'fast\n' > "$D/fast.txt"
for i in $(seq 1 20); do printf '%s\n' "$i" > "$T/back/f$i"; done

MNT=
umount_slow() {
	[ -n "$MNT" ] && slowfs_umount "$MNT" "$SLOWFS_PID"
	MNT=
}
trap 'umount_slow; cleanup' EXIT

checks() {
	slowfs_mount --delay-ms 15000 -o max_threads=64 "$T/back" "$D/slow"
	local rc=$?
	[ $rc = 77 ] && { echo "SKIP: cannot mount slowfs"; exit 77; }
	[ $rc = 0 ] || { echo "slowfs_mount failed"; exit 99; }
	MNT=$D/slow
	printf '[server]\nroot = %s\nworkers = 1\nmax_connections = 5000\nmax_connections_per_ip = 0\nrequest_timeout = 30\nheader_timeout = 30\n' \
		"$D" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	check "fast file served before" fast "$(curl -s --max-time 5 "$URL/fast.txt")"
	# N requests for files on the slow mount, all left pending.
	python3 - "$PORT" "$N" > "$T/flood.out" 2>&1 <<'PY' &
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /slow/f%d HTTP/1.1\r\nHost: x\r\n\r\n" % (i % 20 + 1))
    socks.append(s)
print("sent", flush=True)
time.sleep(12)
PY
	local fp=$! i
	for i in $(seq 1 200); do grep -q sent "$T/flood.out" && break; sleep 0.1; done
	check "flood sent" sent "$(cat "$T/flood.out")"
	sleep 1
	local got= t0 t1
	t0=$(date +%s)
	got=$(curl -s --max-time 5 "$URL/fast.txt")
	t1=$(date +%s)
	check "fast file served while $N requests wait on the slow mount" fast "$got"
	echo "# answered in $((t1 - t0)) s"
	kill "$fp" 2>/dev/null
	wait "$fp" 2>/dev/null
	# Stopping waits for the calls in flight (their buffers are ours),
	# so up to the mount's delay; bounded all the same.
	kill "$DPID"
	local k
	for k in $(seq 1 300); do
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$DPID" 2>/dev/null && kill -9 "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	umount_slow
}

run_backends checks
