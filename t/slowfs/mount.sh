#!/bin/sh
# mount.sh [options] BACKING MOUNTPOINT: mount slowfs (the slow FUSE test
# filesystem) in the background; return once it serves; print its pid.
# Options: --delay-ms N, --delay-us N (also --delay-ms=N), --eio NAME
# (repeatable; lookups of that file name fail with EIO), --eio-suffix SUF
# (default .eio), -o max_threads=N, and any libfuse option.
# Exit: 0 mounted, 77 cannot mount on this machine, 1 error.
# Unmount with umount.sh MOUNTPOINT [PID]. See lib.sh for the binary path.
SLOWFS_HERE=$(cd "$(dirname "$0")" && pwd)
. "$SLOWFS_HERE/lib.sh"
slowfs_mount "$@" || exit $?
echo "$SLOWFS_PID"
