# Hostile and malformed requests (RFC 9112 strictness): each gets the
# right status, framing errors close the connection, and the daemon
# keeps serving.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/dir"
printf 'hello\n' > "$D/hello.txt"
printf 'inner\n' > "$D/dir/x"

# expect NAME STATUS REQUEST [close]: queues a case; run_expect sends
# them all (one python process) and checks: the status of the first
# response; exactly one response; with "close", "Connection: close" and
# the server closing the connection.
expect() {
	printf '%s\n' "$3" >> "$T/cases"
	printf '%s\t%s\t%s\n' "$1" "$2" "${4:-}" >> "$T/expect"
}
run_expect() {
	raw_batch "$T/cases" > "$T/answers"
	local i=0 name st cl out
	while IFS=$'\t' read -r name st cl; do
		i=$((i + 1))
		out=$(awk -v n="$i" 'BEGIN{k=1} /^<end>$/{k++; next} k==n' "$T/answers" | tr -d '\r')
		check "$name" "$st" "$(printf '%s\n' "$out" | head -n1 | awk '{print $2}')"
		check "$name: one response" 1 "$(printf '%s\n' "$out" | grep -c '^HTTP/1')"
		if [ "$cl" = close ]; then
			check_match "$name: Connection: close" "^Connection: close" "$out"
			check_match "$name: connection closed" "<closed>" "$out"
		fi
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
	expect "Transfer-Encoding: chunked" 400 "GET /hello.txt HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" close
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
	run_expect

	# pipelined requests on one connection are answered in order
	local out
	out=$(raw "GET /hello.txt HTTP/1.1\r\n${H}\r\nGET /dir/x HTTP/1.1\r\n${H}Connection: close\r\n\r\n")
	check "pipelined: two responses" 2 "$(printf '%s' "$out" | grep -c '^HTTP/1.1 200')"
	check_match "pipelined: second body" "inner" "$out"

	check "still serving" hello "$(curl -s "$URL/hello.txt")"
	kill -0 "$DPID" && ok "daemon alive" || not_ok "daemon died"
}

run_backends checks
