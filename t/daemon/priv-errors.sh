# What a user is told when a file or an address the configuration names
# cannot be had, at start-up (standard error, exit 1) and at a reload
# (the error log; the previous configuration goes on serving): an
# ssl_certificate that is missing, a directory, a symbolic link the
# service user planted, unreadable by the user the daemon runs as, and a
# listen address that cannot be bound, directly or through the root
# helper. Each message is "file:line: key path: why", the path escaped.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/daemon/reload_lib.sh"
need openssl setpriv

need_root_nobody

chmod 755 "$T"
D=$T/root
KR=$T/keys      # root's alone
SV=$T/svc       # the service user's
PUB=$T/pub      # anyone may read
mkdir -p "$D" "$KR" "$SV" "$PUB" "$T/certdir"
chmod 755 "$D" "$PUB"
chmod 700 "$KR"
chown nobody "$SV"
echo "over tls" > "$D/hi.txt"
NOBODY=(setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups)

for n in a b; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$KR/$n.key" -out "$KR/$n.crt" -days 2 -subj "/CN=localhost $n" \
		-addext subjectAltName=IP:127.0.0.1 2>"$T/openssl.err" ||
		{ cat "$T/openssl.err"; exit 99; }
done
cp "$KR/a.crt" "$KR/a.key" "$PUB/"
chmod 644 "$PUB/a.crt" "$PUB/a.key"
# the service user points a name in its directory at a file of root's
"${NOBODY[@]}" ln -s "$KR/b.crt" "$SV/link.crt" || { echo "cannot plant a link"; exit 99; }
ESC=$(printf '\033')
BADNAME="$T/none${ESC}[31m.crt"

# hold ADDR PORT: a process of ours listens there until the test ends
HELD=()
hold() {
	python3 -c '
import socket, sys, time
s = socket.socket()
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen()
print("bound", flush=True)
time.sleep(300)' "$1" "$2" >"$T/hold-$2" 2>&1 &
	HELD+=($!)
	wait_for "$T/hold-$2" bound || { cat "$T/hold-$2"; echo "cannot hold port $2"; exit 99; }
}
eval "lib_$(declare -f cleanup)"
cleanup() {
	local p
	for p in "${HELD[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	lib_cleanup
}

P=$(free_port)
SPORT=$(free_port)
BUSY=$(free_port)
hold 127.0.0.1 "$BUSY"
BUSYLOW=$(free_low_port)
[ -n "$BUSYLOW" ] || { echo "SKIP: no free port below 1024"; exit 77; }
hold 127.0.0.1 "$BUSYLOW"

# conf CERT [KEY [LISTEN [USER]]]: ssl_certificate on line 6, the key
# (default $KR/a.key) on line 7, the extra listen address (if any) on
# line 8; user nobody unless USER is given (empty: none)
conf() {
	{
		printf '[server]\nroot = %s\n' "$D"
		if [ "${4-nobody}" ]; then echo "user = ${4-nobody}"; else echo "# as started"; fi
		printf 'listen = 127.0.0.1:%s\nlisten = 127.0.0.1:%s ssl\n' "$P" "$SPORT"
		printf 'ssl_certificate = %s\n' "$1"
		printf 'ssl_certificate_key = %s\n' "${2:-$KR/a.key}"
		[ -z "${3:-}" ] || echo "listen = $3"
	} > "$T/c.conf"
}
# start_fails [COMMAND PREFIX...]: starts on $T/c.conf, which must fail
# at once: prints "rc N" and what came on standard error
start_fails() {
	timeout 10 "$@" "$FSD" -c "$T/c.conf" 2>&1 >/dev/null
	echo "rc $?"
}
served_cn() {
	openssl s_client -connect "127.0.0.1:$SPORT" </dev/null 2>/dev/null |
		openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}
# refused NAME REGEX: the reload just made logged REGEX as an error, and
# the previous configuration still serves, certificate a included
FAILED=0
refused() {
	FAILED=$((FAILED + 1))
	check_log "reload, $1: says why" "$T/daemon.err" "\[error\] $2"
	check "reload, $1: previous configuration kept" $FAILED \
		"$(grep -Ec '(reload: the configuration has 1 error|reload failed): still serving' "$T/daemon.err")"
	check "reload, $1: still serving" 200 "$(code /hi.txt)"
	check "reload, $1: certificate a still served" "localhost a" "$(served_cn)"
}

