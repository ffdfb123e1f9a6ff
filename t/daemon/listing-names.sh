# Listings of hostile names (spaces, quotes, <, &, %, #, ?, +, :,
# newlines, control bytes, invalid UTF-8): every format gives the exact
# bytes back (HTML links percent-decoded, JSON name or name_pct), every
# link fetches its file, the HTML page is valid UTF-8; and crawlers
# (wget -r -np, rclone lsf over :http:) walk a tree through the HTML
# listings and find exactly its files.
. "$top_srcdir/t/daemon/lib.sh"

LC=$top_srcdir/t/daemon/listing_check.py
D=$T/root
mkdir -p "$D/odd" "$D/tree"
python3 - "$D" <<'PY'
import os, sys
d = os.fsencode(sys.argv[1])
names = [b"with space", b'dq"uote', b"sq'uote", b"<tag>", b"a&b", b"100%",
         b"%41%2F", b"hash#x", b"q?x=1", b"plus+x", b"a:b", b"new\nline",
         b"tab\tx", b"bell\x07", b"del\x7f", b"bad\xffutf8", b"\xc3\xa9t\xc3\xa9",
         b"\xe2\x82", b"over\xc0\xafx", b"sur\xed\xa0\x80x", b"back\\slash",
         b"&amp;", b"-dash", b"~tilde", b"semi;colon", b"eq=x", b"x" * 250]
for i, n in enumerate(names):
    with open(os.path.join(d, b"odd", n), "wb") as f:
        f.write(b"content %d " % i + n)
os.mkdir(os.path.join(d, b"odd", b"dir <&> %"))
# a tree to crawl: a few levels, odd names too, one empty directory
for p in [b"a/b/c", b"a/e m p t y", b"x y/z&w"]:
    os.makedirs(os.path.join(d, b"tree", p))
for i, p in enumerate([b"top.txt", b"a/1.bin", b"a/b/2 two.txt", b"a/b/c/3%.txt",
                       b"x y/4<4>.txt", b"x y/z&w/5#.txt", b"a/b/c/\xc3\xa9.txt"]):
    with open(os.path.join(d, b"tree", p), "wb") as f:
        f.write(os.urandom(100 + i * 1000))
PY

checks() {
	start_daemon --root "$D"
	local f out
	for f in html json ndjson; do
		out=$(python3 "$LC" match "$URL/odd/?format=$f" "$D/odd")
		check_match "odd names, exact bytes back ($f)" "^ok 28 " "$out"
	done
	out=$(python3 "$LC" links "$URL/odd/" "$D/odd")
	check_match "every HTML link fetches its file" "^ok 27 links" "$out"
	check "no raw < & or quote from a name in the HTML" "" \
		"$(curl -s "$URL/odd/" | grep -a -e '<tag>' -e 'dq"uote')"
	check "JSON is valid and ASCII-safe for invalid UTF-8" "bad\\xffutf8" \
		"$(curl -s "$URL/odd/?format=json" | python3 -c '
import json, sys, urllib.parse
for e in json.load(sys.stdin)["entries"]:
    if "name_pct" in e and e["name"].startswith("bad"):
        print(repr(urllib.parse.unquote_to_bytes(e["name_pct"]))[2:-1])')"
	check "a directory name with <&>% opens" 200 "$(code "/odd/dir%20%3C%26%3E%20%25/")"
	python3 "$LC" match "$URL/odd/dir%20%3C%26%3E%20%25/?format=json" "$D/odd/dir <&> %" >/dev/null
	check "its listing (empty) parses" 0 $?

	# wget -r -np: a mirror through the HTML listings equals the tree.
	if command -v wget >/dev/null; then
		rm -rf "$T/mirror"
		( cd "$T" && wget -q -r -np -nH --cut-dirs=1 -P mirror -e robots=off \
			--reject-regex '[?]' "$URL/tree/" )
		find "$T/mirror" -name 'index.html*' -delete
		if diff -r "$D/tree" "$T/mirror" >"$T/diff" 2>&1; then
			ok "wget -r -np mirror is identical"
		else
			not_ok "wget -r mirror differs: $(head -5 "$T/diff")"
		fi
	else
		echo "# wget not installed: skipped"
	fi

	# rclone lsf over the HTTP listings: the same files and directories.
	if command -v rclone >/dev/null; then
		rclone lsf -R --config /dev/null --http-url "$URL/tree/" :http: 2>"$T/rclone.err" |
			LC_ALL=C sort > "$T/rclone"
		( cd "$D/tree" && find . -mindepth 1 \( -type d -printf '%P/\n' -o -printf '%P\n' \) ) |
			LC_ALL=C sort > "$T/find"
		if cmp -s "$T/rclone" "$T/find"; then
			ok "rclone lsf -R lists the tree ($(wc -l < "$T/find") entries)"
		else
			not_ok "rclone lsf differs: $(diff "$T/find" "$T/rclone" | head -5) $(head -3 "$T/rclone.err")"
		fi
	else
		echo "# rclone not installed: skipped"
	fi
}

run_backends checks
