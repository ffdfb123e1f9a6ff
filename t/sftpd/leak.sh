#!/bin/sh
# Connections that go away mid-listing (and with files open, opens and
# stats pending) leave nothing behind: after they are gone the server
# holds no connection, scan, flight or open, and no more memory than
# before them; at exit LeakSanitizer (the sanitizer build runs this test
# in make check-unit) finds no leak. Uses slowfs so that the listings are
# surely in progress; without FUSE a local directory stands in.
. "$top_srcdir/t/sftpd/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

R=$T/root
mkdir -p "$R/slow" "$T/back"
printf 'fast\n' > "$R/fast.txt"
python3 -c '
import os, sys
for i in range(600):
    open(os.path.join(sys.argv[1], "e%04d" % i), "w").close()
' "$T/back"
SLOWFS_PID=
if slowfs_mount --delay-ms 20 -o max_threads=64 "$T/back" "$R/slow"; then
	trap 'cleanup_sftpd; slowfs_umount "$R/slow" "$SLOWFS_PID"; rm -rf "$T"' EXIT
else
	echo "# slowfs cannot be mounted: a local directory instead"
	rmdir "$R/slow" && cp -r "$T/back" "$R/slow"
fi

idle="connections 0, bytes 0, scans 0, flights 0, opens 0, in flight 0, closing 0"
for backend in uring threads; do
	echo "# backend $backend"
	FIBRIL_BACKEND=$backend start_sftpd "$R"
	check "nothing alive at start" "$idle" "$(sftpd_alive)"
	python3 "$SFTPC" leave "$SPORT" /slow 12 || fails=$((fails + 1))
	# The server sees each disconnect at once; in-flight kernel calls of
	# the cancelled operations take up to one slowfs delay to finish.
	for i in $(seq 1 100); do
		s=$(sftpd_alive)
		[ "$s" = "$idle" ] && break
		sleep 0.1
	done
	check "nothing alive after 12 connections left mid-listing" "$idle" "$s"
	stop_sftpd
done
finish
