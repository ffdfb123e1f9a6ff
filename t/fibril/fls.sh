#!/bin/sh
# contrib/examples/fls prints what `LC_ALL=C ls -l` prints (no ACLs here).
set -u
fls="$top_builddir/contrib/examples/fls"
[ -x "$fls" ] || { echo "no $fls"; exit 77; }
command -v ls >/dev/null || exit 77
# A private parent: `ls -la` shows "..", whose link count must not move
# while other tests create directories next to ours.
top=$(mktemp -d "${TMPDIR:-/tmp}/flstest.XXXXXX") || exit 1
trap 'rm -rf "$top"' EXIT INT TERM
d=$top/d
mkdir "$d" "$d/sub" "$d/sub2"
printf 'hello\n' > "$d/file"
head -c 123456 /dev/zero > "$d/big"
: > "$d/empty"
: > "$d/.hidden"
ln -s file "$d/link"
ln -s /etc/passwd "$d/abs"
ln -s nowhere "$d/dangling"
ln "$d/file" "$d/hardlink"
chmod 4755 "$d/big"; chmod 1777 "$d/sub2"; chmod 640 "$d/empty"
touch -d '2001-02-03 04:05:06' "$d/empty"
touch -h -d '2030-01-01 00:00:00' "$d/dangling"
i=0; while [ $i -lt 300 ]; do : > "$d/n$i"; i=$((i+1)); done
chown 12345:54321 "$d/n7" 2>/dev/null
fail=0
for flags in "" "-a"; do
	LC_ALL=C ls -l $flags "$d" > "$top/want" 2>&1
	"$fls" $flags "$d" > "$top/got" 2>&1
	if ! cmp -s "$top/want" "$top/got"; then
		echo "fls $flags differs from ls -l $flags:"
		diff "$top/want" "$top/got" | head -20
		fail=1
	fi
done
exit $fail
