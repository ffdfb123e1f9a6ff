# etag = inode | mtime-size: two daemons serving two copies of one tree
# (cp -a keeps mtimes, not inodes) give the same ETags under mtime-size,
# for files read whole, from the small-file cache, through a sidecar and
# for listings, so that a validator from one node works on the other;
# under inode they differ.
. "$top_srcdir/t/daemon/lib.sh"

A=$T/a
mkdir -p "$A/d/sub"
printf 'small file, served from the cache once seen\n' > "$A/small.txt"
head -c 200000 /dev/urandom > "$A/big.bin"
printf 'text long enough to be worth compressing, text long enough\n' > "$A/f.txt"
gzip -c "$A/f.txt" > "$A/f.txt.gz"
touch -d '2024-01-02 03:04:05.123456789' "$A/small.txt" "$A/big.bin"
touch -d '2024-01-02 03:04:06' "$A/f.txt" "$A/f.txt.gz"
echo x > "$A/d/one"
ln -s one "$A/d/link"
# A directory that once held many names keeps its size on ext4 (and
# tmpfs counts entries): the copy's is smaller, though it lists the same.
for i in $(seq 1 400); do : > "$A/d/sub/placeholder-with-a-long-name-$i"; done
rm -f "$A/d/sub"/placeholder-*
echo y > "$A/d/sub/kept"
touch -d '2024-01-02 03:04:07' "$A/d/sub" "$A/d"
cp -a "$A" "$T/b"
B=$T/b
# a copy that kept whole seconds only (tar's ustar format, some sync
# tools): a file of B loses its nanoseconds, its directory keeps its time
touch -d "@$(stat -c %Y "$A/d/one")" "$B/d/one"
touch -d '2024-01-02 03:04:07' "$B/d"
if [ "$(stat -c %s "$A/d/sub")" = "$(stat -c %s "$B/d/sub")" ]; then
	echo "# note: this file system gives both copies of d/sub one size"
fi
check "the copy has other inodes" 1 \
	"$([ "$(stat -c %i "$A/small.txt")" != "$(stat -c %i "$B/small.txt")" ] && echo 1)"

# conf FILE ROOT ETAG
conf() {
	printf '[server]\nroot = %s\n%s\n' "$2" "${3:+etag = $3}" > "$1"
}

# etag URL-BASE PATH [curl args...]: the ETag header (a listing's also
# when it comes as a trailer)
etag() {
	local base=$1 p=$2
	shift 2
	curl -s -o /dev/null -D - "$@" "$base$p" | tr -d '\r' |
		awk -F': ' 'tolower($1) == "etag" { print $2 }'
}
# status URL-BASE PATH [curl args...]
status() {
	local base=$1 p=$2
	shift 2
	curl -s -o /dev/null -w '%{http_code}' "$@" "$base$p"
}

A_PID= B_PID=
eval "lib_$(declare -f cleanup)"
cleanup() {
	for p in $A_PID $B_PID; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	lib_cleanup
}
trap cleanup EXIT

# two_nodes ETAG: starts A on a copy and B on the other, both with
# etag = ETAG (empty: the default). Sets UA, UB.
two_nodes() {
	conf "$T/a.conf" "$A" "$1"
	conf "$T/b.conf" "$B" "$1"
	start_daemon -c "$T/a.conf"
	UA=$URL A_PID=$DPID DPID=
	start_daemon -c "$T/b.conf"
	UB=$URL B_PID=$DPID DPID=
}
stop_nodes() {
	local p rc
	for p in $A_PID $B_PID; do
		kill "$p"
		wait "$p"
		rc=$?
		check "node exits 0 on SIGTERM" 0 "$rc"
	done
	A_PID= B_PID=
}

# same NAME PATH [curl args...]: both nodes give one ETag, each
# node's is accepted by the other (304 for If-None-Match), and a
# request with the other node's tag in If-Match passes (200)
same() {
	local name=$1 p=$2
	shift 2
	local ea eb
	ea=$(etag "$UA" "$p" "$@")
	eb=$(etag "$UB" "$p" "$@")
	check_match "$name: A sends an ETag" '^(W/)?"' "$ea"
	check "$name: B's ETag is A's" "$ea" "$eb"
	check "$name: A's tag in If-None-Match -> 304 from B" 304 \
		"$(status "$UB" "$p" -H "If-None-Match: $ea" "$@")"
	check "$name: B's tag in If-None-Match -> 304 from A" 304 \
		"$(status "$UA" "$p" -H "If-None-Match: $eb" "$@")"
}

# nginx_tag FILE: nginx's ETag for FILE, "%x-%x" of mtime and size
nginx_tag() {
	printf '"%x-%x"' "$(stat -c %Y "$1")" "$(stat -c %s "$1")"
}

checks() {
	two_nodes mtime-size
	# twice: the first read fills the small-file cache, the second is
	# answered from it
	same "small file, read" /small.txt
	same "small file, cached" /small.txt
	check "small file: nginx's tag" "$(nginx_tag "$A/small.txt")" "$(etag "$UB" /small.txt)"
	same "large file" /big.bin
	check "large file: nginx's tag" "$(nginx_tag "$A/big.bin")" "$(etag "$UA" /big.bin)"
	same "gzip sidecar" /f.txt -H 'Accept-Encoding: gzip'
	check "gzip sidecar: its own tag" "$(nginx_tag "$A/f.txt.gz" | sed 's/"$/-gzip"/')" \
		"$(etag "$UA" /f.txt -H 'Accept-Encoding: gzip')"
	same "a copy without nanoseconds" /d/one
	same "HTML listing" /d/
	same "JSON listing" '/d/?format=json'
	same "listing of the grown directory" /d/sub/ -H 'Accept: application/json'
	local ea
	ea=$(etag "$UA" /big.bin)
	check "If-Range with A's tag -> 206 from B" 206 \
		"$(status "$UB" /big.bin -H "If-Range: $ea" -H 'Range: bytes=0-9')"
	check "If-Match with A's tag -> 200 from B" 200 \
		"$(status "$UB" /big.bin -H "If-Match: $ea")"
	# a new version on one node: its tag changes, and the old one no
	# longer validates there
	ea=$(etag "$UA" /small.txt)
	printf 'small file, served from the cache once seen, and changed\n' > "$B/small.txt"
	touch -d '2024-01-02 03:04:05.123456789' "$B/small.txt"
	check "a changed size: B's tag differs" 1 \
		"$([ "$(etag "$UB" /small.txt)" != "$ea" ] && echo 1)"
	check "a changed size: A's old tag -> 200 from B" 200 \
		"$(status "$UB" /small.txt -H "If-None-Match: $ea")"
	cp -a "$A/small.txt" "$B/small.txt"
	stop_nodes

	two_nodes ""
	local eb
	ea=$(etag "$UA" /small.txt)
	eb=$(etag "$UB" /small.txt)
	check_match "etag = inode (default): inode-size-mtime" '^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$' "$ea"
	check "etag = inode: the copies' tags differ" 1 "$([ "$ea" != "$eb" ] && echo 1)"
	check "etag = inode: A's tag -> 200 from B" 200 \
		"$(status "$UB" /small.txt -H "If-None-Match: $ea")"
	ea=$(etag "$UA" /big.bin)
	check "etag = inode: A's large-file tag -> 200 from B" 200 \
		"$(status "$UB" /big.bin -H "If-None-Match: $ea")"
	stop_nodes
}

run_backends checks
