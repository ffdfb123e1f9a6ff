# Hostile and malformed requests (RFC 9112 strictness): each gets the
# right status, framing errors close the connection, and the daemon
# keeps serving.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/dir"
printf 'hello\n' > "$D/hello.txt"
printf 'inner\n' > "$D/dir/x"

# expect NAME STATUS REQUEST [close [REGEX]]: queues a case; run_expect
# sends them all (one python process) and checks: the status of the
# first response; exactly one response; with "close", "Connection:
# close" and the server closing the connection; with REGEX, a line of
# the response matching it.
expect() {
	printf '%s\n' "$3" >> "$T/cases"
	# (fields split on \x1f: with tabs, read would merge empty ones)
	printf '%s\x1f%s\x1f%s\x1f%s\n' "$1" "$2" "${4:-}" "${5:-}" >> "$T/expect"
}
run_expect() {
	raw_batch "$T/cases" > "$T/answers"
	local i=0 name st cl re out
	while IFS=$'\x1f' read -r name st cl re; do
		i=$((i + 1))
		out=$(awk -v n="$i" 'BEGIN{k=1} /^<end>$/{k++; next} k==n' "$T/answers" | tr -d '\r')
		check "$name" "$st" "$(printf '%s\n' "$out" | head -n1 | awk '{print $2}')"
		check "$name: one response" 1 "$(printf '%s\n' "$out" | grep -c '^HTTP/1')"
		if [ "$cl" = close ]; then
			check_match "$name: Connection: close" "^Connection: close" "$out"
			check_match "$name: connection closed" "<closed>" "$out"
		fi
		[ -z "$re" ] || check_match "$name: $re" "$re" "$out"
	done < "$T/expect"
	rm -f "$T/cases" "$T/expect"
}

