#!/bin/sh
# test-slowfs.sh: slowfs (the slow FUSE test filesystem) mirrors its
# backing directory, every metadata op reaches it (counted, not timed),
# ops overlap (first lookups of new names too), chosen names fail with
# EIO while the others work, and it unmounts cleanly. Skips (77) where FUSE cannot be mounted.
set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
SLOWFS_HERE=$top_srcdir/t/slowfs
. "$SLOWFS_HERE/lib.sh"
slowfs_can_mount || exit 77

T=$(mktemp -d "${TMPDIR:-/tmp}/slowfs-test.XXXXXX") || exit 99
PID=
cleanup() {
	[ -n "$PID" ] && slowfs_umount "$T/mnt" "$PID"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fails=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }
check() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: expected '$2', got '$3'"; fi
}
# check_ge NAME MIN ACTUAL
check_ge() {
	if [ -n "$3" ] && [ "$3" -ge "$2" ]; then ok "$1 ($3 >= $2)"; else not_ok "$1: expected >= $2, got '$3'"; fi
}

B=$T/back
mkdir -p "$B/sub" "$B/many" "$T/mnt"
printf 'hello, slow world\n' > "$B/a"
head -c 200000 /dev/urandom > "$B/big"
ln -s a "$B/link"
ln -s ../a "$B/sub/up"
: > "$B/broken.eio"
: > "$B/chosen"
: > "$B/sub/also-chosen"
echo 'in a subdir' > "$B/sub/'quoted name'"
i=0
while [ $i -lt 200 ]; do : > "$B/many/f$i"; i=$((i + 1)); done
mkdir "$B/fresh"
i=0
while [ $i -lt 64 ]; do : > "$B/fresh/f$i"; i=$((i + 1)); done

# 5 ms: long enough that 64 concurrent stats surely overlap.
slowfs_mount --delay-ms 5 --eio chosen --eio also-chosen "$B" "$T/mnt"
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || { echo "mount failed ($rc)"; exit 1; }
PID=$SLOWFS_PID
M=$T/mnt

check "mounted as fuse.slowfs" "fuse.slowfs" "$(awk -v m="$M" '$2 == m { print $3 }' /proc/self/mounts)"
check "delay set" 5000 "$(slowfs_stats "$M" delay_us)"
check "readdir's delay the same unless set" 5000 "$(slowfs_stats "$M" readdir_delay_us)"
check "names match ls -1a" "$(cd "$B" && ls -1a)" "$(cd "$M" && ls -1a)"
check "sub names match" "$(cd "$B/sub" && ls -1a)" "$(cd "$M/sub" && ls -1a)"
check "200 names match" "$(cd "$B/many" && ls -1a)" "$(cd "$M/many" && ls -1a)"

# Attributes pass through: inode, size, mode, links, times (ns).
for f in a big link sub sub/up "sub/'quoted name'" many/f7; do
	check "stat $f" "$(stat -c '%i %s %f %h %u %g %X.%x %Y.%y' "$B/$f")" \
		"$(stat -c '%i %s %f %h %u %g %X.%x %Y.%y' "$M/$f" 2>&1)"
done
check "readlink" "a" "$(readlink "$M/link")"
check "content of a" "hello, slow world" "$(cat "$M/a")"
if cmp -s "$B/big" "$M/big"; then ok "200 kB file byte-identical"; else not_ok "big differs"; fi
check "through a symlink" "hello, slow world" "$(cat "$M/sub/up")"
check "quoted name" "in a subdir" "$(cat "$M/sub/'quoted name'")"

# EIO on the chosen names only, and the rest keeps working around them.
for f in broken.eio chosen sub/also-chosen; do
	err=$(stat "$M/$f" 2>&1 >/dev/null)
	case $err in
	*"Input/output error"*) ok "EIO on $f" ;;
	*) not_ok "EIO on $f: got '$err'" ;;
	esac
