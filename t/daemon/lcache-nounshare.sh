# The listing cache where the daemon may not unshare its file system
# context (a system call filter: here strace's, which fails every
# unshare() with EPERM): a fill adds its watches by /proc/self/fd paths
# instead, is kept, and no listing is ever stale, with a writer racing
# the listings. A mount anywhere empties every cache, so the checks are
# tried again when one came in between (mounts_still).
. "$top_srcdir/t/daemon/lib.sh"

need strace
LCK=$top_srcdir/t/daemon/lcache_check.py
D=$T/root
strace -f -qq --seccomp-bpf -o /dev/null -e trace=unshare -e inject=unshare:error=EPERM \
	true 2>/dev/null || { echo "SKIP: strace cannot inject a failed unshare here"; exit 77; }
traced_fsd --seccomp-bpf -e trace=unshare -e inject=unshare:error=EPERM

fresh() { python3 "$LCK" fresh "$URL/d/?format=ndjson" "$D/d"; }

checks() {
	rm -rf "$D"
	mkdir -p "$D/d/sub"
	for i in $(seq 1 300); do printf '%s\n' "$i" > "$D/d/f$i"; done
	printf '[server]\nroot = %s\nlog_level = debug\nerror_log = %s\n' "$D" "$T/err.log" > "$T/c.conf"
	: > "$T/err.log"
	: > "$T/strace.log"
	start_daemon -c "$T/c.conf"
	# the traced daemon fills slowly: the fill gets wait_for's 5 s
	local kept=0 listed=ok hit=0
	fresh | grep -q '^ok 301$' || listed="not ok (first)"
	wait_for "$T/err.log" 'a fill of 301 entries kept' && kept=1
	fresh | grep -q '^ok 301$' || listed="not ok (second)"
	[ "$kept" = 1 ] && hit=$(lcache_hits_reach /d/ 1)
	check "listings whole" ok "$listed"
	check "filled without unshare" 1 "$kept"
	check_match "unshare was refused" "EPERM" \
		"$(grep -m1 'unshare(CLONE_FS)' "$T/strace.log")"
	check "a listing from the cache" 1 "$hit"
	echo changed > "$D/d/f7"
	check_match "a write in place seen" '^ok 301$' "$(fresh)"
	check_match "a writer racing the listings: never stale" '^ok [0-9]+ changes$' \
		"$(python3 "$LCK" race "$URL/d/?format=ndjson" "$D/d" 3)"
	stop_traced_daemon
}

run_backends mounts_still 3 checks
