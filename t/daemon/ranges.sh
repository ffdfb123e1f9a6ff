# Validators, conditional requests, ranges (RFC 9110 13, 14), sidecars.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 400)' > "$D/data.bin"   # 102400 bytes
touch -d '2020-01-02 03:04:05 UTC' "$D/data.bin"
printf 'small file\n' > "$D/small.txt"
printf 'old\n' > "$D/y1965.txt"
touch -d '1965-01-01 00:00:00 UTC' "$D/y1965.txt"
printf 'from the future\n' > "$D/future.txt"
touch -d '2100-01-01 00:00:00 UTC' "$D/future.txt"
printf 'plain text body\n' > "$D/page.txt"
printf 'BROTLI' > "$D/page.txt.br"
printf 'ZSTD' > "$D/page.txt.zst"
printf 'GZIP' > "$D/page.txt.gz"
printf 'fresh\n' > "$D/old.txt"
printf 'STALE' > "$D/old.txt.gz"
touch -d '2000-01-01' "$D/old.txt.gz"

hdr() { # hdr NAME PATH [curl args]: value of response header NAME
	local n=$1 p=$2
	shift 2
	curl -s -o /dev/null -D - "$@" "$URL$p" | tr -d '\r' | grep -i "^$n:" | head -n1 | cut -d' ' -f2-
}