done
check "stat next to an EIO entry" "$(stat -c %i "$B/a")" "$(stat -c %i "$M/a")"
check "cat next to an EIO entry" "in a subdir" "$(cat "$M/sub/'quoted name'")"
check_ge "eio counter" 3 "$(slowfs_stats "$M" eio)"

# Every stat reaches the fs (no attribute or entry caching): 20 stats of
# one file cost at least 20 lookups and 20 getattrs.
l0=$(slowfs_stats "$M" lookup); g0=$(slowfs_stats "$M" getattr)
i=0
while [ $i -lt 20 ]; do stat "$M/a" >/dev/null; i=$((i + 1)); done
l1=$(slowfs_stats "$M" lookup); g1=$(slowfs_stats "$M" getattr)
check_ge "lookups reach slowfs" 20 $((l1 - l0))
check_ge "getattrs reach slowfs" 20 $((g1 - g0))
o0=$(slowfs_stats "$M" open); d0=$(slowfs_stats "$M" opendir); r0=$(slowfs_stats "$M" readdir)
cat "$M/a" >/dev/null; ls "$M/many" >/dev/null
check_ge "open counted" 1 $(($(slowfs_stats "$M" open) - o0))
check_ge "opendir counted" 1 $(($(slowfs_stats "$M" opendir) - d0))
check_ge "readdir counted" 1 $(($(slowfs_stats "$M" readdir) - r0))
check "stats file not listed" "" "$(ls -a "$M" | grep -F .slowfs-stats)"

# Every op pays the delay, also when the loop is busy with others: a
# lower bound only (a slow machine can only make it longer). 10 stats in
# a row of names not looked up yet, while 64 others are in flight.
i=0
pids=
while [ $i -lt 64 ]; do stat "$M/many/f$((i + 100))" >/dev/null & pids="$pids $!"; i=$((i + 1)); done
t0=$(date +%s%N)
i=0
while [ $i -lt 10 ]; do stat "$M/many/f$((i + 20))" >/dev/null; i=$((i + 1)); done
t1=$(date +%s%N)
wait $pids
check_ge "10 stats in a row took 10 delays (ms)" 50 $(((t1 - t0) / 1000000))

# Ops overlap: 64 concurrent stats leave more than one answer waiting.
# (wait for these by pid: slowfs is our child too)
i=0
pids=
while [ $i -lt 64 ]; do stat "$M/many/f$i" >/dev/null & pids="$pids $!"; i=$((i + 1)); done
wait $pids
check_ge "concurrent ops waited together" 2 "$(slowfs_stats "$M" inflight_max)"

# First lookups of new names overlap too: the kernel serialises them
# under the directory's lock unless the INIT reply carries
# FUSE_PARALLEL_DIROPS, which libfuse < 3.16 never sends (dirops.c).
# fls stats the 64 fresh names of a directory not looked at yet all at
# once (one process: no fork rate in the way). Measured: 36-61 waiting
# together; 5 with the lookups serialised.
fls=$top_builddir/contrib/examples/fls
if [ -x "$fls" ]; then
	check "fls lists the fresh names" 64 "$("$fls" "$M/fresh" | grep -c ' f[0-9]*$')"
	check_ge "first lookups of new names waited together" 16 "$(slowfs_stats "$M" inflight_max)"
else
	echo "# fls not built: first-lookup overlap not checked"
fi

# Changes in the backing dir show at once (nothing cached).
echo changed > "$B/a"
check "change seen" "changed" "$(cat "$M/a")"
rm "$B/many/f0"
if stat "$M/many/f0" >/dev/null 2>&1; then not_ok "deleted file still stats"; else ok "deleted file gone"; fi
if touch "$M/new" 2>/dev/null; then not_ok "write allowed"; else ok "read-only"; fi

slowfs_umount "$M" "$PID"
if kill -0 "$PID" 2>/dev/null; then not_ok "slowfs still running after umount"; else ok "slowfs exited"; fi
PID=
if grep -qF " $M " /proc/self/mounts; then not_ok "still mounted"; else ok "unmounted"; fi

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
exit 0
