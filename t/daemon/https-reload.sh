# HTTPS and SIGHUP: a reload after the daemon has switched to nobody
# reads the certificate and a key only root may read (through the root
# helper), and new connections get the new certificate; a reload with a
# key that does not match keeps the previous one serving, and says why.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/daemon/reload_lib.sh"
need openssl

need_root_nobody

chmod 755 "$T"
D=$T/root
K=$T/keys
mkdir -p "$D" "$K"
chmod 755 "$D"
chmod 700 "$K"
echo "over tls" > "$D/hi.txt"

for n in a b c; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$T/$n.key" -out "$T/$n.crt" -days 2 -subj "/CN=localhost $n" \
		-addext subjectAltName=IP:127.0.0.1 2>"$T/openssl.err" ||
		{ cat "$T/openssl.err"; exit 99; }
done

# use N: the files the configuration names hold pair N (the key 0600)
use() {
	cp "$T/$1.crt" "$K/server.crt"
	cp "$T/$1.key" "$K/server.key"
	chmod 600 "$K/server.key"
}

# served_cn: the subject CN of the certificate a new connection gets
served_cn() {
	openssl s_client -connect "127.0.0.1:$SPORT" </dev/null 2>/dev/null |
		openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}

checks() {
	local p
	p=$(free_port)
	SPORT=$(free_port)
	use a
	printf '[server]\nroot = %s\nuser = nobody\nlisten = 127.0.0.1:%s\nlisten = 127.0.0.1:%s ssl\nssl_certificate = %s\nssl_certificate_key = %s\n' \
		"$D" "$p" "$SPORT" "$K/server.crt" "$K/server.key" > "$T/c.conf"
	start_conf "$T/c.conf" "$p"
	check "runs as nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"
	check "the key is root's alone" "0 600" "$(stat -c '%u %a' "$K/server.key")"
	check "certificate a served" "localhost a" "$(served_cn)"
	check "https with a" "over tls" "$(curl -s --cacert "$T/a.crt" "https://127.0.0.1:$SPORT/hi.txt")"

	use b
	reload
	check_log "reload with new files: reloaded" "$T/daemon.err" "\] reloaded: "
	check "certificate b served after the reload" "localhost b" "$(served_cn)"
	check "https with b" "over tls" "$(curl -s --cacert "$T/b.crt" "https://127.0.0.1:$SPORT/hi.txt")"
	check "a no longer trusted" 60 \
		"$(curl -s -o /dev/null --cacert "$T/a.crt" "https://127.0.0.1:$SPORT/hi.txt"; echo $?)"

	# a key of another certificate: refused, b still served
	cp "$T/c.key" "$K/server.key"
	reload
	check_log "mismatched key: the reload says why" "$T/daemon.err" \
		"\[error\] $T/c\.conf:7: ssl_certificate_key $K/server\.key: does not match"
	check_log "mismatched key: previous configuration kept" "$T/daemon.err" \
		"reload: the configuration has 1 error"
	check "certificate b still served" "localhost b" "$(served_cn)"
	check "still nobody" nobody "$(ps -o user= -p "$DPID" | tr -d ' ')"
}
run_backends checks
