#!/bin/sh
# With slowfs (every metadata op delayed) below part of the root: a STAT
# of a fast path on one connection is answered while READDIRs of the slow
# directory are pending on others, one connection answers out of order,
# and the slow listing is whole. With a slowfs whose close(2) of a file
# waits too (--slow-close, as a network file system's flush does), a
# STAT on one connection is answered while CLOSEs of such files are
# pending on another: the server never closes on its loop.
. "$top_srcdir/t/sftpd/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

R=$T/root
mkdir -p "$R"
printf 'fast\n' > "$R/fast.txt"
slow_dir 400 "$R/slow"
PID1=$SLOWFS_PID
mkdir -p "$R/sclose" "$T/back2"
for i in 1 2 3 4 5 6 7 8; do printf 'f%s\n' $i > "$T/back2/f$i"; done
slowfs_mount --delay-ms 300 --slow-close -o max_threads=64 "$T/back2" "$R/sclose" ||
	{ slowfs_umount "$R/slow" "$PID1"; echo "slowfs_mount --slow-close failed"; exit 99; }
PID2=$SLOWFS_PID
trap 'cleanup_sftpd; slowfs_umount "$R/slow" "$PID1"; slowfs_umount "$R/sclose" "$PID2"; rm -rf "$T"' EXIT

for backend in uring threads; do
	echo "# backend $backend"
	FIBRIL_BACKEND=$backend start_sftpd "$R"
	SFTPD_BACK=$T/back python3 "$SFTPC" slow "$SPORT" /slow 4 || fails=$((fails + 1))
	python3 "$SFTPC" closes "$SPORT" /sclose "$R/sclose" 8 || fails=$((fails + 1))
	for i in $(seq 1 50); do
		s=$(sftpd_stats)
		case $s in "connections 0,"*", closing 0") break ;; esac
		sleep 0.1
	done
	check "every descriptor closed once the clients are gone" "connections 0 closing 0" \
		"$(echo "$s" | sed 's/^\(connections [0-9]*\),.*\(closing [0-9]*\)$/\1 \2/')"
	stop_sftpd
done
finish
