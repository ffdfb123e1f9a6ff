#!/bin/sh
# fsd-sftp's bound on the scans reading at once (-s): eight listings of
# one slow directory (slowfs, 50 ms per metadata call, 2,000 entries:
# each scan reads for more than a second) start 200 ms apart, too far
# apart to join one another's scan before it begins its stats. With -s 1
# the first scan reads alone and the seven later listings share the one
# waiting behind it: two passes over the directory (more if the first
# scan's reader lagged and it gave its place up for a while). Without a
# bound (-s 0) nearly every listing reads the directory itself, unless
# listings may show attributes older than their request (-A), and so
# join a scan that has begun its stats. Every listing is whole.
. "$top_srcdir/t/sftpd/lib.sh"
. "$top_srcdir/t/slowfs/lib.sh"

R=$T/root
slow_dir 2000 "$R/slow"
trap 'cleanup_sftpd; slowfs_umount "$R/slow" "$SLOWFS_PID"; rm -rf "$T"' EXIT

# staggered BACKEND NAME REGEX ARGS...: 8 listings 200 ms apart on
# fsd-sftp ARGS; the passes over the directory must match REGEX.
staggered() {
	local backend=$1 name=$2 want=$3 p
	shift 3
	echo "# backend $backend, $*"
	FIBRIL_BACKEND=$backend start_sftpd "$R" "$@"
	SFTPD_ROOT=$R python3 "$SFTPC" staggered "$SPORT" /slow 8 200 || fails=$((fails + 1))
	p=$(sftpd_stats | sed -n 's/.*, passes \([0-9]*\),.*/\1/p')
	echo "# $p passes"
	check_match "$name" "$want" "$p"
	stop_sftpd
}

for backend in uring threads; do
	staggered $backend "8 staggered listings with -s 1 read the directory 2 to 4 times" \
		'^[234]$' -s 1
done
staggered uring "without a bound they read it 5 to 8 times" '^[5-8]$' -s 0
staggered uring "accepting attributes a minute old they join the first scan: 1 or 2 passes" \
	'^[12]$' -s 0 -A 60000
finish
