# A mount point inside a listed directory: its attributes are those of
# the mounted file system's root, which changes without an inotify event
# on a FUSE (or network) file system. The listing cache keeps no
# listing that shows one, and attrs_from_lookup (on by default) asks
# the file system for a mount root's attributes instead of taking the
# last ones it gave: every listing shows the root's current mtime.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

D=$T/root
mkdir -p "$D/L/fm" "$T/back"
printf 'a\n' > "$D/L/plain"
printf 'b\n' > "$T/back/inner"

slowfs_for_test --delay-ms 0 "$T/back" "$D/L/fm"

# fm's mtime as the listing shows it, in whole seconds
listed_mtime() {
	curl -s "$URL/L/?format=json" | python3 -c '
import json, sys
for e in json.load(sys.stdin)["entries"]:
    if e["name"] == "fm":
        print(int(e["mtime"]))'
}

checks() {
	rm -f "$T/err.log"
	printf '[server]\nroot = %s\nerror_log = %s\nlog_level = debug\n' \
		"$D" "$T/err.log" > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	local i want got
	for i in 1 2 3; do listed_mtime >/dev/null; done
	for i in 1 2; do
		# a change behind the FUSE mount moves its root's mtime
		sleep 1.1
		printf 'x\n' > "$T/back/made-$i-${FIBRIL_BACKEND:-default}"
		want=$(stat -c %Y "$MNT")
		got=$(listed_mtime)
		check "change $i behind the mount: the listing shows it" "$want" "$got"
	done
	if grep -q "listing of /L/ from the cache" "$T/err.log"; then
		not_ok "a listing showing a mount point was kept"
	else
		ok "no listing showing a mount point was kept"
	fi
	check "a plain file next to it is served" a "$(curl -s "$URL/L/plain")"
}

run_backends checks
