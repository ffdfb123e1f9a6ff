# Descriptors: the connection limit is sized from RLIMIT_NOFILE (raised
# to the hard limit first) with descriptors kept for the files of the
# connections admitted, so that under a low `ulimit -n` every request
# gets 200 or 503 (connection refused at the limit, or no descriptor
# for its file), never 500. What the connections leave goes to the
# file cache's open files, so that a working set of large files larger
# than 1/64 of the limit stays open.
. "$top_srcdir/t/daemon/lib.sh"
need prlimit

D=$T/root
mkdir -p "$D"
head -c 8388608 /dev/zero > "$D/big.bin"
printf '[server]\nroot = %s\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"

# 150 connections at once, each asking for a large file and reading
# nothing for a second, so that every admitted one holds its file open.
many() {
	python3 - "$PORT" <<'PY'
import socket, sys, time, collections
port = int(sys.argv[1])
socks = []
for _ in range(150):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(s)
time.sleep(1)
codes = collections.Counter()
for s in socks:
    s.settimeout(5)
    try:
        line = s.recv(64).split(b"\r\n")[0].decode("latin-1")
        codes[line.split(" ")[1] if line.startswith("HTTP/") else "none"] += 1
    except OSError:
        codes["none"] += 1
    s.close()
print(" ".join("%s:%d" % kv for kv in sorted(codes.items())))
PY
}

# limited SOFT:HARD: FSD becomes fileserverd under that RLIMIT_NOFILE.
limited() {
	printf '#!/bin/sh\nexec prlimit --nofile=%s %s "$@"\n' "$1" "$top_builddir/fileserverd" > "$T/fsd-$1"
	chmod +x "$T/fsd-$1"
	FSD=$T/fsd-$1
}

checks() {
	# soft = hard: raising the soft limit cannot help here.
	limited 256:256
	start_daemon -c "$T/c.conf"
	local r
	r=$(many)
	echo "# statuses: $r"
	check "only 200 and 503 under a low open file limit" "" \
		"$(printf '%s\n' $r | grep -Ev '^(200|503):')"
	check_match "connections beyond the limit refused with 503" '503:[0-9]+' "$r"
	check_match "admitted connections served" '^200:[0-9]+' "$r"
	check_log "connection limit sized from the open file limit" "$T/err.log" \
		"max_connections lowered from 4096 to [0-9]+ per worker: open file limit 256"
	check_log "refusals logged" "$T/err.log" "refused [0-9]+ connections? with 503"
	check "still serving" 206 "$(code /big.bin -r 0-9)"
	stop_daemon

	# A soft limit below the hard one is raised.
	limited 128:4096
	start_daemon -c "$T/c.conf"
	check_log "soft limit raised to the hard one" "$T/err.log" "open file limit 4096"
	check_log "a short limit: the cache keeps 1/64 of it" "$T/err.log" \
		" 64 open files in the file cache; open file limit 4096"
	stop_daemon

	# 20,000 descriptors, 4,096 connections: the cache may keep as many
	# files open as it has entries (fcache_entries, 2,048), and 400
	# large files (more than 1/64 of the limit) asked twice in turn are
	# 400 misses, then 400 hits.
	limited 20000:20000
	mkdir -p "$D/ws"
	for i in $(seq 400); do head -c 70000 /dev/urandom > "$D/ws/$i.bin"; done
	LISTEN_FLAGS=status start_daemon -c "$T/c.conf"
	check_log "a long limit: the cache keeps its most" "$T/err.log" \
		"4096 connections per worker, .* 2048 open files in the file cache; open file limit 20000"
	local urls=() i
	for i in $(seq 400); do urls+=("$URL/ws/$i.bin"); done
	curl -s "${urls[@]}" >/dev/null
	curl -s "${urls[@]}" >/dev/null
	check "400 large files asked twice: 400 misses, 400 hits" "400 400" \
		"$(curl -s "$URL/metrics" | awk '/^fileserverd_fcache_(misses|hits)_total / { v[$1] = $2 }
			END { print v["fileserverd_fcache_misses_total"], v["fileserverd_fcache_hits_total"] }')"
	stop_daemon
	printf 'fcache_entries = 100\n' >> "$T/c.conf"
	start_daemon -c "$T/c.conf"
	check_log "no more open files than entries" "$T/err.log" \
		" 100 open files in the file cache; open file limit 20000"
	stop_daemon
}

checks
echo "# $fails failed"
[ "$fails" = 0 ]
