# Content negotiation: the listing format from Accept (the configured
# default_format winning ties) and precompressed sidecars from
# Accept-Encoding (RFC 9110 12.5.1, 12.5.3; x-gzip is gzip, 8.4.1.3).
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/d"
echo one > "$D/d/a.txt"
printf 'plain text, long enough to be worth compressing\n' > "$D/f.txt"
gzip -c "$D/f.txt" > "$D/f.txt.gz"
printf 'BROTLI' > "$D/f.txt.br"
touch -r "$D/f.txt" "$D/f.txt.gz" "$D/f.txt.br"

cat > "$T/json.conf" <<EOF2
[server]
root = $D
[listing]
default_format = json
EOF2

# ctype ACCEPT [URL]: the Content-Type of the listing of /d/
ctype() {
	curl -s -o /dev/null -w '%{content_type}' -H "Accept: $1" "${2:-$URL}/d/"
}
# coding ACCEPT-ENCODING: the Content-Encoding sent for /f.txt
coding() {
	curl -s -o /dev/null -D - -H "Accept-Encoding: $1" "$URL/f.txt" |
		tr -d '\r' | awk -F': ' 'tolower($1) == "content-encoding" { print $2 }'
}

checks() {
	start_daemon -r "$D"
	check "Accept: application/* -> JSON, a type it accepts" "application/json" \
		"$(ctype 'application/*')"
	check "Accept: application/ndjson -> NDJSON" "application/x-ndjson" \
		"$(ctype 'application/ndjson')"
	check "Accept: */* -> the default, HTML" "text/html; charset=utf-8" "$(ctype '*/*')"
	check "Accept: image/png -> the default, HTML" "text/html; charset=utf-8" \
		"$(ctype 'image/png')"
	check "Accept-Encoding: gzip -> the .gz sidecar" "gzip" "$(coding gzip)"
	check "Accept-Encoding: x-gzip -> the .gz sidecar" "gzip" "$(coding x-gzip)"
	check "Accept-Encoding: gzip;q=0 -> the plain file" "" "$(coding 'gzip;q=0')"
	check "Accept-Encoding: *;q=0.5, gzip;q=0 -> br, never gzip" "br" \
		"$(coding '*;q=0.5, gzip;q=0')"
	check "Accept-Encoding: zstd -> the plain file (no .zst)" "" "$(coding zstd)"
	# the client's weights choose among the sidecars, ties going to br
	check "Accept-Encoding: gzip, br -> br" "br" "$(coding 'gzip, br')"
	check "Accept-Encoding: br;q=0.1, gzip -> gzip" "gzip" "$(coding 'br;q=0.1, gzip')"
	check "Accept-Encoding: br;q=0.5, gzip;q=0.8, identity -> the plain file" "" \
		"$(coding 'br;q=0.5, gzip;q=0.8, identity')"
	check "Accept-Encoding: br;q=0.5, *;q=0.9 -> gzip (any other)" "gzip" \
		"$(coding 'br;q=0.5, *;q=0.9')"
	stop_daemon

	start_daemon -c "$T/json.conf"
	check "default_format = json: Accept */* -> JSON" "application/json" "$(ctype '*/*')"
	check "default_format = json: a tie with text/html -> JSON" "application/json" \
		"$(ctype 'text/html, application/json')"
	check "default_format = json: text/html preferred -> HTML" "text/html; charset=utf-8" \
		"$(ctype 'text/html, application/json;q=0.5')"
}

run_backends checks
