# Static serving: statuses, byte-exact bodies, HEAD, keep-alive, redirects.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/dir/sub" "$D/noindex" "$D/withindex"
printf 'hello\n' > "$D/hello.txt"
head -c 1048576 /dev/urandom > "$D/big.bin"
head -c 65536 /dev/urandom > "$D/edge.bin"
head -c 65537 /dev/urandom > "$D/edge1.bin"
: > "$D/empty"
echo '<h1>index</h1>' > "$D/withindex/index.html"
echo x > "$D/noindex/f"
mkfifo "$D/fifo"
ln -s /etc/passwd "$D/escape"
ln -s hello.txt "$D/link.txt"

checks() {
	start_daemon --root "$D"

	for f in hello.txt big.bin edge.bin edge1.bin empty link.txt; do
		curl -s -o "$T/got" "$URL/$f"
		if cmp -s "$T/got" "$D/$f"; then ok "GET /$f byte-exact"
		else not_ok "GET /$f differs"; fi
	done
	check "200" 200 "$(code /hello.txt)"
	check "Content-Type text/plain" "text/plain" \
		"$(curl -s -o /dev/null -w '%{content_type}' "$URL/hello.txt" | cut -d';' -f1)"

	# HEAD: headers of GET, no body
	local h
	h=$(curl -s -I "$URL/big.bin" | tr -d '\r')
	check_match "HEAD 200" "^HTTP/1.1 200" "$h"
	check_match "HEAD Content-Length" "Content-Length: 1048576" "$h"
	check "HEAD has no body" 0 "$(curl -s --head "$URL/big.bin" -o /dev/null -w '%{size_download}')"

	# keep-alive: two URLs in one curl reuse the connection
	curl -sv -o /dev/null -o /dev/null "$URL/hello.txt" "$URL/big.bin" 2>"$T/v"
	check_match "keep-alive reuse" "Re-using existing connection" "$(cat "$T/v")"
	curl -sv -o /dev/null -o /dev/null "$URL/nope" "$URL/hello.txt" 2>"$T/v"
	check_match "keep-alive after 404" "Re-using existing connection" "$(cat "$T/v")"

	# directories
	check "index.html" "$(cat "$D/withindex/index.html")" "$(curl -s "$URL/withindex/")"
	check "301 for a directory without /" 301 "$(code /withindex)"
	check "301 Location" "$URL/withindex/?a=1" \
		"$(curl -s -o /dev/null -w '%{redirect_url}' "$URL/withindex?a=1")"
	check_match "301's page names it" "<title>301 Moved Permanently</title>" \
		"$(curl -s "$URL/withindex")"
	# a directory named by a final dot segment: the listing's relative
	# links would resolve from the wrong place, so it is redirected too
	check "/dir/sub/.. -> 301 /dir/" "$URL/dir/?a=1" \
		"$(curl -s --path-as-is -o /dev/null -w '%{redirect_url}' "$URL/dir/sub/..?a=1")"
	check "/dir/sub/. -> 301 /dir/sub/" "$URL/dir/sub/" \
		"$(curl -s --path-as-is -o /dev/null -w '%{redirect_url}' "$URL/dir/sub/.")"
	check "root listing or index" 200 "$(code /)"

	# errors
	check "404 missing" 404 "$(code /nope)"
	check "404 file with trailing slash" 404 "$(code /hello.txt/)"
	check "403 fifo" 403 "$(code /fifo)"
	check "symlink escaping the root is not served" 404 "$(code /escape)"
	check "400 ../ escape" 400 "$(code /../etc/passwd)"
	check "400 %2e%2e escape" 400 "$(code /%2e%2e/%2e%2e/etc/passwd)"
	check "dot segments inside the root" 200 "$(code /dir/../hello.txt)"
	check "405 POST" 405 "$(code /hello.txt -X POST)"
	check "405 DELETE" 405 "$(code /hello.txt -X DELETE)"
	check_match "405 has Allow" "Allow: GET, HEAD, OPTIONS" \
		"$(curl -s -i -X PUT "$URL/hello.txt" | tr -d '\r')"
	check_match "OPTIONS has Allow" "Allow: GET, HEAD, OPTIONS" \
		"$(curl -s -i -X OPTIONS "$URL/hello.txt" | tr -d '\r')"
	check_match "OPTIONS 2xx" "^2" "$(code /hello.txt -X OPTIONS)"
	check "414 long URL" 414 "$(code "/$(head -c 40000 /dev/zero | tr '\0' a)")"
	check "414 long URL (our limit)" 414 "$(code "/$(head -c 10000 /dev/zero | tr "\0" a)")"
	check "431 huge header" 431 "$(code /hello.txt -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' b)")"
	# request_header_max (8k by default) decides, not libmicrohttpd's pool
	local b7 b9 b20
	b7=$(head -c 7000 /dev/zero | tr '\0' b)
	b9=$(head -c 9000 /dev/zero | tr '\0' b)
	b20=$(head -c 20000 /dev/zero | tr '\0' b)
	check "7000-byte header served" 200 "$(code /hello.txt -H "X-Big: $b7")"
	check "9000-byte header: 431" 431 "$(code /hello.txt -H "X-Big: $b9")"
	check "20000-byte header: 431" 431 "$(code /hello.txt -H "X-Big: $b20")"
	curl -sv -o /dev/null -H "X-Big: $b9" "$URL/hello.txt" --next -o /dev/null "$URL/hello.txt" 2>"$T/v"
	check_match "a 431 closes its connection" "Connection: close" "$(cat "$T/v")"
	# Heads whose size leaves libmicrohttpd's pool nearly full, many
	# short fields, whitespace before values: each gets one answer,
	# with the status the limits give.
	python3 - "$PORT" > "$T/heads.out" <<'PY'
