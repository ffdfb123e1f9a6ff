# t/daemon/reload_lib.sh: sourced after lib.sh by the reload and drain
# tests, which start the daemon on a configuration file alone (a -l on
# the command line would hold over the file's listen lines).

# answers PORT: something answers HTTP there within 5 s.
answers() {
	local i
	for i in $(seq 1 100); do
		curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1/.fsd-probe" && return 0
		sleep 0.05
	done
	return 1
}

# start_conf CONF PORT: starts the daemon on CONF (which listens on
# PORT). Sets DPID, PORT, URL, and RELOADS (reloads logged so far).
start_conf() {
	"$FSD" -c "$1" >"$T/daemon.out" 2>"$T/daemon.err" &
	DPID=$!
	PORT=$2
	URL=http://127.0.0.1:$PORT
	RELOADS=0
	answers "$PORT" || { cat "$T/daemon.err"; echo "could not start fileserverd"; exit 99; }
}

# wait_count FILE REGEX N: FILE has N lines matching REGEX within 10 s.
wait_count() {
	local i
	for i in $(seq 1 100); do
		[ "$(grep -aEc -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

# reload: SIGHUP, and waits until the daemon says how it went (it logs
# "reloaded" or why not). Returns 1 if it says nothing.
reload() {
	RELOADS=$((RELOADS + 1))
	kill -HUP "$DPID"
	wait_count "$T/daemon.err" '\] (reloaded: |reload: |reload failed)' "$RELOADS"
}

# wait_exit [SECONDS]: waits at most SECONDS (default 20) for the daemon
# to exit; its status in RC (124: still running, then killed).
wait_exit() {
	local i n=$((${1:-20} * 10))
	RC=124
	for i in $(seq 1 "$n"); do
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$DPID" 2>/dev/null; then
		kill -9 "$DPID"
		wait "$DPID" 2>/dev/null
	else
		wait "$DPID"
		RC=$?
	fi
	DPID=
}
