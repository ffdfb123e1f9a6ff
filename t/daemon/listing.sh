# Directory listings: every format names exactly the directory's
# entries (0, 1, 1,000 and 100,000 of them), sort orders, pagination
# cursors, gzip, ETag/304 (header and trailer), HEAD, negotiation,
# per-directory switches and errors.
. "$top_srcdir/t/daemon/lib.sh"

# The big directory: 100,000 entries; 20,000 in a quick run, still
# large enough to open its response early and to stream, but whose
# If-None-Match mismatch is answered from memory (one scan, not two).
NBIG=100000
quick && NBIG=20000

LC=$top_srcdir/t/daemon/listing_check.py
D=$T/root
mkdir -p "$D/e0" "$D/e1" "$D/k1/sub1" "$D/k1/sub2" "$D/k100" "$D/private" "$D/dots"
echo one > "$D/e1/only"
echo secret > "$D/private/x"
echo h > "$D/dots/.hidden"
echo v > "$D/dots/visible"
python3 - "$D" "$NBIG" <<'PY'
import os, sys
d = sys.argv[1]
# 1,000 entries: distinct sizes and mtimes, so every order is total
for i in range(998):
    p = os.path.join(d, "k1", "f%04d" % ((i * 7919) % 998))
    with open(p, "wb") as f:
        f.write(b"x" * ((i * 31) % 997 + i // 997))
    os.utime(p, ns=(1_600_000_000_000_000_000 + i * 1_000_000_123,) * 2)
open(os.path.join(d, "k1", ".dotfile"), "w").close()   # hidden by default
for i in range(int(sys.argv[2])):
    open(os.path.join(d, "k100", "n%06d" % i), "w").close()
PY
cat > "$T/c.conf" <<EOF
[server]
root = $D
# scanned every time, streamed when large (the cache: lcache.sh)
listing_cache_bytes = 0
[listing]
window = 128
[dir "/private"]
listing = off
[dir "/dots"]
dotfiles = on
EOF

lc() { python3 "$LC" "$@"; }
# lcheck NAME CMD...: the check script's verdict
lcheck() {
	local name=$1 out
	shift
	out=$(lc "$@")
	case "$out" in ok*) ok "$name ($out)" ;; *) not_ok "$name: $out" ;; esac
}