import socket, sys
port = int(sys.argv[1])
def ask(req):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(req); s.settimeout(5)
    d = b""
    try:
        while True:
            c = s.recv(65536)
            if not c: break
            d += c
            if b"Connection: close" not in d and d.count(b"\r\n\r\n") and b"hello" in d: break
    except OSError: pass
    s.close()
    n = d.count(b"HTTP/1.1 ")
    return d.split(b" ", 2)[1].decode() if n == 1 else "answers:%d" % n
base = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n"
out = set()
for n in range(11900, 12400, 25):
    out.add("head " + ask(base + b"X-P: " + b"a" * (n - len(base) - 9) + b"\r\n\r\n"))
    out.add("target " + ask(b"GET /hello.txt?" + b"a" * n + b" HTTP/1.1\r\nHost: x\r\n\r\n"))
for nf in (100, 101, 170):
    out.add("fields%d " % nf + ask(base + b"".join(b"X%d: y\r\n" % i for i in range(nf - 1)) + b"\r\n"))
out.add("ows " + ask(base + b"".join(b"X%d:" % i + b" " * 250 + b"a\r\n" for i in range(36)) + b"\r\n"))
out.add("ows400 " + ask(base + b"X-A:" + b" " * 400 + b"a\r\n\r\n"))
print("\n".join(sorted(out)))
PY
	check "heads past the limits: one 431 or 414 each" "fields100 200
fields101 431
fields170 431
head 431
ows 431
ows400 200
target 414" "$(cat "$T/heads.out")"
	check_match "error pages are HTML" "<h1>404 Not Found</h1>" "$(curl -s "$URL/nope")"
	check "still serving" hello "$(curl -s "$URL/hello.txt")"

	# a larger request_header_max takes larger heads
	stop_daemon
	printf '[server]\nrequest_header_max = 32k\n' > "$T/big-head.conf"
	start_daemon --root "$D" -c "$T/big-head.conf"
	check "request_header_max = 32k: 20000-byte header served" 200 \
		"$(code /hello.txt -H "X-Big: $b20")"
	check "request_header_max = 32k: 40000-byte header 431" 431 \
		"$(code /hello.txt -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' b)")"
}

run_backends checks
