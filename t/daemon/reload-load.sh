# Many reloads in a row under light load (a loop of requests on new
# connections and one on keep-alive connections): no request fails,
# each reload takes effect, and once the old workers are gone the
# daemon holds as many descriptors as before.
. "$top_srcdir/t/daemon/lib.sh"
. "$top_srcdir/t/daemon/reload_lib.sh"

A=$T/a
B=$T/b
mkdir -p "$A" "$B"
echo A > "$A/who.txt"
echo B > "$B/who.txt"

# conf ROOT PORT
conf() {
	printf '[server]\nroot = %s\nlisten = 127.0.0.1:%s\naccess_log = %s\nworkers = 2\n' \
		"$1" "$2" "$T/access.log" > "$T/c.conf"
}

nfds() { ls "/proc/$DPID/fd" | wc -l; }

checks() {
	local p fd0 fd1 i root want wrong=0 loaders
	p=$(free_port)
	conf "$A" "$p"
	start_conf "$T/c.conf" "$p"
	sleep 0.5
	fd0=$(nfds)
	rm -f "$T/stop" "$T/failed"
	# new connections, one after another
	( while [ ! -e "$T/stop" ]; do
		c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$URL/who.txt")
		[ "$c" = 200 ] || echo "new connection: $c" >> "$T/failed"
	  done ) &
	loaders=$!
	# keep-alive: ten requests per connection
	( while [ ! -e "$T/stop" ]; do
		curl -s -w '%{http_code}\n' --max-time 10 \
			$(for j in 1 2 3 4 5 6 7 8 9 10; do echo "-o /dev/null $URL/who.txt"; done) |
			grep -v '^200$' | sed 's/^/keep-alive: /' >> "$T/failed"
	  done ) &
	loaders="$loaders $!"
	for i in $(seq 1 16); do
		if [ $((i % 2)) = 1 ]; then root=$B; want=B; else root=$A; want=A; fi
		conf "$root" "$p"
		reload || { not_ok "reload $i not logged"; break; }
		[ "$(curl -s "$URL/who.txt")" = "$want" ] || wrong=$((wrong + 1))
	done
	touch "$T/stop"
	wait $loaders
	check "every reload took effect" 0 "$wrong"
	check "no failed request" "" "$(cat "$T/failed" 2>/dev/null | sort | uniq -c)"
	# the old servers are freed a moment after their workers exit
	for i in $(seq 1 50); do
		fd1=$(nfds)
		[ "$fd1" -le "$fd0" ] && break
		sleep 0.1
	done
	# (at the first count a probe's connection may still be open)
	check "no descriptor leaked ($fd0 before, $fd1 after)" yes "$([ "$fd1" -le "$fd0" ] && echo yes)"
	if wait_for "$T/access.log" 'GET /who\.txt'; then ok "access log written"
	else not_ok "access log written: no GET /who.txt in it"; fi
}
run_backends checks
