#!/bin/sh
# umount.sh MOUNTPOINT [PID]: unmount slowfs (lazily if busy) and wait for
# its process PID, if given, to exit.
[ $# -ge 1 ] || { echo "usage: umount.sh MOUNTPOINT [PID]" >&2; exit 1; }
SLOWFS_HERE=$(cd "$(dirname "$0")" && pwd)
. "$SLOWFS_HERE/lib.sh"
slowfs_umount "$@"
