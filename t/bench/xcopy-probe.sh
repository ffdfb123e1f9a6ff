#!/bin/sh
# xcopy-probe prints one line of two positive rates, on the first two
# CPUs it may run on or on two named ones, and refuses a CPU it cannot
# run on and bad arguments with a message and exit 1.
. "$top_srcdir/t/lib.sh"

P=$top_builddir/contrib/bench/xcopy-probe
[ "$(nproc)" -ge 2 ] || { echo "SKIP: fewer than two CPUs"; exit 77; }

out=$("$P")
check "the default CPUs: exit 0" 0 $?
check_match "one line of two rates in GB/s" '^xcopy_gbps: [0-9]+\.[0-9] [0-9]+\.[0-9]$' "$out"
check "both rates above zero" yes \
	"$(echo "$out" | awk '{ print ($2 > 0 && $3 > 0) ? "yes" : "no" }')"

out=$("$P" 1 0)
check "CPUs named: exit 0" 0 $?
check_match "CPUs named: the same line" '^xcopy_gbps: ' "$out"

# A CPU that is not online, or not a number, is refused, not measured
# unpinned.
n=$(nproc --all)
out=$("$P" 0 "$n" 2>&1)
check "CPU $n (not online): exit 1, says which" "1 xcopy-probe: cannot run on CPUs 0 and $n" "$? $out"
out=$("$P" 0 1x 2>&1)
check "not a number: exit 1, says which" "1 xcopy-probe: not a CPU number: 1x" "$? $out"
out=$(taskset -c 0 "$P" 2>&1)
check "one CPU to run on: exit 1" "1 xcopy-probe: fewer than two CPUs to run on" "$? $out"
out=$("$P" 0 2>&1)
check "one argument: usage, exit 1" "1 usage: xcopy-probe [CPU_A CPU_B]" "$? $out"

[ "$fails" = 0 ]
