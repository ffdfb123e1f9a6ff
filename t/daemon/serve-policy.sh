# What is served: [dir] listing = off and dotfiles hold for the path a
# request resolves to (through symlinks), hidden dotfiles answer 404,
# /.well-known is served, listings show only symlink targets beneath the
# root, and only regular files and directories are opened (FIFO, UNIX
# socket, device node: 403, never opened).
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/pub" "$D/private/sub" "$D/.git" "$D/.well-known/acme-challenge" \
	"$D/srv" "$D/all" "$D/special"
echo secret > "$D/private/x"
echo env > "$D/.env"
echo cfg > "$D/.git/config"
echo tok > "$D/.well-known/acme-challenge/t"
echo hi > "$D/pub/a.txt"
echo h > "$D/pub/.hid"
echo s > "$D/srv/.s"
echo v > "$D/srv/v"
echo l > "$D/all/.l"
ln -s ../private "$D/pub/plink"          # a way into a listing = off directory
ln -s ../.env "$D/pub/envlink"           # a visible name for a hidden file
ln -s ../.git "$D/pub/gitdir"
ln -s a.txt "$D/pub/rel"                 # beneath the root: target shown
ln -s /etc/passwd "$D/pub/abslink"       # absolute: never shown
ln -s ../../../../../../../../etc "$D/pub/uplink"   # escapes: never shown
ln -s .hid "$D/pub/hidlink"              # names a hidden file: not shown
mkfifo "$D/special/fifo"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$D/special/sock"
# a character device with no driver behind it: opening it fails (ENXIO)
DEV=
if mknod "$D/special/dev" c 240 77 2>/dev/null; then DEV=1; fi

cat > "$T/c.conf" <<EOF
[server]
root = $D
[dir "/private"]
listing = off
[dir "/srv"]
dotfiles = serve
[dir "/all"]
dotfiles = list
EOF
cat > "$T/off.conf" <<EOF
[server]
root = $D
[listing]
symlink_targets = off
EOF

json_targets() {
	curl -s "$URL/pub/?format=json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(sorted("%s=%s" % (e["name"], e.get("target", "-")) for e in d["entries"] if e["type"] == "symlink")))'
}

checks() {
	start_daemon -c "$T/c.conf"

	# listing = off holds for the directory, however it is reached
	check "listing = off: /private/" 403 "$(code /private/)"
	check "listing = off through a symlink" 403 "$(code /pub/plink/)"
	check "a sub-directory reached through a symlink" 403 "$(code /pub/plink/sub/)"
	check "files of a listing = off directory are served" 200 "$(code /pub/plink/x)"

	# dotfiles = off: hidden names are not served, whatever the path
	check "/.env" 404 "$(code /.env)"
	check "/.git/config" 404 "$(code /.git/config)"
	check "/.git/" 404 "$(code /.git/)"
	check "a visible symlink to a hidden file" 404 "$(code /pub/envlink)"
	check "a visible symlink to a hidden directory" 404 "$(code /pub/gitdir/config)"
	check "a hidden name and a missing one answer alike" 404 "$(code /.nosuch)"
	check "/.well-known is served" tok "$(curl -s "$URL/.well-known/acme-challenge/t")"
	check "dotfiles = serve: served" s "$(curl -s "$URL/srv/.s")"
	check "dotfiles = serve: not listed" "" "$(curl -s "$URL/srv/?format=ndjson" | grep '"\.s"')"
	check_match "dotfiles = list: listed" '"\.l"' "$(curl -s "$URL/all/?format=ndjson")"
	check "dotfiles = list: served" l "$(curl -s "$URL/all/.l")"

	# symlink targets: only those that resolve beneath the root
	check "symlink targets in the JSON listing" \
		"abslink=- envlink=- gitdir=- hidlink=- plink=../private rel=a.txt uplink=-" \
		"$(json_targets)"
	local html
	html=$(curl -s "$URL/pub/")
	check "no absolute target in the HTML listing" "" "$(printf '%s' "$html" | grep -o '/etc/passwd\|\.\./\.\./\.\.')"
	check_match "a target beneath the root in the HTML listing" 'rel</a><span class=l> .* a\.txt' "$html"

	# only regular files and directories
	local w
	python3 -c 'import sys, time; f = open(sys.argv[1], "w"); print("opened", flush=True)' \
		"$D/special/fifo" > "$T/writer.out" 2>/dev/null &
	w=$!
	# wait until the writer sits in its open (openat is syscall 257 on
	# x86-64, 56 on arm64), so that a reader's open would release it
	local i
	for i in $(seq 1 100); do
		case "$(cat "/proc/$w/syscall" 2>/dev/null)" in 257\ *|56\ *) sleep 0.2; break ;; esac
		sleep 0.05
	done
	check "FIFO: 403" 403 "$(code /special/fifo)"
	sleep 0.5
	check "FIFO: never opened (its writer still waits)" "" "$(cat "$T/writer.out")"
	kill "$w" 2>/dev/null
	wait "$w" 2>/dev/null
	check "UNIX socket: 403" 403 "$(code /special/sock)"
	if [ -n "$DEV" ]; then
		check "device node: 403" 403 "$(code /special/dev)"
	else
		echo "# (not root: no device node)"
	fi
	check "a file next to them is served" 200 "$(code /pub/a.txt)"
	check "nothing in the error log" "" "$(grep -v '\[notice\]' "$T/daemon.err" | grep -v "running as root without 'user'")"

	stop_daemon
	start_daemon -c "$T/off.conf"
	check "symlink_targets = off" \
		"abslink=- envlink=- gitdir=- hidlink=- plink=- rel=- uplink=-" "$(json_targets)"
}

run_backends checks
