# contrib/bench/peers.sh: start and stop fileserverd and its peers (nginx,
# lighttpd) on loopback with equivalent settings, for the benchmarks.
# Bash; source it. Each server runs in the foreground of a background job,
# from its own temp prefix (config, pid, error log, temp dirs): no system
# configuration, no port 80, as the invoking user (root is fine).
#
# Equivalent settings: one worker process/thread, access log off,
# keep-alive requests effectively unlimited, directory listings on.
#   nginx     worker_processes 1 and master_process off (the one process
#             is the worker, so its pid is the one to sample), sendfile,
#             open_file_cache, autoindex on.
#   lighttpd  server.max-worker = 0 (one process), mod_dirlisting.
#   fileserverd  -w 1 (listings are on by default).
#
#   peer_free_port                     print a free port on PEER_ADDR
#   peer_start NAME ROOT [PORT] [--] [EXTRA...]
#       NAME is nginx, lighttpd or fileserverd. Starts it serving ROOT on
#       PEER_ADDR:PORT (free one if omitted), waits until it answers
#       HTTP. Sets PEER_PORT[NAME], PEER_PID[NAME], PEER_URL[NAME],
#       PEER_DIR[NAME]. For fileserverd, EXTRA is appended to its command
#       line (e.g. -c FILE); FSD_CONF, if set, is passed as -c.
#       Returns non-zero with a message on stderr if it cannot start.
#   peer_stop NAME                     stop it, remove its prefix
#   peer_stop_all                      stop every started server
#   peer_vmhwm NAME                    its peak RSS (VmHWM) in kB
#   peer_vmrss NAME                    its RSS (VmRSS) in kB
#   peer_timed NAME OUT CMD...         runs CMD (the load) with its output
#                                      in OUT and returns its status; sets
#                                      PEER_SRV_SECS (NAME's CPU meanwhile,
#                                      all threads) and PEER_CLI_SECS
#                                      (CMD's own, user + system)
#
# Binaries: $NGINX (nginx), $LIGHTTPD (lighttpd), $FSD (else
# $top_builddir/fileserverd, else ./fileserverd).
# PEER_TLS="CERT KEY" (PEM files): nginx and fileserverd listen with
# TLS (1.2 and 1.3, the same certificate) and PEER_URL is https://;
# lighttpd is refused then (its TLS module is another package).
# PEER_ADDR (127.0.0.1): the IPv4 address the servers listen on, e.g.
# one end of a veth pair whose other end is in a network namespace.
# PEER_NICE=N starts every server under `nice -n N` (all its threads):
# on a shared machine, a negative N (as root) keeps other work from
# taking the servers' CPU during a measurement; the same for each peer.

declare -gA PEER_PID PEER_PORT PEER_URL PEER_DIR
PEERS_ALL="fileserverd nginx lighttpd"

peer_free_port() {
	local p i
	for i in $(seq 1 100); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		# Nothing accepts a connection there: free as far as we can tell;
		# peer_start retries if a bind still loses a race.
		if ! (exec 3<>"/dev/tcp/${PEER_ADDR:-127.0.0.1}/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "peers: no free port found" >&2
	return 1
}

peer_bin() {
	case $1 in
	nginx) echo "${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}" ;;
	lighttpd) echo "${LIGHTTPD:-$(command -v lighttpd || echo /usr/sbin/lighttpd)}" ;;
	fileserverd)
		if [ -n "${FSD:-}" ]; then echo "$FSD"
		elif [ -n "${top_builddir:-}" ]; then echo "$top_builddir/fileserverd"
		else echo "./fileserverd"; fi ;;
	*) return 1 ;;
	esac
}