C=$T/c\.conf
startup_checks() {
	local out
	conf "$T/none.crt"
	out=$(start_fails)
	check_match "start, missing certificate" \
		"^$C:6: ssl_certificate $T/none\.crt: No such file or directory$" "$out"
	check_match "... exits 1" "rc 1$" "$out"
	conf "$T/certdir"
	check_match "start, a directory" "$C:6: ssl_certificate $T/certdir: is a directory" \
		"$(start_fails)"
	conf "$SV/link.crt"
	check_match "start, a link the service user planted" \
		"$C:6: ssl_certificate $SV/link\.crt: symbolic link link\.crt in the path could be changed by others than root" \
		"$(start_fails)"
	conf "$KR/a.crt" "" "" ""
	out=$(start_fails "${NOBODY[@]}")
	check_match "start as nobody, a certificate it cannot read" \
		"$C:6: ssl_certificate $KR/a\.crt: Permission denied" "$out"
	check_match "... and the key" "$C:7: ssl_certificate_key $KR/a\.key: Permission denied" "$out"
	conf "$BADNAME"
	out=$(start_fails)
	check_match "start, a path with a control byte: escaped" \
		"$C:6: ssl_certificate $T/none\\\\x1b\[31m\.crt: No such file" "$out"
	check "... no raw control byte" 0 "$(printf '%s' "$out" | grep -c "$ESC")"
	conf "$KR/a.crt" "" "127.0.0.1:$BUSY"
	out=$(start_fails)
	check_match "start, a listen address in use" \
		"^$C:8: listen 127\.0\.0\.1:$BUSY: Address already in use \(another process is listening there\)$" "$out"
	check_match "... exits 1" "rc 1$" "$out"
}

checks() {
	startup_checks

	conf "$KR/a.crt"
	start_conf "$T/c.conf" "$P"
	FAILED=0
	check "runs as nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"
	check "certificate a served" "localhost a" "$(served_cn)"

	conf "$T/none.crt"
	reload
	refused "missing certificate" "$C:6: ssl_certificate $T/none\.crt: No such file or directory"
	conf "$T/certdir"
	reload
	refused "a directory" "$C:6: ssl_certificate $T/certdir: is a directory"
	conf "$SV/link.crt"
	reload
	refused "a link the service user planted" \
		"$C:6: ssl_certificate $SV/link\.crt: symbolic link link\.crt in the path could be changed by others than root"
	conf "$BADNAME"
	reload
	refused "a path with a control byte" "$C:6: ssl_certificate $T/none\\\\x1b\[31m\.crt: No such file"
	check "reload, no raw control byte in the log" 0 "$(grep -c "$ESC" "$T/daemon.err")"
	conf "$KR/a.crt" "" "127.0.0.1:$BUSY"
	reload
	refused "a listen address in use" \
		"$C:8: listen 127\.0\.0\.1:$BUSY: Address already in use \(another process is listening there\)"
	conf "$KR/a.crt" "" "127.0.0.1:$BUSYLOW"
	reload
	refused "a port below 1024 in use (the root helper binds)" \
		"$C:8: listen 127\.0\.0\.1:$BUSYLOW: Address already in use \(another process is listening there\)"
	conf "$KR/a.crt" "" "203.0.113.7:$BUSY"
	reload
	refused "an address not on this machine" \
		"$C:8: listen 203\.0\.113\.7:$BUSY: Cannot assign requested address"
	stop_daemon

	# Never root: nothing reads for it, and a certificate it can no
	# longer read fails the reload.
	conf "$PUB/a.crt" "$PUB/a.key" "" ""
	"${NOBODY[@]}" "$FSD" -c "$T/c.conf" >"$T/daemon.out" 2>"$T/daemon.err" &
	DPID=$!
	RELOADS=0 FAILED=0
	answers "$P" || { cat "$T/daemon.err"; echo "could not start fileserverd as nobody"; exit 99; }
	check "started as nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"
	chmod 600 "$PUB/a.crt"
	reload
	refused "as nobody, a certificate it cannot read" \
		"$C:6: ssl_certificate $PUB/a\.crt: Permission denied"
	chmod 644 "$PUB/a.crt"
}
run_backends checks