checks() {
	start_daemon -c "$T/c.conf"

	# Every format names exactly the entries, at every size.
	local d f
	for d in e0 e1 k1 k100; do
		for f in html json ndjson; do
			lcheck "$d $f" match "$URL/$d/?format=$f" "$D/$d"
		done
	done
	lcheck "no format: the default (HTML)" match "$URL/k1/" "$D/k1"
	check "Accept: application/json -> JSON" "application/json" \
		"$(curl -s -o /dev/null -w '%{content_type}' -H 'Accept: application/json' "$URL/k1/")"
	check "Accept: application/x-ndjson -> NDJSON" "application/x-ndjson" \
		"$(curl -s -o /dev/null -w '%{content_type}' -H 'Accept: application/x-ndjson' "$URL/e1/")"
	check "browser Accept -> HTML" "text/html; charset=utf-8" \
		"$(curl -s -o /dev/null -w '%{content_type}' \
		   -H 'Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' "$URL/e1/")"
	check "JSON of an empty directory parses" '{"path": "/e0/", "entries": [], "next": null}' \
		"$(curl -s "$URL/e0/?format=json" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))')"
	check "JSON entry fields" "only file 4 33188" \
		"$(curl -s "$URL/e1/?format=json" | python3 -c '
import json,sys; e=json.load(sys.stdin)["entries"][0]
print(e["name"], e["type"], e["size"], e["mode"])')"

	# Sort orders (ties by name); dirs first.
	local k o
	for k in name size mtime; do
		for o in asc desc; do
			lcheck "sort=$k order=$o" order "$URL/k1/?format=json&sort=$k&order=$o" "$D/k1" $k $o
		done
	done
	lcheck "sort=name in HTML" order "$URL/k1/?sort=name&order=desc" "$D/k1" name desc
	lcheck "dirs=first" order "$URL/k1/?format=ndjson&dirs=first" "$D/k1" name asc --dirs-first
	lcheck "dirsfirst=1, by size" order "$URL/k1/?format=json&sort=size&order=desc&dirsfirst=1" \
		"$D/k1" size desc --dirs-first
	lcheck "sort=none: every entry" match "$URL/k100/?format=ndjson&sort=none" "$D/k100"
	lcheck "sort=none, 1000" match "$URL/k1/?format=json&sort=none" "$D/k1"

	# Pagination: walk every page, every name exactly once.
	lcheck "pages of 7 (JSON)" pages "$URL/k1/?format=json&limit=7" "$D/k1"
	lcheck "pages of 100 (HTML)" pages "$URL/k1/?limit=100" "$D/k1"
	lcheck "pages of 9000 over $NBIG (NDJSON)" pages "$URL/k100/?format=ndjson&limit=9000" "$D/k100"
	lcheck "limit beyond the directory: one page" pages "$URL/e1/?format=json&limit=5" "$D/e1"
	check_match "Link header" '^Link: </k1/\?format=json&sort=name&order=asc&limit=2&after=f0001>; rel="next"' \
		"$(curl -s -D - -o /dev/null "$URL/k1/?format=json&limit=2" | tr -d '\r' | grep ^Link)"
	check "JSON next" "f0001" \
		"$(curl -s "$URL/k1/?format=json&limit=2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["next"])')"
	check "descending pages go on after the cursor" "f0995 f0994" \
		"$(curl -s "$URL/k1/?format=json&order=desc&limit=2&after=f0996" |
		   python3 -c 'import json,sys; print(*[e["name"] for e in json.load(sys.stdin)["entries"]])')"
	check "after= with sort=size is refused" 400 "$(code "/k1/?sort=size&after=f0001")"
	# a page needs a way to the next one: only name order has it
	check "limit= with sort=size is refused" 400 "$(code "/k1/?sort=size&limit=2")"
	check "limit= with dirs=first is refused" 400 "$(code "/k1/?dirs=first&limit=2")"

	# gzip: same bytes as the plain body, small and streamed.
	for d in e1 k1 k100; do
		curl -s -o "$T/plain" "$URL/$d/"
		curl -s --compressed -o "$T/unz" "$URL/$d/"
		curl -s -H 'Accept-Encoding: gzip' -o "$T/gz" "$URL/$d/"
		if cmp -s "$T/plain" "$T/unz" && [ -s "$T/plain" ]; then ok "gzip round trip $d"
		else not_ok "gzip round trip $d differs"; fi
		if gunzip -c "$T/gz" 2>/dev/null | cmp -s - "$T/plain" &&
		   [ "$(stat -c %s "$T/gz")" -lt "$(stat -c %s "$T/plain")" ]; then
			ok "gzip body is gzip, smaller ($d)"
		else not_ok "gzip body ($d)"; fi
	done
	check_match "Content-Encoding: gzip" "Content-Encoding: gzip" \
		"$(curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip' "$URL/k1/" | tr -d '\r')"
	check "no gzip for gzip;q=0" "" \
		"$(curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip;q=0, br' "$URL/k1/" | tr -d '\r' | grep -i '^Content-Encoding')"

	# Conditional GET: a complete listing carries its ETag in the header.
	local tag tag2 h
	tag=$(curl -s -D - -o /dev/null "$URL/k1/" | tr -d '\r' | sed -n 's/^ETag: //p')
	check_match "listing ETag" '^W/"[0-9a-f]+[en]"$' "$tag"
	check "If-None-Match -> 304" 304 "$(code /k1/ -H "If-None-Match: $tag")"
	check "If-None-Match: * -> 304" 304 "$(code /k1/ -H "If-None-Match: *")"
	check "other tag -> 200" 200 "$(code /k1/ -H 'If-None-Match: W/"nope"')"
	# If-Match compares strongly: a weak tag, even the listing's own,
	# never matches; "*" does (RFC 9110 13.1.1)
	check "If-Match its own weak tag -> 412" 412 "$(code /k1/ -H "If-Match: $tag")"
	check "If-Match other -> 412" 412 "$(code /k1/ -H 'If-Match: "nope"')"
	check "If-Match: * -> 200" 200 "$(code /k1/ -H 'If-Match: *')"
	check "same tag for gzip" "$tag" \
		"$(curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip' "$URL/k1/" | tr -d '\r' | sed -n 's/^ETag: //p')"
	check_match "format changes the tag" '.' \
		"$([ "$(curl -s -D - -o /dev/null "$URL/k1/?format=json" | tr -d '\r' | sed -n 's/^ETag: //p')" != "$tag" ] && echo differs)"
	sleep 0.01
	touch "$D/k1/f0500"
	tag2=$(curl -s -D - -o /dev/null "$URL/k1/" | tr -d '\r' | sed -n 's/^ETag: //p')
	check_match "touching a file changes the tag" '.' "$([ "$tag2" != "$tag" ] && echo changed)"
	check "old tag after the change -> 200" 200 "$(code /k1/ -H "If-None-Match: $tag")"
	echo more >> "$D/k1/f0007"
	check "growing a file changes the tag" 200 "$(code /k1/ -H "If-None-Match: $tag2")"

	# A streamed listing: chunked, its ETag in a trailer, and the trailer
	# tag revalidates it (304 without a body).
	h=$(lc raw "$URL/k100/")
	check_match "$NBIG entries stream (chunked, trailer ETag)" \
		'^status=200 etag=- trailer_etag=W/"[0-9a-f]+e" chunked=yes' "$h"
	tag=$(printf '%s' "$h" | sed -n 's/.*trailer_etag=\([^ ]*\).*/\1/p')
	check_match "Trailer: ETag announced" "Trailer: ETag" \
		"$(curl -s -D - -o /dev/null "$URL/k100/" | tr -d '\r')"
	check_match "trailer tag -> 304" "^status=304 etag=$tag" \
		"$(lc raw "$URL/k100/" "If-None-Match: $tag")"
	touch "$D/k100/n012345"
	if quick; then
		# 20,000 entries fit in LST_INM_BYTES: answered from memory
		check_match "after a touch: 200, the whole body" '^status=200 etag=W/"[0-9a-f]+e" .*chunked=no' \
			"$(lc raw "$URL/k100/" "If-None-Match: $tag")"
	else
		check_match "after a touch: 200, streamed again" "^status=200 etag=- trailer_etag=W/" \
			"$(lc raw "$URL/k100/" "If-None-Match: $tag")"
	fi
	check_match "a page has its ETag in the header" '^status=200 etag=W/"[0-9a-f]+n" ' \
		"$(lc raw "$URL/k100/?limit=1000")"

	# HEAD, per-directory switches, hidden dotfiles, errors.
	check "HEAD listing: no body" "200 0" \
		"$(curl -s -I -o /dev/null -w '%{http_code} %{size_download}' "$URL/k1/")"
	check "HEAD streamed listing" 200 "$(curl -s -I -o /dev/null -w '%{http_code}' "$URL/k100/")"
	check "listing = off in [dir] -> 403" 403 "$(code /private/)"
	check "the files there are still served" secret "$(curl -s "$URL/private/x")"
	lcheck "dotfiles = on in [dir]" match "$URL/dots/?format=json" "$D/dots" --dotfiles
	check "dotfiles hidden elsewhere" "" "$(curl -s "$URL/k1/?format=ndjson" | grep dotfile)"
	check "bad sort -> 400" 400 "$(code "/k1/?sort=color")"
	check "bad format -> 400" 400 "$(code "/k1/?format=xml")"
	check "bad limit -> 400" 400 "$(code "/k1/?limit=0")"
	check "dirs=first -> 200" 200 "$(code "/k1/?dirs=first")"
	check "dirs=firstxxxxx -> 400" 400 "$(code "/k1/?dirs=firstxxxxx")"
	check "dirs=%zz -> 400" 400 "$(code "/k1/?dirs=%zz")"
	check "dirs=last -> 400" 400 "$(code "/k1/?dirs=last")"
	check "directory without slash -> 301" 301 "$(code /k1)"
	check "missing directory -> 404" 404 "$(code /nope/)"
	check_match "HTML title" "<title>Index of /k1/</title>" "$(curl -s "$URL/k1/")"
}

run_backends checks