_peer_conf_nginx() {   # DIR ROOT PORT
	mkdir -p "$1/logs" "$1/tmp" || return 1
	cat > "$1/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
user $(id -un) $(id -gn);
pid $1/nginx.pid;
error_log $1/logs/error.log warn;
events { worker_connections 8192; }
http {
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 10000000;
	keepalive_timeout 65;
	open_file_cache max=10000 inactive=60s;
	open_file_cache_valid 60s;
	open_file_cache_errors on;
	client_body_temp_path $1/tmp/body;
	proxy_temp_path $1/tmp/proxy;
	fastcgi_temp_path $1/tmp/fastcgi;
	uwsgi_temp_path $1/tmp/uwsgi;
	scgi_temp_path $1/tmp/scgi;
	server {
		listen ${PEER_ADDR:-127.0.0.1}:$3${PEER_TLS:+ ssl};
		${PEER_TLS:+ssl_certificate ${PEER_TLS% *}; ssl_certificate_key ${PEER_TLS#* };}
		${PEER_TLS:+ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:SSL:1m;}
		root $2;
		location / { autoindex on; }
	}
}
EOF
}

_peer_conf_lighttpd() {   # DIR ROOT PORT
	local mime
	mkdir -p "$1/tmp" || return 1
	if [ -x /usr/share/lighttpd/create-mime.conf.pl ]; then
		/usr/share/lighttpd/create-mime.conf.pl > "$1/mime.conf" 2>/dev/null || : > "$1/mime.conf"
		mime="include \"$1/mime.conf\""
	else
		mime='mimetype.assign = ( ".html" => "text/html", "" => "application/octet-stream" )'
	fi
	cat > "$1/lighttpd.conf" <<EOF
server.modules = ( "mod_dirlisting" )
server.document-root = "$2"
server.bind = "${PEER_ADDR:-127.0.0.1}"
server.port = $3
server.pid-file = "$1/lighttpd.pid"
server.errorlog = "$1/error.log"
server.upload-dirs = ( "$1/tmp" )
server.max-worker = 0
server.max-fds = 16384
server.max-connections = 8192
server.max-keep-alive-requests = 10000000
server.max-keep-alive-idle = 65
server.network-backend = "sendfile"
dir-listing.activate = "enable"
index-file.names = ( "index.html" )
$mime
EOF
}

peer_start() {
	local name=$1 root=$2 port=${3:-} dir bin pid try i _peer_nice= scheme=http
	local -a tls_listen=() tls_curl=()
	[ -n "${PEER_NICE:-}" ] && _peer_nice="nice -n $PEER_NICE"
	if [ -n "${PEER_TLS:-}" ]; then
		[ "$name" != lighttpd ] || { echo "peers: lighttpd: no TLS here (PEER_TLS)" >&2; return 1; }
		scheme=https tls_curl=(--cacert "${PEER_TLS% *}")
	fi
	shift 2
	[ $# -gt 0 ] && shift
	[ "${1:-}" = -- ] && shift
	case $name in nginx|lighttpd|fileserverd) ;; *)
		echo "peers: unknown server '$name'" >&2; return 1 ;;
	esac
	bin=$(peer_bin "$name")
	if [ ! -x "$bin" ]; then
		echo "peers: $name: no executable at '$bin'" >&2
		return 1
	fi
	[ -d "$root" ] || { echo "peers: $name: root '$root' is not a directory" >&2; return 1; }
	root=$(cd "$root" && pwd -P)
	dir=$(mktemp -d "${TMPDIR:-/tmp}/peer-$name.XXXXXX") || return 1
	for try in 1 2 3 4 5; do
		[ -n "$port" ] && [ "$try" -gt 1 ] && break   # a fixed port: no retry
		local p=${port:-$(peer_free_port)} || return 1
		case $name in
		nginx)
			_peer_conf_nginx "$dir" "$root" "$p" || return 1
			$_peer_nice "$bin" -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" \
				> "$dir/out" 2>&1 < /dev/null &
			;;
		lighttpd)
			_peer_conf_lighttpd "$dir" "$root" "$p" || return 1
			$_peer_nice "$bin" -D -f "$dir/lighttpd.conf" > "$dir/out" 2>&1 < /dev/null &
			;;
		fileserverd)
			tls_listen=(${FSD_CONF:+-c "$FSD_CONF"})
			if [ -n "${PEER_TLS:-}" ]; then
				# FSD_CONF, then the certificate in a [server] of its own
				{ [ -z "${FSD_CONF:-}" ] || cat "$FSD_CONF"
				  printf '\n[server]\nssl_certificate = %s\nssl_certificate_key = %s\n' \
					"${PEER_TLS% *}" "${PEER_TLS#* }"; } > "$dir/tls.conf" || return 1
				tls_listen=(-c "$dir/tls.conf")
			fi
			$_peer_nice "$bin" "${tls_listen[@]}" -r "$root" \
				-l "${PEER_ADDR:-127.0.0.1}:$p${PEER_TLS:+ ssl}" -w 1 "$@" \
				> "$dir/out" 2>&1 < /dev/null &
			;;
		esac
		pid=$!
		for i in $(seq 1 200); do
			if ! kill -0 "$pid" 2>/dev/null; then
				wait "$pid" 2>/dev/null
				break
			fi
			if curl -s -o /dev/null --max-time 2 "${tls_curl[@]}" "$scheme://${PEER_ADDR:-127.0.0.1}:$p/" 2>/dev/null; then
				PEER_PID[$name]=$pid
				PEER_PORT[$name]=$p
				PEER_URL[$name]=$scheme://${PEER_ADDR:-127.0.0.1}:$p
				PEER_DIR[$name]=$dir
				return 0
			fi
			sleep 0.05
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		# Lost a race for the port? Try another; anything else is fatal.
		grep -qi "in use" "$dir/out" "$dir"/*.log "$dir"/logs/*.log 2>/dev/null || break
	done
	{
		echo "peers: $name did not start (root $root, port ${p:-?}); its output:"
		cat "$dir/out" "$dir"/*.log "$dir"/logs/*.log 2>/dev/null | tail -20 | sed 's/^/  /'
	} >&2
	rm -rf "$dir"
	return 1
}

peer_stop() {
	local name=$1 pid=${PEER_PID[$1]:-} i
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -rf "${PEER_DIR[$name]}"
	unset "PEER_PID[$name]" "PEER_PORT[$name]" "PEER_URL[$name]" "PEER_DIR[$name]"
	return 0
}

peer_stop_all() {
	local n
	for n in "${!PEER_PID[@]}"; do
		peer_stop "$n"
	done
}

_peer_status() {   # NAME FIELD
	local pid=${PEER_PID[$1]:-}
	[ -n "$pid" ] && awk -v f="$2:" '$1 == f { print $2 }' "/proc/$pid/status"
}
peer_vmhwm() { _peer_status "$1" VmHWM; }
peer_vmrss() { _peer_status "$1" VmRSS; }
_peer_cpu_ticks() {   # NAME: its CPU so far in clock ticks, 0 if none
	local pid=${PEER_PID[$1]:-}
	{ [ -n "$pid" ] && awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null; } || echo 0
}
peer_timed() {
	local name=$1 out=$2 t0 t1 st=0 tf
	shift 2
	tf=$(mktemp) || return 1
	t0=$(_peer_cpu_ticks "$name")
	{ TIMEFORMAT='%U %S'; time "$@" > "$out" 2>&1; } 2> "$tf" || st=$?
	t1=$(_peer_cpu_ticks "$name")
	PEER_SRV_SECS=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f\n", t / hz }')
	PEER_CLI_SECS=$(awk '{ printf "%.3f\n", $1 + $2 }' "$tf")
	rm -f "$tf"
	return "$st"
}
