#!/bin/sh
# -u USER: every request acts as USER (per-request credentials of the
# lookup engine) while the server process keeps its own ids; -i:
# case-insensitive names. Needs root (to act as another user). Each
# line of the probe: path, STAT, OPEN+READ, OPENDIR (status2: no such
# file, status3: permission denied).
. "$top_srcdir/t/sftpd/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: not root"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }

R=$T/root
mkdir -p "$R/Open Dir" "$R/closed"
chmod 755 "$T" "$R"
echo public > "$R/Public.txt"; chmod 644 "$R/Public.txt"
echo secret > "$R/secret.txt"; chmod 600 "$R/secret.txt"
echo inside > "$R/closed/f"; chmod 700 "$R/closed"
echo x > "$R/Open Dir/x"

probe() { python3 "$SFTPC" probe "$SPORT" "$@"; }

for backend in uring threads; do
	echo "# backend $backend"
	FIBRIL_BACKEND=$backend start_sftpd "$R" -u nobody
	out=$(probe Public.txt secret.txt closed closed/f)
	check "as nobody: a public file" "Public.txt attrs data status2" "$(echo "$out" | sed -n 1p)"
	check "as nobody: a 0600 file of root" "secret.txt attrs status3 status2" "$(echo "$out" | sed -n 2p)"
	check "as nobody: a 0700 directory of root" "closed attrs status3 status3" "$(echo "$out" | sed -n 3p)"
	check "as nobody: a file inside it" "closed/f status3 status3 status3" "$(echo "$out" | sed -n 4p)"
	check "the server process keeps uid 0" 0 "$(awk '/^Uid:/ { print $3 }' /proc/$SPID/status)"
	stop_sftpd

	FIBRIL_BACKEND=$backend start_sftpd "$R"
	out=$(probe secret.txt PUBLIC.TXT)
	check "as root: the 0600 file" "secret.txt attrs data status2" "$(echo "$out" | sed -n 1p)"
	check "case-sensitive by default" "PUBLIC.TXT status2 status2 status2" "$(echo "$out" | sed -n 2p)"
	stop_sftpd

	FIBRIL_BACKEND=$backend start_sftpd "$R" -i
	out=$(probe PUBLIC.TXT "OPEN DIR" "open dir/X" MISSING)
	check "-i: a file" "PUBLIC.TXT attrs data status2" "$(echo "$out" | sed -n 1p)"
	check "-i: a directory" "OPEN DIR attrs status4 list3" "$(echo "$out" | sed -n 2p)"
	check "-i: a file in it" "open dir/X attrs data status2" "$(echo "$out" | sed -n 3p)"
	check "-i: a missing name" "MISSING status2 status2 status2" "$(echo "$out" | sed -n 4p)"
	stop_sftpd
done
finish
