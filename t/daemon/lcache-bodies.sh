# A listing kept by the listing cache (rendered once, its bytes sent
# again) is, in every format and order, gzip'ed or not, over HTTP and
# HTTPS, byte for byte what a daemon without the cache renders; HEAD
# (then a GET on the same connection) and If-None-Match (304) are
# answered from it; a change to the directory shows in every variant.
. "$top_srcdir/t/daemon/lib.sh"
need openssl

LCK=$top_srcdir/t/daemon/lcache_check.py
D=$T/root
N=20000
quick && N=5000
mkdir -p "$D/d/sub"
python3 - "$D/d" "$N" <<'PY' || exit 99
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, "f%06d.txt" % i), "w") as f:
        f.write("x" * (i % 97))
for name in ("a&b<c>.txt", "space name.txt", "\u00fcn\u00ef.txt", "q\"uote'.txt"):
    open(os.path.join(d, name), "w").close()
PY

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-keyout "$T/a.key" -out "$T/a.crt" -days 2 -subj /CN=localhost \
	-addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>"$T/openssl.err" ||
	{ cat "$T/openssl.err"; exit 99; }

# the variants compared: NAME QUERY (- none; gz: asked with
# Accept-Encoding)
VARIANTS='html - json format=json ndjson format=ndjson size sort=size&order=desc gz -'