checks() {
	start_daemon --root "$D"
	local etag lm size=102400
	etag=$(hdr ETag /data.bin)
	lm=$(hdr Last-Modified /data.bin)
	check_match "strong ETag" '^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$' "$etag"
	check "Last-Modified" "Thu, 02 Jan 2020 03:04:05 GMT" "$lm"
	check "Accept-Ranges" bytes "$(hdr Accept-Ranges /data.bin)"

	# 304 / 412 matrix (RFC 9110 13.2.2)
	check "If-None-Match same → 304" 304 "$(code /data.bin -H "If-None-Match: $etag")"
	check "If-None-Match list → 304" 304 "$(code /data.bin -H "If-None-Match: \"x\", $etag")"
	check "If-None-Match weak same → 304" 304 "$(code /data.bin -H "If-None-Match: W/$etag")"
	check "If-None-Match * → 304" 304 "$(code /data.bin -H 'If-None-Match: *')"
	check "If-None-Match other → 200" 200 "$(code /data.bin -H 'If-None-Match: "nope"')"
	check "If-Modified-Since = LM → 304" 304 "$(code /data.bin -H "If-Modified-Since: $lm")"
	check "If-Modified-Since later → 304" 304 "$(code /data.bin -H 'If-Modified-Since: Fri, 01 Jan 2021 00:00:00 GMT')"
	check "If-Modified-Since earlier → 200" 200 "$(code /data.bin -H 'If-Modified-Since: Wed, 01 Jan 2020 00:00:00 GMT')"
	check "If-Modified-Since junk ignored → 200" 200 "$(code /data.bin -H 'If-Modified-Since: yesterday')"
	check "INM other wins over IMS → 200" 200 "$(code /data.bin -H 'If-None-Match: "nope"' -H "If-Modified-Since: $lm")"
	# a list's lines are one list (RFC 9110 5.3)
	check "If-None-Match on two lines → 304" 304 \
		"$(code /data.bin -H 'If-None-Match: "zz"' -H "If-None-Match: $etag")"
	check "... after an empty line → 304" 304 \
		"$(code /data.bin -H 'If-None-Match;' -H "If-None-Match: $etag")"
	check "If-Match on two lines → 200" 200 \
		"$(code /data.bin -H 'If-Match: "zz"' -H "If-Match: $etag")"
	check "If-Match: two other lines → 412" 412 \
		"$(code /data.bin -H 'If-Match: "zz"' -H 'If-Match: "yy"')"
	check "If-Match same → 200" 200 "$(code /data.bin -H "If-Match: $etag")"
	check "If-Match * → 200" 200 "$(code /data.bin -H 'If-Match: *')"
	check "If-Match other → 412" 412 "$(code /data.bin -H 'If-Match: "nope"')"
	check "If-Match weak → 412" 412 "$(code /data.bin -H "If-Match: W/$etag")"
	check "If-Unmodified-Since earlier → 412" 412 "$(code /data.bin -H 'If-Unmodified-Since: Wed, 01 Jan 2020 00:00:00 GMT')"
	check "If-Unmodified-Since = LM → 200" 200 "$(code /data.bin -H "If-Unmodified-Since: $lm")"
	check "If-Match beats If-Unmodified-Since → 200" 200 "$(code /data.bin -H "If-Match: $etag" -H 'If-Unmodified-Since: Wed, 01 Jan 2020 00:00:00 GMT')"
	check "304 on HEAD" 304 "$(code /data.bin -I -H "If-None-Match: $etag")"
	check "304 carries the ETag" "$etag" "$(hdr ETag /data.bin -H "If-None-Match: $etag")"
	check "304 has no body" 0 "$(curl -s -o /dev/null -w '%{size_download}' -H "If-None-Match: $etag" "$URL/data.bin")"
	# RFC 9110 8.6: a 304's Content-Length, if any, is the 200's
	check "304's Content-Length is the 200's" "$(hdr Content-Length /data.bin)" \
		"$(hdr Content-Length /data.bin -H "If-None-Match: $etag")"
	check "... from the small-file cache too" "$(hdr Content-Length /small.txt)" \
		"$(hdr Content-Length /small.txt -H "If-None-Match: $(hdr ETag /small.txt)")"
	# a time before 1970 is no modification date (RFC 9110 8.8.2, 13.1.4)
	check "before 1970: no Last-Modified" "" "$(hdr Last-Modified /y1965.txt)"
	check "... twice (cached or not)" "" "$(hdr Last-Modified /y1965.txt)"
	check "... If-Unmodified-Since is false: 412" 412 \
		"$(code /y1965.txt -H 'If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT')"
	check "... If-Modified-Since is ignored: 200" 200 \
		"$(code /y1965.txt -H 'If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT')"

	# a time in the future is sent, and compared, as the response's
	# (RFC 9110 8.8.2.1); a date later than now from a client is ignored
	local i
	for i in 1 2 3; do      # the first, then from the small-file cache (or not)
		curl -s -o /dev/null -D "$T/h" "$URL/future.txt"
		local d lm2
		d=$(date -d "$(tr -d '\r' < "$T/h" | awk -F': ' 'tolower($1) == "date" { print $2 }')" +%s)
		lm2=$(date -d "$(tr -d '\r' < "$T/h" | awk -F': ' 'tolower($1) == "last-modified" { print $2 }')" +%s)
		# (a second may turn between the two)
		check "future: Last-Modified is the Date ($i)" 1 \
			"$([ $((d - lm2)) -ge 0 ] && [ $((d - lm2)) -le 1 ] && echo 1)"
	done
	check "future: If-Modified-Since 2099 → 200" 200 \
		"$(code /future.txt -H 'If-Modified-Since: Thu, 31 Dec 2099 00:00:00 GMT')"
	check "If-Modified-Since later than now → 200" 200 \
		"$(code /data.bin -H 'If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT')"

	# single ranges: status, Content-Range, exact bytes
	local spec want first last
	for spec in 0-0 0-99 100-199 102300-102399 102300-999999 -1 -100 -999999 50000- 0-; do
		curl -s -o "$T/part" -D "$T/h" -H "Range: bytes=$spec" "$URL/data.bin"
		case $spec in
		-*) last=$((size - 1)); first=$((size - ${spec#-})); [ $first -lt 0 ] && first=0 ;;
		*-) first=${spec%-}; last=$((size - 1)) ;;
		*) first=${spec%-*}; last=${spec#*-}; [ $last -ge $size ] && last=$((size - 1)) ;;
		esac
		check "206 for bytes=$spec" 206 "$(head -n1 "$T/h" | awk '{print $2}')"
		check "Content-Range for bytes=$spec" "bytes $first-$last/$size" \
			"$(tr -d '\r' < "$T/h" | grep -i '^Content-Range:' | cut -d' ' -f2-)"
		tail -c +$((first + 1)) "$D/data.bin" | head -c $((last - first + 1)) > "$T/want"
		if cmp -s "$T/part" "$T/want"; then ok "bytes=$spec body"; else not_ok "bytes=$spec body differs"; fi
	done

	# 416 and ignored ranges
	check "416 beyond the end" 416 "$(code /data.bin -H 'Range: bytes=200000-')"
	check "416 Content-Range" "bytes */$size" "$(hdr Content-Range /data.bin -H 'Range: bytes=200000-')"
	check "416 for bytes=-0" 416 "$(code /data.bin -H 'Range: bytes=-0')"
	check "bad syntax ignored → 200" 200 "$(code /data.bin -H 'Range: bytes=5-1')"
	check "other unit ignored → 200" 200 "$(code /data.bin -H 'Range: pages=1-2')"
	local many
	many=$(seq 0 10 400 | awk '{printf "%s%d-%d", (NR>1?",":""), $1*100, $1*100+5}')
	check "more ranges than max_ranges → 200" 200 "$(code /data.bin -H "Range: bytes=$many")"
	check "HEAD with range" 206 "$(code /data.bin -I -H 'Range: bytes=0-9')"

	# If-Range
	check "If-Range same ETag → 206" 206 "$(code /data.bin -H 'Range: bytes=0-9' -H "If-Range: $etag")"
	check "If-Range other ETag → 200" 200 "$(code /data.bin -H 'Range: bytes=0-9' -H 'If-Range: "nope"')"
	check "If-Range = Last-Modified → 206" 206 "$(code /data.bin -H 'Range: bytes=0-9' -H "If-Range: $lm")"
	check "If-Range other date → 200" 200 "$(code /data.bin -H 'Range: bytes=0-9' -H 'If-Range: Wed, 01 Jan 2020 00:00:00 GMT')"

	# multiple ranges: multipart/byteranges, parsed and compared
	curl -s -o "$T/mp" -D "$T/h" -H 'Range: bytes=0-9, 1000-1099, -50' "$URL/data.bin"
	check "multi-range 206" 206 "$(head -n1 "$T/h" | awk '{print $2}')"
	check_match "multipart Content-Type" '^multipart/byteranges; boundary=[0-9A-Za-z]+$' \
		"$(tr -d '\r' < "$T/h" | grep -i '^Content-Type:' | cut -d' ' -f2-)"
	python3 - "$T/h" "$T/mp" "$D/data.bin" >"$T/mpcheck" <<'PY'
import email.parser, sys
hdr = open(sys.argv[1], "rb").read().decode("latin-1")
body = open(sys.argv[2], "rb").read()
data = open(sys.argv[3], "rb").read()
cl = [l.split(":", 1)[1].strip() for l in hdr.split("\r\n") if l.lower().startswith("content-length:")]
print("length", "ok" if cl and int(cl[0]) == len(body) else "bad %s vs %d" % (cl, len(body)))
ct = [l.split(":", 1)[1].strip() for l in hdr.split("\r\n") if l.lower().startswith("content-type:")][0]
msg = email.parser.BytesParser().parsebytes(b"Content-Type: " + ct.encode() + b"\r\n\r\n" + body)
parts = msg.get_payload()
print("parts", len(parts))
for p in parts:
    cr = p["Content-Range"].split()[1]
    rng, total = cr.split("/")
    a, b = map(int, rng.split("-"))
    payload = p.get_payload(decode=True)
    print("part", cr, "ok" if payload == data[a:b + 1] and int(total) == len(data) else "bad")
PY
	check "multipart Content-Length exact" "length ok" "$(grep ^length "$T/mpcheck")"
	check "multipart has 3 parts" "parts 3" "$(grep ^parts "$T/mpcheck")"
	check "multipart parts byte-exact" 3 "$(grep -c '^part .* ok$' "$T/mpcheck")"
	check_match "multipart ranges in order" "part 0-9/$size ok.*part 1000-1099/$size ok.*part 102350-102399/$size ok" \
		"$(tr '\n' ' ' < "$T/mpcheck")"
	check "overlapping ranges coalesce to one part" "bytes 0-199/$size" \
		"$(hdr Content-Range /data.bin -H 'Range: bytes=0-99,50-199')"

	# sidecars
	check "br preferred" "BROTLI" "$(curl -s -H 'Accept-Encoding: gzip, br, zstd' "$URL/page.txt")"
	check "Content-Encoding br" br "$(hdr Content-Encoding /page.txt -H 'Accept-Encoding: br')"
	check "zstd" "ZSTD" "$(curl -s -H 'Accept-Encoding: zstd, gzip' "$URL/page.txt")"
	check "gzip" "GZIP" "$(curl -s -H 'Accept-Encoding: gzip' "$URL/page.txt")"
	check "q=0 refuses br" "GZIP" "$(curl -s -H 'Accept-Encoding: br;q=0, gzip' "$URL/page.txt")"
	check "* accepts br" "BROTLI" "$(curl -s -H 'Accept-Encoding: *' "$URL/page.txt")"
	check "Accept-Encoding on two lines" "GZIP" \
		"$(curl -s -H 'Accept-Encoding: identity' -H 'Accept-Encoding: gzip' "$URL/page.txt")"
	check "identity only" "plain text body" "$(curl -s -H 'Accept-Encoding: identity' "$URL/page.txt")"
	check "no Accept-Encoding" "plain text body" "$(curl -s "$URL/page.txt")"
	check "Vary on sidecar" Accept-Encoding "$(hdr Vary /page.txt -H 'Accept-Encoding: gzip')"
	check "sidecar keeps the Content-Type" "text/plain" \
		"$(hdr Content-Type /page.txt -H 'Accept-Encoding: gzip' | cut -d';' -f1)"
	check "sidecar has its own ETag" 1 \
		"$([ "$(hdr ETag /page.txt -H 'Accept-Encoding: gzip')" != "$(hdr ETag /page.txt)" ] && echo 1)"
	check "stale sidecar ignored" "fresh" "$(curl -s -H 'Accept-Encoding: gzip' "$URL/old.txt")"
	check "range over the sidecar" "ROT" "$(curl -s -H 'Accept-Encoding: br' -H 'Range: bytes=1-3' "$URL/page.txt")"
	check "sidecar served directly" "GZIP" "$(curl -s "$URL/page.txt.gz")"
}

run_backends checks

# sidecars = off in the configuration
printf '[server]\nroot = %s\nsidecars = off\n' "$D" > "$T/nosc.conf"
start_daemon -c "$T/nosc.conf"
check "sidecars off" "plain text body" "$(curl -s -H 'Accept-Encoding: br, gzip' "$URL/page.txt")"
stop_daemon
[ "$fails" = 0 ]
