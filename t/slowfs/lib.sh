# t/slowfs/lib.sh: shell functions to mount and unmount slowfs, the slow
# FUSE test filesystem. POSIX sh; source it, then:
#
#   slowfs_mount [options] BACKING MOUNTPOINT
#       Starts slowfs in the background, returns once MOUNTPOINT is
#       served. Sets SLOWFS_PID (a child of the calling shell: a bare
#       `wait` would wait for it too). Options: --delay-ms N, --delay-us N,
#       --eio NAME (repeatable), --eio-suffix SUF (default .eio), and any
#       slowfs/libfuse option (-o max_threads=N, -d ...).
#       Returns 0 mounted, 77 cannot mount here (no /dev/fuse, no
#       permission, slowfs not built), 1 error.
#   slowfs_umount MOUNTPOINT [PID]
#       Unmounts (lazily if busy) and waits for PID to exit.
#   slowfs_stats MOUNTPOINT OP
#       Prints the counter of OP (lookup, getattr, readlink, open,
#       opendir, readdir, read, eio; also inflight_max, the most delayed
#       ops ever waiting at once, and delay_us) of the mounted slowfs.
#
# The binary is $SLOWFS, else $SLOWFS_BUILDDIR/t/slowfs/slowfs, else
# $top_builddir/t/slowfs/slowfs, else slowfs next to this file.

slowfs_bin() {
	for c in "${SLOWFS:-}" \
		"${SLOWFS_BUILDDIR:+$SLOWFS_BUILDDIR/t/slowfs/slowfs}" \
		"${top_builddir:+$top_builddir/t/slowfs/slowfs}" \
		"${SLOWFS_HERE:+$SLOWFS_HERE/slowfs}"; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

# slowfs_can_mount: 0 if this machine can mount slowfs, else prints why
# on stderr and returns 77.
slowfs_can_mount() {
	if [ ! -c /dev/fuse ]; then
		echo "slowfs: no /dev/fuse" >&2
		return 77
	fi
	if [ "$(id -u)" != 0 ] && ! command -v fusermount3 >/dev/null 2>&1; then
		echo "slowfs: not root and no fusermount3" >&2
		return 77
	fi
	if ! slowfs_bin >/dev/null; then
		echo "slowfs: binary not built (fuse3 missing at configure time?)" >&2
		return 77
	fi
	return 0
}

slowfs_mount() {
	SLOWFS_PID=
	slowfs_can_mount || return $?
	_sfs_bin=$(slowfs_bin)
	_sfs_args=
	_sfs_pos=
	# Normalise "--delay-ms N" and friends to the forms slowfs parses,
	# and keep the two positional arguments apart. Arguments are quoted
	# into a string for eval, since POSIX sh has no arrays.
	while [ $# -gt 0 ]; do
		case $1 in
		--delay-ms|--delay-us|--readdir-delay-ms|--eio|--eio-suffix)
			[ $# -ge 2 ] || { echo "slowfs_mount: $1 needs a value" >&2; return 1; }
			_sfs_args="$_sfs_args $(_sfs_quote "$1=$2")"; shift 2; continue ;;
		-o)
			[ $# -ge 2 ] || { echo "slowfs_mount: -o needs a value" >&2; return 1; }
			_sfs_args="$_sfs_args -o $(_sfs_quote "$2")"; shift 2; continue ;;
		-*)
			_sfs_args="$_sfs_args $(_sfs_quote "$1")" ;;
		*)
			_sfs_pos="$_sfs_pos $(_sfs_quote "$1")" ;;
		esac
		shift
	done
	eval "set -- $_sfs_pos"
	if [ $# -ne 2 ]; then
		echo "usage: slowfs_mount [options] BACKING MOUNTPOINT" >&2
		return 1
	fi
	_sfs_back=$1
	_sfs_mnt=$2
	[ -d "$_sfs_back" ] || { echo "slowfs_mount: $_sfs_back: not a directory" >&2; return 1; }
	[ -d "$_sfs_mnt" ] || { echo "slowfs_mount: $_sfs_mnt: not a directory" >&2; return 1; }
	_sfs_dev0=$(stat -c %d "$_sfs_mnt") || return 1
	_sfs_log=$(mktemp "${TMPDIR:-/tmp}/slowfs-log.XXXXXX") || return 1
	# Output to a file, never to our stdout: callers run us inside $(...)
	# and would otherwise wait for the daemon to close the pipe.
	# exec: the background subshell becomes slowfs (SLOWFS_PID is its pid)
	# instead of lingering with our stdout open.
	eval "exec \"\$_sfs_bin\" -f $_sfs_args \"\$_sfs_back\" \"\$_sfs_mnt\"" \
		>"$_sfs_log" 2>&1 </dev/null &
	SLOWFS_PID=$!
	_sfs_i=0
	while [ $_sfs_i -lt 200 ]; do
		if ! kill -0 "$SLOWFS_PID" 2>/dev/null; then
			wait "$SLOWFS_PID"
			_sfs_rc=$?
			echo "slowfs_mount: slowfs exited with status $_sfs_rc:" >&2
			cat "$_sfs_log" >&2
			rm -f "$_sfs_log"
			SLOWFS_PID=
			[ $_sfs_rc = 3 ] && return 77
			return 1
		fi
		# A new st_dev on the mount point: mounted, and the stat went
		# through the FUSE handshake, so it is serving.
		_sfs_dev=$(stat -c %d "$_sfs_mnt" 2>/dev/null)
		if [ -n "$_sfs_dev" ] && [ "$_sfs_dev" != "$_sfs_dev0" ]; then
			rm -f "$_sfs_log"
			return 0
		fi
		sleep 0.05
		_sfs_i=$((_sfs_i + 1))
	done
	echo "slowfs_mount: $_sfs_mnt not mounted after 10 s:" >&2
	cat "$_sfs_log" >&2
	rm -f "$_sfs_log"
	kill "$SLOWFS_PID" 2>/dev/null
	SLOWFS_PID=
	return 1
}

_sfs_quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

slowfs_umount() {
	_sfs_mnt=$1
	_sfs_pid=${2:-}
	if ! fusermount3 -u "$_sfs_mnt" 2>/dev/null && ! umount "$_sfs_mnt" 2>/dev/null; then
		# Busy (a straggler still has a file open): detach it anyway.
		fusermount3 -u -z "$_sfs_mnt" 2>/dev/null || umount -l "$_sfs_mnt" 2>/dev/null
	fi
	[ -n "$_sfs_pid" ] || return 0
	_sfs_i=0
	while kill -0 "$_sfs_pid" 2>/dev/null; do
		if [ $_sfs_i -ge 100 ]; then
			kill "$_sfs_pid" 2>/dev/null
			[ $_sfs_i -ge 200 ] && { kill -9 "$_sfs_pid" 2>/dev/null; break; }
		fi
		sleep 0.05
		_sfs_i=$((_sfs_i + 1))
	done
	wait "$_sfs_pid" 2>/dev/null
	return 0
}

slowfs_stats() {
	awk -v op="$2" '$1 == op { print $2 }' "$1/.slowfs-stats"
}
