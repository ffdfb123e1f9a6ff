# Command line, configuration file, logs, signals, workers.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/private" "$D/open"
printf 'hello\n' > "$D/hello.txt"
echo p > "$D/private/p"
echo o > "$D/open/o"

checks() {
	local out rc

	# -V, -h, usage errors
	out=$("$FSD" -V); rc=$?
	check "-V exits 0" 0 "$rc"
	check_match "-V prints the version" "^fileserverd [0-9]" "$out"
	out=$("$FSD" --help); rc=$?
	check "--help exits 0" 0 "$rc"
	check_match "--help lists --listen" "--listen" "$out"
	check_match "--help shows the status flag" "--listen 'ADDR:PORT \\[ssl\\] \\[status\\]'" "$out"
	check_match "--help gives the -w range" "--workers N +worker threads, 1 to 1024" "$out"
	"$FSD" --no-such-option >/dev/null 2>&1; check "unknown option exits 2" 2 "$?"
	"$FSD" -w 0 >/dev/null 2>&1; check "-w 0 is refused" 2 "$?"

	# -t on the shipped sample and on a broken file
	"$FSD" -t -c "$top_srcdir/conf/fileserverd.conf" -r "$D" >/dev/null 2>&1
	check "-t sample config" 0 "$?"
	printf '[server]\nroot = %s\nworkers = many\nbogus = 1\n[listing]\nenabled = maybe\n' "$D" > "$T/bad.conf"
	out=$("$FSD" -t -c "$T/bad.conf" 2>&1); rc=$?
	check "-t bad config exits 1" 1 "$rc"
	check_match "-t names file:line (workers)" "^$T/bad.conf:3: workers" "$out"
	check_match "-t names file:line (bogus)" "$T/bad.conf:4: unknown key 'bogus'" "$out"
	check_match "-t names file:line (enabled)" "$T/bad.conf:6: enabled" "$out"
	out=$("$FSD" -t -c "$T/nonexistent.conf" 2>&1); rc=$?
	check "-t missing file exits 1" 1 "$rc"
	out=$("$FSD" -t -r "$T/nonexistent-root" 2>&1); rc=$?
	check "-t missing root exits 1" 1 "$rc"
	check_match "-t missing --root: says it is the option's" \
		"^fileserverd: --root $T/nonexistent-root: No such file or directory$" "$out"

	# what is opened or looked up after the parse: file:line all the same
	printf '[server]\nworkers = 1\nroot = %s\n' "$T/nonexistent-root" > "$T/late.conf"
	out=$("$FSD" -t -c "$T/late.conf" 2>&1); rc=$?
	check "-t missing root in the file exits 1" 1 "$rc"
	check_match "-t missing root: file:line" \
		"^$T/late\\.conf:3: root $T/nonexistent-root: No such file or directory$" "$out"
	out=$("$FSD" -t -c "$T/late.conf" -r "$T/nonexistent-2" 2>&1)
	check_match "-t root of the file overridden by --root: the option is named" \
		"^fileserverd: --root $T/nonexistent-2: No such file or directory$" "$out"
	printf '[server]\nroot = %s\n' "$D/hello.txt" > "$T/late.conf"
	out=$("$FSD" -t -c "$T/late.conf" 2>&1)
	check_match "-t root not a directory: file:line" \
		"^$T/late\\.conf:2: root $D/hello\\.txt: Not a directory$" "$out"
	printf '[server]\nroot = %s\n\ngroup = root\nssl_certificate_key = %s\n' "$D" "$T/k.pem" > "$T/late.conf"
	out=$("$FSD" -t -c "$T/late.conf" 2>&1); rc=$?
	check "-t group without user, key without certificate: exits 1" 1 "$rc"
	check_match "-t group without user: file:line" \
		"^$T/late\\.conf:4: group is set but user is not$" "$out"
	check_match "-t key without certificate: file:line" \
		"^$T/late\\.conf:5: ssl_certificate_key is set but ssl_certificate is not$" "$out"
	"$FSD" -t -l "300.1.1.1:80" >/dev/null 2>&1; check "-t bad --listen exits 1" 1 "$?"

	# what start-up would refuse once the sockets are bound, -t refuses
	# without binding any
	local p1
	p1=$(free_port)
	printf '[server]\nroot = %s\nlisten = 127.0.0.1:%s\nlisten = 127.0.0.1:%s ssl\n' \
		"$D" "$p1" "$p1" > "$T/late.conf"
	out=$("$FSD" -t -c "$T/late.conf" 2>&1); rc=$?
	check "-t the same listen address twice exits 1" 1 "$rc"
	check_match "-t the same listen address twice: both lines" \
		"^$T/late\\.conf:4: listen 127\\.0\\.0\\.1:$p1: the same address as listen at line 3$" "$out"
	out=$(timeout 10 "$FSD" -c "$T/late.conf" 2>&1); rc=$?
	check "start: the same listen address twice exits 1" 1 "$rc"
	check_match "start: the same address, not 'in use by another process'" \
		"^$T/late\\.conf:4: listen 127\\.0\\.0\\.1:$p1: the same address as listen at line 3$" "$out"
	printf '[server]\nroot = %s\nlisten = 127.0.0.1:%s\nlisten = *:%s\n' "$D" "$p1" "$p1" > "$T/late.conf"
	out=$("$FSD" -t -c "$T/late.conf" 2>&1)
	check_match "-t a port on every address and on one" \
		"^$T/late\\.conf:4: listen \\*:$p1: the same port as listen at line 3 \\(127\\.0\\.0\\.1:$p1\\)" "$out"
	python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(1); time.sleep(30)' "$p1" &
	local holder=$!
	sleep 0.5
	out=$("$FSD" -t -r "$D" -l "127.0.0.1:$p1" 2>&1); rc=$?
	check "-t binds no socket: an address in use is still valid" 0 "$rc"
	kill "$holder"; wait "$holder" 2>/dev/null

	printf '[server]\nroot = %s\nuser = fsd-no-such-user\ngroup = fsd-no-such-group\n\nerror_log = %s\naccess_log = %s\n' \
		"$D" "$T/no-dir/error.log" "$D/hello.txt/access.log" > "$T/late.conf"
	out=$("$FSD" -t -c "$T/late.conf" 2>&1); rc=$?
	check "-t unknown user and group, logs without a directory: exits 1" 1 "$rc"
	check_match "-t unknown user: file:line" \
		"^$T/late\\.conf:3: user fsd-no-such-user: no such user$" "$out"
	check_match "-t unknown group: file:line" \
		"^$T/late\\.conf:4: group fsd-no-such-group: no such group$" "$out"
	check_match "-t error_log without a directory: file:line" \
		"^$T/late\\.conf:6: error_log $T/no-dir/error\\.log: directory $T/no-dir: No such file or directory$" "$out"
	check_match "-t access_log under a file: file:line" \
		"^$T/late\\.conf:7: access_log $D/hello\\.txt/access\\.log: directory $D/hello\\.txt: Not a directory$" "$out"
	check "-t made no log" "" "$(ls "$T/no-dir" 2>/dev/null)"
	printf '[server]\nroot = %s\nerror_log = %s\n' "$D" "$T/e-t.log" > "$T/late.conf"
	"$FSD" -t -c "$T/late.conf" >/dev/null 2>&1
	check "-t a log in an existing directory: valid" 0 "$?"
	check "-t a log in an existing directory: not made" no "$([ -e "$T/e-t.log" ] && echo yes || echo no)"
	# mime_types a FIFO nobody writes to, or an endless device: refused
	# at once, neither waited on nor read
	mkfifo "$T/types.fifo"
	for f in "$T/types.fifo" /dev/zero; do
		printf '[server]\nroot = %s\nmime_types = %s\n' "$D" "$f" > "$T/mt.conf"
		out=$(timeout 10 "$FSD" -t -c "$T/mt.conf" 2>&1); rc=$?
		check "-t mime_types $f exits 1" 1 "$rc"
		check_match "-t mime_types $f: file:line, says why" \
			"^$T/mt\\.conf:3: mime_types $f: not a regular file$" "$out"
	done

	# an unknown async backend: refused up front, with -t and without,
	# rather than workers serving with blocking calls
	out=$(FIBRIL_BACKEND=bogus "$FSD" -t -r "$D" 2>&1); rc=$?
	check "-t FIBRIL_BACKEND=bogus exits 1" 1 "$rc"
	check_match "-t FIBRIL_BACKEND=bogus: says why" \
		"^fileserverd: FIBRIL_BACKEND=bogus: unknown async backend \\(expected auto, uring or threads\\)$" "$out"
	out=$(FIBRIL_BACKEND=bogus timeout 10 "$FSD" -r "$D" -l "127.0.0.1:$(free_port)" 2>&1); rc=$?
	check "FIBRIL_BACKEND=bogus: the daemon does not start" 1 "$rc"
	check_match "FIBRIL_BACKEND=bogus: nothing served" "^fileserverd: FIBRIL_BACKEND" "$out"
	for be in auto ""; do
		FIBRIL_BACKEND=$be "$FSD" -t -r "$D" >/dev/null 2>&1
		check "-t FIBRIL_BACKEND='$be' is valid" 0 "$?"
	done

	rm -f "$T"/*.log "$T"/*.log.1
	# a real configuration: two workers, access log, per-directory listing off
	cat > "$T/fsd.conf" <<CONF
[server]
root = $D
workers = 2
access_log = $T/access.log
error_log = $T/error.log
log_level = info
[listing]
enabled = on
[dir "/private"]
listing = off
CONF
	start_daemon -c "$T/fsd.conf"
	check_match "prints the URL" "http://127.0.0.1:$PORT/" "$(cat "$T/daemon.out")"
	check "GET with config" hello "$(curl -s "$URL/hello.txt")"
	check "listing on" 200 "$(code /open/)"
	check "[dir] listing off → 403" 403 "$(code /private/)"
	check "files under [dir] still served" p "$(curl -s "$URL/private/p")"
	local i
	for i in 1 2 3 4 5 6 7 8; do curl -s -o /dev/null "$URL/hello.txt"; done
	curl -s -o /dev/null -A 'agent "quoted"' -e 'http://ref/' "$URL/hello.txt?q=1"

	# SIGUSR1 reopens the logs
	mv "$T/access.log" "$T/access.log.1"
	kill -USR1 "$DPID"
	sleep 0.3
	curl -s -o /dev/null "$URL/after-hup"
	stop_daemon
	# Lines are buffered per worker (flushed at least once a second), so
	# one logged before the SIGUSR1 may land in either file.
	local all
	all=$(cat "$T/access.log.1" "$T/access.log" 2>/dev/null)
	check_match "access log: CLF line" \
		'^127\.0\.0\.1 - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} [-+][0-9]{4}\] "GET /hello.txt HTTP/1.1" 200 6 "-" "curl/[^"]*"$' \
		"$(printf '%s\n' "$all" | grep -m1 'GET /hello.txt HTTP')"
	check "access log: every request" 10 "$(printf '%s\n' "$all" | grep -c '"GET /hello.txt')"
	check_match "access log: referer, escaped agent, query" \
		'"GET /hello.txt\?q=1 HTTP/1.1" 200 6 "http://ref/" "agent \\"quoted\\""' "$all"
	check_match "access log: a 403 with its page's size" '"GET /private/ HTTP/1.1" 403 [1-9][0-9]* ' "$all"
	check_match "access log: request after SIGUSR1 in the new file" \
		'"GET /after-hup HTTP/1.1" 404 ' "$(cat "$T/access.log" 2>/dev/null)"
	check_match "error log: backend logged" "async: backend" "$(cat "$T/error.log")"
	check "error log: backend logged once" 1 "$(grep -c 'async: backend' "$T/error.log")"
	check_match "error log: SIGUSR1 noted" "reopening logs" "$(cat "$T/error.log")"
	rm -f "$T/access.log" "$T/access.log.1" "$T/error.log"

	# command line overrides the file
	start_daemon -c "$T/fsd.conf" -r "$D/open"
	check "--root overrides root" o "$(curl -s "$URL/o")"
	stop_daemon

	# user = nobody: privileges dropped before the workers start
	if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
		chmod 755 "$T" "$D"
		printf '[server]\nroot = %s\nuser = nobody\nerror_log = %s\n' "$D" "$T/priv.log" > "$T/priv.conf"
		start_daemon -c "$T/priv.conf"
		check "serves as nobody" hello "$(curl -s "$URL/hello.txt")"
		check "runs as nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"
		rm -f "$T/priv.log"
	fi
}

run_backends checks
