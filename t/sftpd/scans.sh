#!/bin/sh
# fsd-sftp's bound on the scans reading at once (-s): eight listings of
# one slow directory (slowfs, 50 ms per metadata call, 2,000 entries:
# each scan reads for more than a second) start 200 ms apart, too far
# apart to join one another's scan before it begins its stats. With -s 1
# the first scan reads alone and the seven later listings share the one
# waiting behind it: two passes over the directory (three if the first
# scan's reader lagged and it gave its place up for a moment). Without a
# bound (-s 0) nearly every listing reads the directory itself, unless
# listings may show attributes older than their request (-A), and so
# join a scan that has begun its stats. Every listing is whole.
. "$top_srcdir/t/sftpd/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

R=$T/root
mkdir -p "$R/slow" "$T/back"
python3 -c '
import os, sys
for i in range(2000):
    open(os.path.join(sys.argv[1], "e%04d" % i), "w").close()
' "$T/back"
slowfs_mount --delay-ms 50 -o max_threads=64 "$T/back" "$R/slow"
rc=$?
[ $rc = 77 ] && { echo "SKIP: cannot mount slowfs"; exit 77; }
[ $rc = 0 ] || { echo "slowfs_mount failed"; exit 99; }
trap 'cleanup_sftpd; slowfs_umount "$R/slow" "$SLOWFS_PID"; rm -rf "$T"' EXIT

passes() {
	sftpd_stats | sed -n 's/.*, passes \([0-9]*\),.*/\1/p'
}

for backend in uring threads; do
	echo "# backend $backend, -s 1"
	FIBRIL_BACKEND=$backend start_sftpd "$R" -s 1
	SFTPD_ROOT=$R python3 "$SFTPC" staggered "$SPORT" /slow 8 200 || fails=$((fails + 1))
	p=$(passes)
	echo "# $p passes"
	check_match "8 staggered listings with -s 1 read the directory 2 or 3 times" '^[23]$' "$p"
	stop_sftpd
done

echo "# backend uring, -s 0"
start_sftpd "$R" -s 0
SFTPD_ROOT=$R python3 "$SFTPC" staggered "$SPORT" /slow 8 200 || fails=$((fails + 1))
p=$(passes)
echo "# $p passes"
check_match "without a bound they read it 6 to 8 times" '^[678]$' "$p"
stop_sftpd

echo "# backend uring, -s 0 -A 60000"
start_sftpd "$R" -s 0 -A 60000
SFTPD_ROOT=$R python3 "$SFTPC" staggered "$SPORT" /slow 8 200 || fails=$((fails + 1))
p=$(passes)
echo "# $p passes"
check_match "accepting attributes a minute old they join the first scan: 1 or 2 passes" '^[12]$' "$p"
stop_sftpd
finish
