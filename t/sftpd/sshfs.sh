#!/bin/sh
# Debian's sshfs mounts fsd-sftp (sshfs -o directport=PORT) and what it
# shows agrees with the tree served: ls -l (mode, size, mtime, name),
# find, cp -r then diff -r, readlink; writes are refused.
. "$top_srcdir/t/sftpd/lib.sh"
need sshfs fusermount3 diff find
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

SRC=$T/src
mkdir -p "$SRC" "$T/mnt"
# A copy of part of the source tree (the tree itself changes while the
# build runs), plus names and kinds the copy lacks.
cp -r "$top_srcdir/fibril" "$top_srcdir/proto" "$top_srcdir/man" "$SRC/"
mkdir -p "$SRC/empty dir" "$SRC/deep/a/b/c"
printf 'x' > "$SRC/deep/a/b/c/leaf"
printf 'caf\303\251\n' > "$SRC/caf$(printf '\303\251').txt"
head -c 1000000 /dev/urandom > "$SRC/big.bin"
ln -s fibril/async.c "$SRC/link"
ln -s missing "$SRC/dangling"

MOUNTED=
umount_sshfs() {
	[ -n "$MOUNTED" ] && { fusermount3 -u "$T/mnt" 2>/dev/null || fusermount3 -u -z "$T/mnt"; }
	MOUNTED=
}
trap 'umount_sshfs; cleanup' EXIT

lsl() { # mode size mtime name, of every entry
	(cd "$1" && ls -lA --time-style=+%s . | awk 'NR > 1 { print $1, $5, $6, $7 }')
}

for backend in uring threads; do
	echo "# backend $backend"
	FIBRIL_BACKEND=$backend start_sftpd "$SRC"
	if ! timeout 20 sshfs -o directport="$SPORT" 127.0.0.1:/ "$T/mnt" 2>"$T/sshfs.err"; then
		cat "$T/sshfs.err"
		if grep -q 'fuse: device not found\|Operation not permitted' "$T/sshfs.err"; then
			echo "SKIP: FUSE not usable"
			exit 77
		fi
		not_ok "sshfs mounts fsd-sftp"
		break
	fi
	MOUNTED=1
	check "ls -l agrees" "$(lsl "$SRC")" "$(lsl "$T/mnt")"
	check "ls -l of a subdirectory agrees" "$(lsl "$SRC/fibril")" "$(lsl "$T/mnt/fibril")"
	check "find agrees" "$(cd "$SRC" && find . | sort)" "$(cd "$T/mnt" && find . | sort)"
	check "find -type f agrees" "$(cd "$SRC" && find . -type f | sort)" "$(cd "$T/mnt" && find . -type f | sort)"
	rm -rf "$T/copy"
	if cp -r "$T/mnt" "$T/copy" 2>"$T/cp.err"; then ok "cp -r"; else
		# cp -r follows no link but copies the dangling one as a link: it
		# must succeed.
		not_ok "cp -r: $(cat "$T/cp.err")"; fi
	if diff -r --no-dereference "$SRC" "$T/copy" > "$T/diff.out" 2>&1; then ok "diff -r of the copy"; else
		not_ok "diff -r of the copy: $(head -n 5 "$T/diff.out")"; fi
	if diff -r --no-dereference "$SRC" "$T/mnt" > "$T/diff.out" 2>&1; then ok "diff -r of the mount"; else
		not_ok "diff -r of the mount: $(head -n 5 "$T/diff.out")"; fi
	if diff -r "$SRC/fibril" "$T/mnt/fibril" > "$T/diff.out" 2>&1; then ok "diff -r of a subtree, following links"; else
		not_ok "diff -r of a subtree: $(head -n 5 "$T/diff.out")"; fi
	check "readlink" "fibril/async.c" "$(readlink "$T/mnt/link")"
	if touch "$T/mnt/new" 2>/dev/null || [ -e "$SRC/new" ]; then
		not_ok "a write is refused"; else ok "a write is refused"; fi
	umount_sshfs
	stop_sftpd
done
finish
