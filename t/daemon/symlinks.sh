# The symlinks policies (symlinks = beneath | follow | if_owner_match |
# never) and allow trees, on a real daemon with curl: links inside the
# root to a file and a directory, links to /etc/passwd and to /, the
# usual deployment www/data -> a tree elsewhere served under beneath +
# allow (file, listing, index) while that tree's own escaping links stay
# refused, owners compared link by link under if_owner_match, and the
# configuration errors of the two keys.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/daemon/reload_lib.sh"

W=$T/www
N=$T/nfsdata
O=$T/outside
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: chown -h needs root"; exit 77; }
[ -r /etc/passwd ] || { echo "SKIP: no /etc/passwd"; exit 77; }

mkdir -p "$W/sub" "$N/dir" "$N/site" "$N/.git" "$O"
echo "root file" > "$W/file.txt"
echo "inner" > "$W/sub/inner.txt"
ln -s file.txt "$W/lfile"
ln -s sub "$W/ldir"
ln -s /etc/passwd "$W/passwd"
ln -s / "$W/slash"
ln -s ../outside "$W/up"
ln -s "$N" "$W/data"                 # the usual deployment
ln -s ../nfsdata "$W/rdata"          # the same, relative
ln -s "$N/.git" "$W/pub"             # a hidden directory of the tree
echo "nfs file" > "$N/f.txt"
echo a > "$N/dir/a.txt"
echo b > "$N/dir/b.txt"
echo "<p>nfs index</p>" > "$N/site/index.html"
echo "git config" > "$N/.git/config"
ln -s /etc/passwd "$N/esc"           # the tree's own links may not leave it
ln -s ../outside "$N/esc2"
ln -s f.txt "$N/inlink"              # ... but may stay inside
ln -s "$W/file.txt" "$N/back"        # ... and not lead back into the root
ln -s data "$W/chain"                # a link inside the root to the link out
ln -s loop2 "$W/loop1"
ln -s loop1 "$W/loop2"
ln -s nothere "$W/dangling"
# ".." in targets: from a subdirectory up and out into the tree; after a
# component of the target (left to the kernel, beneath the tree); one
# that climbs out of the tree
ln -s ../../nfsdata/f.txt "$W/sub/deep"
ln -s "$N/dir/../site" "$W/odd"
ln -s "$N/../outside" "$W/odd2"
echo "secret" > "$O/secret"
# a directory large enough (its own size) that its listing streams and
# opens its scan later, from the loop
mkdir "$N/big"
python3 -c 'import sys
for i in range(9000): open("%s/f%05d" % (sys.argv[1], i), "w").close()' "$N/big"
# a precompressed sidecar that is a symlink (newer than its file)
echo "side plain" > "$W/side.txt"
echo "side plain" | gzip -c > "$W/sub/side.txt.gz"
touch -d '+1 minute' "$W/sub/side.txt.gz"
ln -s sub/side.txt.gz "$W/side.txt.gz"
# if_owner_match: links owned by nobody, to root's files and to nobody's
ln -s file.txt "$W/owned" && chown -h nobody "$W/owned"
ln -s /etc/passwd "$W/npasswd" && chown -h nobody "$W/npasswd"
ln -s / "$W/nslash" && chown -h nobody "$W/nslash"
echo "nobody's" > "$O/nob.txt" && chown nobody "$O/nob.txt"
ln -s ../outside/nob.txt "$W/nob" && chown -h nobody "$W/nob"

PASSWD_SUM=$(sha256sum < /etc/passwd)

# conf POLICY [allow line]: writes $T/fsd.conf (with a listen line if
# LISTEN is set)
conf() {
	{
		echo "[server]"
		echo "root = $W"
		echo "symlinks = $1"
		[ -n "${2:-}" ] && echo "$2"
		[ -n "${LISTEN:-}" ] && echo "listen = $LISTEN"
		echo "[listing]"
		echo "default_format = json"
	} > "$T/fsd.conf"
}

body() { curl -s "$URL$1"; }
# the Content-Encoding of PATH asked with Accept-Encoding: gzip
coding() {
	curl -s -o /dev/null -D - -H 'Accept-Encoding: gzip' "$URL$1" |
		tr -d '\r' | awk -F': ' 'tolower($1) == "content-encoding" { print $2 }'
}

