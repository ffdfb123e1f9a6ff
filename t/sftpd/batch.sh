#!/bin/sh
# OpenSSH's sftp in batch mode talks to fsd-sftp on stdin/stdout
# (sftp -D, as sshd runs a subsystem): it lists, stats (ls -l of one
# file), gets files and a whole directory, and reports errors.
. "$top_srcdir/t/sftpd/lib.sh"
need sftp diff

SRC=$T/src
mkdir -p "$SRC/dir/sub" "$T/got"
printf 'hello\n' > "$SRC/a.txt"
head -c 700000 /dev/urandom > "$SRC/dir/big.bin"
printf 'deep\n' > "$SRC/dir/sub/deep.txt"
ln -s a.txt "$SRC/link"
python3 -c '
import os, sys
for i in range(700):
    open(os.path.join(sys.argv[1], "f%03d" % i), "w").close()
' "$SRC/dir/sub"

run_sftp() { # batch file; output in $T/out
	timeout 30 sftp -b "$1" -D "$SFTPD -r $SRC" > "$T/out" 2>"$T/err"
}

for backend in uring threads; do
	echo "# backend $backend"
	export FIBRIL_BACKEND=$backend
	rm -rf "$T/got"/*
	cat > "$T/b1" <<EOB
ls -1 /
ls -l /a.txt
ls -1 /dir/sub
cd /dir
pwd
get big.bin $T/got/big.bin
get /a.txt $T/got/a.txt
get -r /dir $T/got/dir
get /link $T/got/link
EOB
	if run_sftp "$T/b1"; then ok "sftp -b runs the batch"; else
		not_ok "sftp -b runs the batch: $(cat "$T/err")"; fi
	check "ls lists the root" "/a.txt /dir /link" "$(sed -n '/^sftp> ls -1 \/$/,/^sftp>/p' "$T/out" | grep -v '^sftp>' | tr -s ' \n' ' ' | sed 's/ $//')"
	check_line=$(grep -E '^-rw-r--r-- .* 6 .*a\.txt$' "$T/out" | wc -l)
	check "ls -l of one file gives its mode and size" 1 "$check_line"
	check "ls lists 700 names" 700 "$(sed -n '/^sftp> ls -1 \/dir\/sub$/,/^sftp>/p' "$T/out" | grep -c '^/dir/sub/f[0-9]')"
	check "pwd after cd" "Remote working directory: /dir" "$(grep '^Remote working' "$T/out")"
	cmp -s "$SRC/dir/big.bin" "$T/got/big.bin" && ok "get a large file" || not_ok "get a large file"
	cmp -s "$SRC/a.txt" "$T/got/a.txt" && ok "get a small file" || not_ok "get a small file"
	cmp -s "$SRC/a.txt" "$T/got/link" && ok "get through a symlink" || not_ok "get through a symlink"
	diff -r "$SRC/dir" "$T/got/dir" >/dev/null && ok "get -r of a directory" || not_ok "get -r of a directory"

	printf 'get /missing %s/x\n' "$T/got" > "$T/b2"
	if run_sftp "$T/b2"; then not_ok "a missing file fails the batch"; else
		check "a missing file is reported" 1 "$(grep -c 'not found' "$T/err")"; fi
	printf 'put %s/a.txt /new.txt\n' "$SRC" > "$T/b3"
	if run_sftp "$T/b3" || [ -e "$SRC/new.txt" ]; then not_ok "put is refused"; else
		check "put is refused" 1 "$(grep -c -i 'permission denied' "$T/err")"; fi
done
finish
