# t/lib.sh: the helpers every integration test shares, sourced by
# t/daemon/lib.sh and t/sftpd/lib.sh. POSIX sh. Each check prints a TAP
# line ("ok - ..." or "not ok - ...") and a failure counts in $fails.

# need TOOL...: skip the test (77) unless every TOOL is installed.
need() {
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || { echo "SKIP: $t not installed"; exit 77; }
	done
}

fails=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }
# check NAME EXPECTED ACTUAL
check() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: expected '$2', got '$3'"; fi
}
# check_match NAME REGEX ACTUAL
check_match() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then ok "$1"
	else not_ok "$1: '$3' does not match /$2/"; fi
}
