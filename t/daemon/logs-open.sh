# Logs are opened as root: the service user (nobody), who may own the log
# directory, must not be able to make root append to another file. A
# symbolic link, a hard link, a file or directory of a third user, a
# directory others may write, a FIFO, or a symbolic link on the way that
# the service user controls: the daemon refuses to start, says why, and
# the target is untouched. What is safe still starts.
. "$top_srcdir/t/daemon/lib.sh"

need_root_nobody
need setpriv mkfifo
NOGROUP=$(id -gn nobody)
as_nobody() { setpriv --reuid=nobody --regid="$NOGROUP" --clear-groups -- "$@"; }

chmod 755 "$T"
D=$T/root
mkdir -p "$D"
printf 'hi\n' > "$D/a.txt"
L=$T/logs                       # the service user's log directory
mkdir -p "$L" "$T/rootdir"
chown nobody:"$NOGROUP" "$L"
chmod 755 "$L" "$T/rootdir"
printf 'precious\n' > "$T/target"
chmod 644 "$T/target"

# refuses NAME REGEX KEY=VALUE...: the daemon with these [server] lines
# exits 1 before serving, its standard error matches REGEX, and the
# target file is untouched.
refuses() {
	local name=$1 re=$2 out rc
	shift 2
	{ printf '[server]\nroot = %s\nuser = nobody\n' "$D"; printf '%s\n' "$@"; } > "$T/c.conf"
	out=$(timeout 20 "$FSD" -c "$T/c.conf" -l 127.0.0.1:0 2>&1 </dev/null)
	rc=$?
	check "$name: exits 1" 1 "$rc"
	check_match "$name: says why" "$re" "$out"
	check "$name: target untouched" precious "$(cat "$T/target")"
}

# starts NAME FILE KEY=VALUE...: the daemon serves and logs into FILE.
starts() {
	local name=$1 file=$2
	shift 2
	{ printf '[server]\nroot = %s\nuser = nobody\n' "$D"; printf '%s\n' "$@"; } > "$T/c.conf"
	start_daemon -c "$T/c.conf"
	check "$name: serves" hi "$(curl -s "$URL/a.txt")"
	stop_daemon
	check_match "$name: logs into $file" 'started' "$(cat "$file" 2>/dev/null)"
}

# the attack: nobody plants access.log -> a root-owned file
as_nobody ln -s "$T/target" "$L/access.log"
refuses "symlinked access_log" "access_log $L/access.log: is a symbolic link" \
	"access_log = $L/access.log"
as_nobody ln -s "$T/target" "$L/error.log"
refuses "symlinked error_log" "error_log $L/error.log: is a symbolic link" \
	"error_log = $L/error.log"
# a dangling one (would be created through the link)
as_nobody ln -s "$T/rootdir/new.log" "$L/dangling.log"
refuses "dangling symlink" "is a symbolic link" "error_log = $L/dangling.log"
check "dangling symlink: nothing created" no "$([ -e "$T/rootdir/new.log" ] && echo yes || echo no)"
rm -f "$L/access.log" "$L/error.log" "$L/dangling.log"

# a second name for a root file (protected_hardlinks stops nobody; root
# stands in for whoever could)
ln "$T/target" "$L/linked.log"
refuses "hard link" "has 2 hard links" "error_log = $L/linked.log"
rm -f "$L/linked.log"

# a file of a third user
printf 'x\n' > "$L/other.log"
chown 4242 "$L/other.log"
refuses "file of another user" "owned by uid 4242" "error_log = $L/other.log"
rm -f "$L/other.log"

# a FIFO: refused without blocking on the open
as_nobody mkfifo "$L/fifo.log"
refuses "FIFO" "not a regular file" "access_log = $L/fifo.log"
rm -f "$L/fifo.log"

# directories: a third user's, or writable by anyone
mkdir -p "$T/d4242" "$T/dopen"
chown 4242 "$T/d4242"
chmod 777 "$T/dopen"
refuses "directory of another user" "its directory is owned by uid 4242" \
	"error_log = $T/d4242/error.log"
refuses "world-writable directory" "writable by others" \
	"error_log = $T/dopen/error.log"

# a symbolic link on the way that nobody controls, to a root directory
as_nobody ln -s "$T/rootdir" "$L/sub"
refuses "symlinked directory of the service user" "symbolic link sub in the path" \
	"error_log = $L/sub/error.log"
check "symlinked directory: nothing created" no \
	"$([ -e "$T/rootdir/error.log" ] && echo yes || echo no)"
# ... also when reached through root's own symbolic link
ln -s "$L/sub" "$T/rootchain"
refuses "root's symlink to the service user's" "symbolic link sub in the path" \
	"error_log = $T/rootchain/error.log"

# what is safe starts: a new file in the service user's directory (made
# by root), through root's own symbolic link, in a sticky /tmp-like
# directory, and /dev/null
starts "service user's directory" "$L/error.log" "error_log = $L/error.log"
check "created file: root's, 0640" "0 640" "$(stat -c '%u %a' "$L/error.log")"
as_nobody sh -c "echo x >> '$L/error.log'" 2>/dev/null &&
	not_ok "nobody can write the created file" || ok "nobody cannot write the created file"
ln -s "$L" "$T/rootlink"
starts "through root's symlink" "$L/via.log" "error_log = $T/rootlink/via.log"
mkdir -p "$T/sticky"
chmod 1777 "$T/sticky"
starts "sticky world-writable directory" "$T/sticky/error.log" \
	"error_log = $T/sticky/error.log"
as_nobody sh -c "printf 'mine\n' > '$L/own.log'"
starts "a file of the service user" "$L/own.log" "error_log = $L/own.log"
{ printf '[server]\nroot = %s\nuser = nobody\naccess_log = /dev/null\nerror_log = %s\n' \
	"$D" "$L/null.log"; } > "$T/c.conf"
start_daemon -c "$T/c.conf"
check "access_log /dev/null: serves" hi "$(curl -s "$URL/a.txt")"
stop_daemon

echo "# $fails failed"
[ "$fails" = 0 ]
