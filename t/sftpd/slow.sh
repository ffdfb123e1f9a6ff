#!/bin/sh
# With slowfs (every metadata op delayed) below part of the root: a STAT
# of a fast path on one connection is answered while READDIRs of the slow
# directory are pending on others, one connection answers out of order,
# and the slow listing is whole.
. "$top_srcdir/t/sftpd/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

R=$T/root
mkdir -p "$R/slow" "$T/back"
printf 'fast\n' > "$R/fast.txt"
python3 -c '
import os, sys
for i in range(400):
    open(os.path.join(sys.argv[1], "e%04d" % i), "w").close()
' "$T/back"
slowfs_mount --delay-ms 50 -o max_threads=64 "$T/back" "$R/slow"
rc=$?
[ $rc = 77 ] && { echo "SKIP: cannot mount slowfs"; exit 77; }
[ $rc = 0 ] || { echo "slowfs_mount failed"; exit 99; }
trap 'cleanup_sftpd; slowfs_umount "$R/slow" "$SLOWFS_PID"; rm -rf "$T"' EXIT

for backend in uring threads; do
	echo "# backend $backend"
	FIBRIL_BACKEND=$backend start_sftpd "$R"
	SFTPD_BACK=$T/back python3 "$SFTPC" slow "$SPORT" /slow 4 || fails=$((fails + 1))
	stop_sftpd
done
finish
