# t/sftpd/lib.sh: sourced by fsd-sftp's tests. Starts the real fsd-sftp
# on a free loopback port (-l 127.0.0.1:0, the port read from its log),
# stops it with SIGTERM and checks that it exits cleanly: status 0 and,
# in the sanitizer build, no AddressSanitizer or LeakSanitizer report.

set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
SFTPD=$top_builddir/contrib/sftpd/fsd-sftp
[ -x "$SFTPD" ] || { echo "SKIP: fsd-sftp not built (tevent/talloc missing at configure time)"; exit 77; }
SFTPC=$top_srcdir/t/sftpd/sftpc.py

. "$top_srcdir/t/lib.sh"
need python3

T=$(mktemp -d "${TMPDIR:-/tmp}/sftpd-test.XXXXXX")
: > "$T/sftpd.log"
SPID=
cleanup_sftpd() {
	if [ -n "$SPID" ]; then
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
	fi
	SPID=
}
cleanup() {
	cleanup_sftpd
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# start_sftpd ROOT [ARGS...]: sets SPORT and SPID; the log is $T/sftpd.log.
start_sftpd() {
	local root=$1 i
	shift
	: > "$T/sftpd.log"
	"$SFTPD" -r "$root" -l 127.0.0.1:0 "$@" 2>"$T/sftpd.log" &
	SPID=$!
	for i in $(seq 1 100); do
		SPORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/sftpd.log")
		[ -n "$SPORT" ] && return 0
		kill -0 "$SPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "fsd-sftp did not start:"
	cat "$T/sftpd.log"
	exit 99
}

# slow_dir N DIR: N empty files e0000... in $T/back, mounted on DIR
# through slowfs (50 ms per metadata call, 64 threads; t/slowfs/lib.sh
# sourced); SLOWFS_PID set. Skips (77) where FUSE cannot mount.
slow_dir() {
	local rc
	mkdir -p "$2" "$T/back"
	python3 -c '
import os, sys
for i in range(int(sys.argv[2])):
    open(os.path.join(sys.argv[1], "e%04d" % i), "w").close()
' "$T/back" "$1"
	slowfs_mount --delay-ms 50 -o max_threads=64 "$T/back" "$2"
	rc=$?
	[ $rc = 77 ] && { echo "SKIP: cannot mount slowfs"; exit 77; }
	[ $rc = 0 ] || { echo "slowfs_mount failed"; exit 99; }
}

# sftpd_stats: the SIGUSR1 line of the running server.
sftpd_stats() {
	local n
	n=$(grep -c 'stats:' "$T/sftpd.log")
	kill -USR1 "$SPID"
	for i in $(seq 1 100); do
		[ "$(grep -c 'stats:' "$T/sftpd.log")" -gt "$n" ] && break
		sleep 0.02
	done
	grep 'stats:' "$T/sftpd.log" | tail -n 1 | sed 's/.*stats: //'
}

# sftpd_alive: that line without its running totals (passes, joins).
sftpd_alive() {
	sftpd_stats | sed 's/, passes [0-9]*, joins [0-9]*//'
}

# stop_sftpd [SIGNAL]: SIGTERM (or SIGNAL, e.g. HUP), then a clean exit
# and no sanitizer report.
stop_sftpd() {
	local rc sig=${1:-TERM}
	kill -"$sig" "$SPID"
	wait "$SPID"
	rc=$?
	SPID=
	check "fsd-sftp exits 0 on SIG$sig" 0 "$rc"
	# (an allocation refused under ASan's limit, as oom.sh asks for, is
	# announced with a warning: no report)
	if grep -v 'WARNING: AddressSanitizer failed to allocate' "$T/sftpd.log" |
		grep -q 'Sanitizer\|runtime error'; then
		not_ok "sanitizer report:"
		cat "$T/sftpd.log"
	else
		ok "no sanitizer report"
	fi
}

finish() {
	[ "$fails" = 0 ] || { echo "$fails check(s) failed; server log:"; cat "$T/sftpd.log"; }
	[ "$fails" = 0 ]
}
