# A file system error the client cannot cause or fix (EIO, from slowfs,
# the FUSE test filesystem, on names ending in .eio) is a 500 with the
# generic page: the error log has the path and the errno text, the
# response neither; the connection stays usable and other requests are
# served.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

D=$T/root
mkdir -p "$D/fs" "$T/back/dir.eio" "$T/back/sub"
printf 'good\n' > "$T/back/good.txt"
printf 'secret\n' > "$T/back/bad.eio"
printf 'inner\n' > "$T/back/dir.eio/inner.txt"
printf 'x\n' > "$T/back/sub/index.eio"
printf 'fast\n' > "$D/fast.txt"

slowfs_for_test --delay-ms 0 "$T/back" "$D/fs"

checks() {
	rm -f "$T/err.log"
	printf '[server]\nroot = %s\nerror_log = %s\nindex = index.eio\n' \
		"$D" "$T/err.log" > "$T/c.conf"
	start_daemon -c "$T/c.conf"

	check "a good file on the same mount" good "$(curl -s "$URL/fs/good.txt")"
	check "EIO on the file: 500" 500 "$(code /fs/bad.eio)"
	check "EIO on a directory on the way: 500" 500 "$(code /fs/dir.eio/inner.txt)"
	check "EIO on the index file: 500" 500 "$(code /fs/sub/)"
	check "HEAD: 500" 500 "$(code /fs/bad.eio -I)"

	local body
	body=$(curl -s "$URL/fs/bad.eio")
	check_match "500 page is the generic one" "<h1>500 Internal Server Error</h1>" "$body"
	case $body in
	*bad.eio*|*"Input/output"*|*secret*|*"$T"*)
		not_ok "500 page shows the path, the error or the data: $body" ;;
	*)	ok "500 page shows neither path nor errno" ;;
	esac

	if wait_for "$T/err.log" "bad\.eio: Input/output error"; then ok "error log has the path and errno"
	else not_ok "error log lacks 'bad.eio: Input/output error': $(cat "$T/err.log" 2>/dev/null)"; fi
	if wait_for "$T/err.log" "dir\.eio.*Input/output error"; then ok "error log has the directory path"
	else not_ok "error log lacks 'dir.eio ... Input/output error'"; fi

	curl -sv -o /dev/null -o /dev/null "$URL/fs/bad.eio" "$URL/fast.txt" 2>"$T/v"
	check_match "keep-alive after a 500" "Re-using existing connection" "$(cat "$T/v")"
	check "still serving" fast "$(curl -s "$URL/fast.txt")"
	check "EIO again: still 500 (nothing cached)" 500 "$(code /fs/bad.eio)"
}

run_backends checks