# status checks for a list of "PATH CODE" pairs
codes() {
	local label=$1 p c
	shift
	while [ $# -gt 0 ]; do
		p=$1 c=$2
		shift 2
		check "$label: $p" "$c" "$(code "$p")"
	done
}

beneath_checks() {
	conf beneath
	start_daemon -c "$T/fsd.conf"
	codes beneath /file.txt 200 /lfile 200 /ldir/inner.txt 200 /ldir/ 200 \
		/passwd 404 /slash/etc/passwd 404 /slash/ 404 /up/secret 404 \
		/data/f.txt 404 /rdata/f.txt 404
	check "beneath: link inside to a file" "root file" "$(body /lfile)"
	check "beneath: a sidecar through a link inside" gzip "$(coding /side.txt)"
	check_match "beneath: listing shows a target beneath the root" \
		'"name":"lfile"[^}]*"target":"file.txt"' "$(body /)"
	stop_daemon

	conf beneath "allow = $N"
	start_daemon -c "$T/fsd.conf"
	codes allow /data/f.txt 200 /rdata/f.txt 200 /data/dir/ 200 /data/site/ 200 \
		/data/inlink 200 /data/esc 404 /data/esc2 404 /data/esc2/secret 404 \
		/passwd 404 /slash/etc/passwd 404 /slash/ 404 /up/secret 404 \
		/pub/config 404 /data/.git/config 404 /lfile 200 /ldir/inner.txt 200 \
		/data/back 404 /chain/f.txt 200 /chain/dir/ 200 /loop1 403 /dangling 404 \
		/sub/deep 200 /odd/ 200 /odd2/secret 404
	check "allow: .. in a target, applied beneath the tree" "<p>nfs index</p>" "$(body /odd/)"
	check "allow: file through the link" "nfs file" "$(body /data/f.txt)"
	check "allow: relative link into the tree" "nfs file" "$(body /rdata/f.txt)"
	check "allow: index file in the tree" "<p>nfs index</p>" "$(body /data/site/)"
	check "allow: a large listing in the tree, streamed" 9000 \
		"$(body '/data/big/?format=ndjson' | grep -c '"name":"f')"
	local l
	l=$(body /data/dir/)
	check_match "allow: listing of a directory in the tree" '"name":"a.txt"' "$l"
	check_match "allow: listing has every entry" '"name":"b.txt"' "$l"
	l=$(body /data/)
	check_match "allow: listing shows a target inside the tree" \
		'"name":"inlink"[^}]*"target":"f.txt"' "$l"
	if printf '%s' "$l" | grep -q '"target":"/etc/passwd"'; then
		not_ok "allow: listing shows a target outside the tree"
	else ok "allow: no target outside the tree in the listing"; fi
	# not cached through the link: a change is seen at once
	body /data/f.txt >/dev/null
	body /data/f.txt >/dev/null
	echo "nfs changed" > "$N/f.txt.new" && mv "$N/f.txt.new" "$N/f.txt"
	check "allow: a change in the tree is served at once" "nfs changed" "$(body /data/f.txt)"
	echo "nfs file" > "$N/f.txt"
	stop_daemon

	# [dir] sections hold for the URL path of a file in an allow tree
	conf beneath "allow = $N"
	printf '[dir "/data/dir"]\nlisting = off\n' >> "$T/fsd.conf"
	start_daemon -c "$T/fsd.conf"
	codes "allow, [dir]" /data/dir/ 403 /data/dir/a.txt 200 /data/ 200
	stop_daemon
}

follow_checks() {
	conf follow
	start_daemon -c "$T/fsd.conf"
	codes follow /lfile 200 /ldir/ 200 /passwd 200 /slash/etc/passwd 200 \
		/data/f.txt 200 /data/esc 200 /up/secret 200
	check "follow: /etc/passwd through a link" "$PASSWD_SUM" "$(body /passwd | sha256sum)"
	check "follow: the URL cannot climb above the root" 400 "$(code /../etc/passwd)"
	check "follow: nor with %2e%2e" 400 "$(code /%2e%2e/etc/passwd)"
	check "follow: index through the link" "<p>nfs index</p>" "$(body /data/site/)"
	check_match "follow: listing of a directory outside the root" '"name":"a.txt"' \
		"$(body /data/dir/)"
	stop_daemon
}

owner_checks() {
	conf if_owner_match
	start_daemon -c "$T/fsd.conf"
	# root's links to root's files (the daemon's own tree) are followed,
	# wherever they lead; nobody's links to root's files are not
	codes if_owner_match /lfile 200 /ldir/inner.txt 200 /passwd 200 \
		/owned 403 /npasswd 403 /nslash/etc/passwd 403 /nslash/ 403 /nob 200 \
		/dangling 404 /loop1 403
	check "if_owner_match: same owners, outside the root" "nobody's" "$(body /nob)"
	check "if_owner_match: same owners" "root file" "$(body /lfile)"
	stop_daemon
}

never_checks() {
	conf never
	start_daemon -c "$T/fsd.conf"
	codes never /file.txt 200 /sub/inner.txt 200 /sub/ 200 /lfile 403 /ldir/ 403 \
		/ldir/inner.txt 403 /passwd 403 /slash/etc/passwd 403 /data/f.txt 403
	check "never: no sidecar through a symlink" "" "$(coding /side.txt)"
	check "never: the file itself instead" "side plain" "$(body /side.txt)"
	if body / | grep -q '"target"'; then
		not_ok "never: listing shows a symlink target"
	else ok "never: listing shows no symlink target"; fi
	stop_daemon
}

conf_checks() {
	local out rc
	printf '[server]\nroot = %s\nsymlinks = maybe\n' "$W" > "$T/bad.conf"
	out=$("$FSD" -t -c "$T/bad.conf" 2>&1); rc=$?
	check "bad symlinks: -t exits 1" 1 "$rc"
	check_match "bad symlinks: file:line" \
		"^$T/bad.conf:3: symlinks: expected beneath, follow, if_owner_match or never, got 'maybe'" "$out"
	printf '[server]\nroot = %s\n\nallow = %s\n' "$W" "$W/file.txt" > "$T/bad.conf"
	out=$("$FSD" -t -c "$T/bad.conf" 2>&1); rc=$?
	check "allow a file: -t exits 1" 1 "$rc"
	check_match "allow a file: file:line" "^$T/bad.conf:4: allow $W/file.txt: not a directory" "$out"
	printf '[server]\nroot = %s\nallow = %s\n' "$W" "$T/missing" > "$T/bad.conf"
	out=$("$FSD" -t -c "$T/bad.conf" 2>&1)
	check_match "allow missing: file:line" "^$T/bad.conf:3: allow $T/missing: No such file" "$out"
	printf '[server]\nroot = %s\nallow = relative/path\n' "$W" > "$T/bad.conf"
	out=$("$FSD" -t -c "$T/bad.conf" 2>&1)
	check_match "allow relative: file:line" "^$T/bad.conf:3: allow: expected an absolute" "$out"
	printf '[server]\nroot = %s\nsymlinks = follow\nallow = %s\n' "$W" "$N" > "$T/bad.conf"
	out=$("$FSD" -t -c "$T/bad.conf" 2>&1)
	check_match "allow without beneath: file:line" \
		"^$T/bad.conf:4: allow: only used with symlinks = beneath" "$out"
	printf '[server]\nroot = %s\nallow = %s "%s"\nallow = /\n' "$W" "$N" "$O" > "$T/ok.conf"
	out=$("$FSD" -t -c "$T/ok.conf" 2>&1); rc=$?
	check "allow as a list, quoted, repeated: valid" 0 "$rc"
}

# The policy and the allow trees change at a reload; a tree that is not
# a directory keeps the previous configuration.
reload_checks() {
	local LISTEN=127.0.0.1:$(free_port)
	conf beneath
	start_conf "$T/fsd.conf" "${LISTEN#*:}"
	check "reload: before, no allow tree" 404 "$(code /data/f.txt)"
	conf beneath "allow = $N"
	reload
	check "reload: allow tree added" 200 "$(code /data/f.txt)"
	conf beneath "allow = $W/file.txt"
	reload
	check_log "reload: a bad allow tree, file:line in the log" "$T/daemon.err" \
		"\\[error\\] $T/fsd.conf:4: allow $W/file.txt: not a directory"
	check "reload: the previous trees still serve" 200 "$(code /data/f.txt)"
	conf never
	reload
	check "reload: never now" 403 "$(code /data/f.txt)"
	check "reload: never, a plain file" 200 "$(code /file.txt)"
	stop_daemon
}

checks() {
	reload_checks
	beneath_checks
	follow_checks
	owner_checks
	never_checks
}

conf_checks
run_backends checks