# get BASE NAME QUERY: the body of /d/?QUERY (gz: compressed, as sent)
get() {
	local q=$3 extra=()
	[ "$q" = - ] && q=
	[ "$2" = gz ] && extra=(-H 'Accept-Encoding: gzip')
	curl -s --cacert "$T/a.crt" "${extra[@]}" "$1/d/${q:+?$q}"
}
# fetch_all BASE SUFFIX: every variant into $T/NAME.SUFFIX
fetch_all() {
	set -- "$1" "$2" $VARIANTS
	local base=$1 sfx=$2
	shift 2
	while [ $# -ge 2 ]; do
		get "$base" "$1" "$2" > "$T/$1.$sfx"
		shift 2
	done
}
# same SUFFIX: the variants that differ from the reference's
same() {
	local v out=
	for v in html json ndjson size; do
		cmp -s "$T/$v.ref" "$T/$v.$1" || out="$out $v"
	done
	# (gzip's framing differs between a stream and a whole body: the
	# bytes it carries are compared, and its trailer checked)
	gzip -t < "$T/gz.$1" 2>/dev/null &&
		[ "$(gzip -dc < "$T/gz.$1" | md5sum)" = "$(md5sum < "$T/html.ref")" ] ||
		out="$out gz"
	echo "${out# }"
}

hits() { lcache_hits /d/; }
# hits_over N: waits (at most 5 s) for more than N hits; prints the count
hits_over() { lcache_hits_reach /d/ $(($1 + 1)); }

# head_get BASE: HEAD then GET of /d/ on one connection: the HEAD's
# status, Content-Length and whether its ETag is the GET's, then the
# GET's status and whether its body is the reference's
head_get() {
	timeout 30 python3 - "$1" "$T/a.crt" "$T/html.ref" <<'PY'
import http.client, ssl, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
ref = open(sys.argv[3], "rb").read()
if u.scheme == "https":
    c = http.client.HTTPSConnection(u.hostname, u.port, timeout=20,
                                    context=ssl.create_default_context(cafile=sys.argv[2]))
else:
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
c.request("HEAD", "/d/")
h = c.getresponse()
h.read()
c.request("GET", "/d/")
g = c.getresponse()
body = g.read()
print(h.status, h.getheader("Content-Length"),
      "etag-same" if h.getheader("ETag") == g.getheader("ETag") else "etag-differs",
      g.status, "body-same" if body == ref else "body-differs")
PY
}

checks() {
	# The reference: no cache, every listing a scan.
	printf '[server]\nroot = %s\nlisting_cache_bytes = 0\n' "$D" > "$T/ref.conf"
	start_daemon -c "$T/ref.conf"
	fetch_all "$URL" ref
	check_match "the reference is whole" "^ok $((N + 5))\$" \
		"$(python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d")"
	stop_daemon

	cat > "$T/c.conf" <<EOF
[server]
root = $D
log_level = debug
error_log = $T/err.log
ssl_certificate = $T/a.crt
ssl_certificate_key = $T/a.key
EOF
	: > "$T/err.log"
	SPORT=$(free_port)
	start_daemon -c "$T/c.conf" -l "127.0.0.1:$SPORT ssl"
	local S=https://127.0.0.1:$SPORT h0 try

	# A fill, then a rendering kept, then those bytes sent again. (A
	# mount anywhere on the machine empties the cache: asked again
	# until the last round came from it.)
	for try in 1 2 3 4; do
		fetch_all "$URL" fill
		fetch_all "$URL" kept
		h0=$(hits)
		fetch_all "$URL" again
		[ "$(hits_over $((h0 + 4)))" -ge $((h0 + 5)) ] && break
	done
	check "every variant came from the cache" yes "$([ "$(hits)" -ge $((h0 + 5)) ] && echo yes)"
	check "a fill: the reference's bytes" "" "$(same fill)"
	check "kept and sent: the reference's bytes" "" "$(same kept)"
	check "sent again: the reference's bytes" "" "$(same again)"
	fetch_all "$S" tls
	check "over https, from the cache: the reference's bytes" "" "$(same tls)"

	# HEAD, then GET on the same connection: the HEAD sent no body
	local len
	len=$(stat -c %s "$T/html.ref")
	check "HEAD and GET on one connection" "200 $len etag-same 200 body-same" "$(head_get "$URL")"
	check "over https: HEAD and GET on one connection" "200 $len etag-same 200 body-same" \
		"$(head_get "$S")"

	local etag
	etag=$(curl -s -D - -o /dev/null "$URL/d/" | tr -d '\r' | awk 'tolower($1) == "etag:" { print $2 }')
	check_match "an ETag in the header" '^(W/)?"[^"]+"$' "$etag"
	check "If-None-Match: 304, no body" "304 0" \
		"$(curl -s -o /dev/null -w '%{http_code} %{size_download}' -H "If-None-Match: $etag" "$URL/d/")"
	check "over https, If-None-Match: 304, no body" "304 0" \
		"$(curl -s --cacert "$T/a.crt" -o /dev/null -w '%{http_code} %{size_download}' \
			-H "If-None-Match: $etag" "$S/d/")"
	check "If-None-Match another: 200, the body" "200 $len" \
		"$(curl -s -o /dev/null -w '%{http_code} %{size_download}' -H 'If-None-Match: "x"' "$URL/d/")"

	# A change to the directory: the entry goes, and its bodies.
	echo new > "$D/d/zz-new.txt"
	check_match "entry added: listed" "^ok $((N + 6))\$" \
		"$(python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d")"
	fetch_all "$URL" after
	fetch_all "$URL" after
	check "entry added: in every variant" "html json ndjson size gz" \
		"$({ for v in html json ndjson size; do grep -q 'zz-new\.txt' "$T/$v.after" && echo $v; done
		     gzip -dc < "$T/gz.after" | grep -q 'zz-new\.txt' && echo gz; } | xargs)"
	check "entry added: over https" "1" "$(curl -s --cacert "$T/a.crt" "$S/d/" | grep -c 'zz-new\.txt')"
	rm "$D/d/zz-new.txt"
	check_match "entry removed: not listed" "^ok $((N + 5))\$" \
		"$(python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d")"
	fetch_all "$URL" gone
	fetch_all "$URL" gone
	check "entry removed: the reference's bytes again" "" "$(same gone)"
	stop_daemon
}

run_backends mounts_still 3 checks