checks() {
	start_daemon --root "$D"
	local H='Host: x\r\n'

	expect "plain request" 200 "GET /hello.txt HTTP/1.1\r\n${H}Connection: close\r\n\r\n"
	expect "missing Host" 400 "GET /hello.txt HTTP/1.1\r\n\r\n"
	expect "duplicate Host" 400 "GET /hello.txt HTTP/1.1\r\n${H}${H}\r\n"
	expect "invalid Host" 400 "GET /hello.txt HTTP/1.1\r\nHost: a b\r\n\r\n"
	expect "HTTP/1.0 without Host" 200 "GET /hello.txt HTTP/1.0\r\n\r\n"
	expect "obs-fold" 400 "GET /hello.txt HTTP/1.1\r\n${H}X-A: b\r\n c\r\n\r\n" close
	expect "space before colon" 400 "GET /hello.txt HTTP/1.1\r\n${H}X-A : b\r\n\r\n" close
	expect "space before colon in Host" 400 "GET /hello.txt HTTP/1.1\r\nHost : x\r\n\r\n" close
	expect "invalid field name" 400 "GET /hello.txt HTTP/1.1\r\n${H}X(A): b\r\n\r\n" close
	expect "control character in value" 400 "GET /hello.txt HTTP/1.1\r\n${H}X-A: a\x01b\r\n\r\n" close
	expect "chunked body on GET" 411 "GET /hello.txt HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" close
	expect "unknown Transfer-Encoding" 501 "GET /hello.txt HTTP/1.1\r\n${H}Transfer-Encoding: foo\r\n\r\n" close
	expect "conflicting Content-Length" 400 "GET /hello.txt HTTP/1.1\r\n${H}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab" close
	expect "request body on GET" 413 "GET /hello.txt HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabc" close
	expect "Content-Length: 0 is fine" 200 "GET /hello.txt HTTP/1.1\r\n${H}Content-Length: 0\r\nConnection: close\r\n\r\n"
	expect "unsupported Expect" 417 "GET /hello.txt HTTP/1.1\r\n${H}Expect: teapot\r\n\r\n"
	expect "%00 in the path" 400 "GET /hello%00.txt HTTP/1.1\r\n${H}\r\n"
	expect "%2f in a segment" 400 "GET /dir%2fx HTTP/1.1\r\n${H}\r\n"
	expect "../ escape" 400 "GET /../../etc/passwd HTTP/1.1\r\n${H}\r\n"
	expect "%2e%2e escape" 400 "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\n${H}\r\n"
	expect "bad percent escape" 400 "GET /hello%zz HTTP/1.1\r\n${H}\r\n"
	expect "relative target" 400 "GET hello.txt HTTP/1.1\r\n${H}\r\n"
	expect "absolute symlink-free path" 200 "GET /dir/./x HTTP/1.1\r\n${H}Connection: close\r\n\r\n"
	expect "unknown method" 405 "BREW /hello.txt HTTP/1.1\r\n${H}\r\n"
	expect "OPTIONS *" 204 "OPTIONS * HTTP/1.1\r\n${H}\r\n"
	# RFC 9112 conformance: CONNECT's authority-form is parsed, and
	# refused (no tunnels here); a NUL anywhere in the head is 400
	# (libmicrohttpd cuts the value at it); a method we do not serve
	# gets 405 with Allow before its body is looked at, and a body we
	# will not read closes the connection.
	expect "CONNECT authority-form" 501 "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n" close
	expect "CONNECT origin-form" 400 "CONNECT /hello.txt HTTP/1.1\r\n${H}\r\n" close
	expect "authority-form outside CONNECT" 400 "GET example.com:443 HTTP/1.1\r\n${H}\r\n"
	expect "NUL in Host" 400 "GET /hello.txt HTTP/1.1\r\nHost: local\x00host\r\n\r\n" close
	expect "NUL in a middle field" 400 "GET /hello.txt HTTP/1.1\r\n${H}X-A: a\x00b\r\nX-B: c\r\n\r\n" close
	expect "NULs ending a value" 400 "GET /hello.txt HTTP/1.1\r\n${H}X-A: a\x00\x00\r\n\r\n" close
	expect "NUL in the target" 400 "GET /hello.txt\x00.gz HTTP/1.1\r\n${H}\r\n" close
	expect "NUL in the method" 400 "GE\x00T /hello.txt HTTP/1.1\r\n${H}\r\n" close
	expect "bare LF lines" 200 "GET /hello.txt HTTP/1.1\n${H}X-A: b\nConnection: close\n\n"
	expect "trailing space in Host" 200 "GET /hello.txt HTTP/1.1\r\nHost: x  \r\nConnection: close\r\n\r\n"
	expect "POST, chunked body" 405 "POST /hello.txt HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" close "^Allow: GET, HEAD, OPTIONS"
	expect "POST, Content-Length: 5" 405 "POST /hello.txt HTTP/1.1\r\n${H}Content-Length: 5\r\n\r\nhello" close "^Allow: GET, HEAD, OPTIONS"
	expect "POST, no body" 405 "POST /hello.txt HTTP/1.1\r\n${H}Connection: close\r\n\r\n" "" "^Allow: GET, HEAD, OPTIONS"
	expect "chunked not last" 400 "POST /hello.txt HTTP/1.1\r\n${H}Transfer-Encoding: chunked, gzip\r\n\r\n" close
	# Not HTTP at all: 400 and closed at once (not after the idle timeout)
	expect "not HTTP: text" 400 "GARBAGE\r\n\r\n" close
	expect "not HTTP: binary" 400 "\x00\x01\x02\xff\xfe\r\n\r\n" close
	expect "not HTTP: TLS ClientHello" 400 "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" close
	expect "no version" 400 "GET /hello.txt\r\n\r\n" close
	expect "leading empty line" 200 "\r\nGET /hello.txt HTTP/1.1\r\n${H}Connection: close\r\n\r\n"
	run_expect

	# pipelined requests on one connection are answered in order
	local out
	out=$(raw "GET /hello.txt HTTP/1.1\r\n${H}\r\nGET /dir/x HTTP/1.1\r\n${H}Connection: close\r\n\r\n")
	check "pipelined: two responses" 2 "$(printf '%s' "$out" | grep -c '^HTTP/1.1 200')"
	check_match "pipelined: second body" "inner" "$out"

	# a NUL in a later request on the connection (the first bytes of a
	# connection are checked before libmicrohttpd reads them; these are
	# caught in what it leaves of the request-line)
	local second
	for second in "GET /hello.txt\x00.gz HTTP/1.1" "GE\x00T /hello.txt HTTP/1.1"; do
		out=$(raw "GET /hello.txt HTTP/1.1\r\n${H}\r\n${second}\r\n${H}\r\n" | tr -d '\r')
		check "NUL in a second request-line: 200, then 400" "200 400" \
			"$(printf '%s\n' "$out" | awk '/^HTTP\/1.1/ {printf "%s%s", sep, $2; sep=" "}')"
		check_match "NUL in a second request-line: closed" "<closed>" "$out"
	done

	check "still serving" hello "$(curl -s "$URL/hello.txt")"
	kill -0 "$DPID" && ok "daemon alive" || not_ok "daemon died"
}

run_backends checks
