# t/daemon/fcache_lib.sh: sourced by the small-file cache tests after
# lib.sh. Writes the test's config header to $conf (as root, the daemon
# serves as nobody: root reads a mode-000 file anyway) and defines put
# and same.

conf=$T/fsd.conf
echo "[server]" > "$conf"
if [ "$(id -u)" = 0 ]; then
	id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
	echo "user = nobody" >> "$conf"
	chmod 755 "$T"
fi

# put FILE: a fresh 827-byte body, different each time
n=0
put() {
	n=$((n + 1))
	python3 -c 'import sys; sys.stdout.write(("%06d" % int(sys.argv[1]) + "x" * 819 + "\n"))' "$n" > "$1"
	chmod 644 "$1"
}

# same NAME LABEL [FILE]: GET twice, both byte-identical to FILE
# (default: $D/NAME) as it is now on disk
same() {
	local i f=${3:-$D/$1}
	for i in 1 2; do
		curl -s -o "$T/got" "$URL/$1"
		if cmp -s "$T/got" "$f"; then ok "$2 (fetch $i)"
		else not_ok "$2 (fetch $i): body differs from $f"; fi
	done
}
