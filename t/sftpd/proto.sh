#!/bin/sh
# fsd-sftp speaks SFTP v3 correctly and survives bad input: every request
# type against real files, pipelined and out-of-order replies (a STAT
# answered before a READDIR ahead of it), escapes refused, writes
# refused, a burst of READs whose replies outgrow the connection's queue
# answered whole, malformed packets (bad lengths, strings past the packet, NULs
# in paths, random bytes) answered with
# SSH_FX_BAD_MESSAGE or a closed connection, never a crash. Runs in the
# sanitizer build too (make check-unit).
. "$top_srcdir/t/sftpd/lib.sh"

R=$T/root
mkdir -p "$R/many"
echo hello > "$R/a.txt"
ln -s a.txt "$R/link"
ln -s /etc/passwd "$R/esc"
head -c 300000 /dev/urandom > "$R/big.bin"
python3 -c '
import os, sys
for i in range(1500):
    open(os.path.join(sys.argv[1], "n%04d-%s" % (i, "x" * (i % 200))), "w").close()
' "$R/many"

# A bad option value is refused before anything starts.
for bad in "-s x" "-s -1" "-s 65537" "-A 3600001" "-A 1k"; do
	out=$("$SFTPD" -r "$R" $bad 2>&1 </dev/null)
	check "fsd-sftp $bad exits 2 and says why" "2 ${bad%% *}" \
		"$? $(printf '%s' "$out" | sed -n 's/^fsd-sftp: \(-[sA]\) .*: not a number from 0 to [0-9]*$/\1/p')"
done

for backend in uring threads; do
	echo "# backend $backend"
	FIBRIL_BACKEND=$backend start_sftpd "$R"
	python3 "$SFTPC" proto "$SPORT" "$R" || fails=$((fails + 1))
	SFTPD_ROOT=$R python3 "$SFTPC" ahead "$SPORT" /many || fails=$((fails + 1))
	timeout 20 python3 "$SFTPC" burst "$SPORT" "$R" /big.bin 64 || fails=$((fails + 1))
	# SIGUSR2 without a timeline is ignored, not fatal
	kill -USR2 "$SPID"
	if python3 "$SFTPC" proto "$SPORT" "$R" >/dev/null; then
		ok "fsd-sftp still serves after SIGUSR2"
	else
		not_ok "fsd-sftp still serves after SIGUSR2"
	fi
	if [ "$backend" = uring ]; then stop_sftpd; else stop_sftpd HUP; fi
done
finish
