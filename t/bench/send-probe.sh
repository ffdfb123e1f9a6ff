#!/bin/sh
# send-probe moves bodies three ways between two CPUs over loopback, on
# one connection or several, and prints a rate and CPU for each, the two
# ratios to the copy and how many zero-copy sends the kernel copied; it
# refuses bad arguments with a message and exit 1.
. "$top_srcdir/t/lib.sh"
need python3 taskset timeout

P=$top_builddir/contrib/bench/send-probe
# The first two CPUs this test may run on (a cpuset may leave out 0).
set -- $(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')
[ $# -ge 2 ] || { echo "SKIP: fewer than two CPUs"; exit 77; }
a=$1 b=$2

# zerocopy_done OUT: sends, completions and copies agree, and on
# loopback the kernel copied every one.
zerocopy_done() {
	sends=$(echo "$1" | sed -n 's/^send_zerocopy_sends: //p')
	copied=$(echo "$1" | sed -n 's/^send_zerocopy_copied: \([0-9]*\) of .*/\1/p')
	done=$(echo "$1" | sed -n 's/^send_zerocopy_copied: [0-9]* of //p')
	echo "sends ${sends:-?} done ${done:-?} copied ${copied:-?}"
}

out=$(timeout 120 "$P" -r 2 -n 50 -s 65536)
check "two rounds of 50 bodies: exit 0" 0 $?
for w in copy zerocopy sendfile; do
	check_match "$w: a rate with its range" "send_${w}_bodies_per_s: [1-9][0-9]* \([0-9]+-[0-9]+\)" "$out"
	check_match "$w: the sender's CPU" "send_${w}_sender_us: [0-9]+\.[0-9]" "$out"
	check_match "$w: the receiver's CPU" "send_${w}_receiver_us: [0-9]+\.[0-9]" "$out"
done
check_match "zerocopy against the copy" 'send_zerocopy_vs_copy: [0-9]+\.[0-9]{2} \(' "$out"
check_match "sendfile against the copy" 'send_sendfile_vs_copy: [0-9]+\.[0-9]{2} \(' "$out"
check_match "the send buffer given" 'send_sndbuf_bytes: [1-9][0-9]*' "$out"
s=$(echo "$out" | sed -n 's/^send_zerocopy_sends: //p')
check "at least one zero-copy send a body (2 rounds of 50)" yes \
	"$( [ "${s:-0}" -ge 100 ] && echo yes || echo "no: $s")"
check "every zero-copy send completed, each copied (loopback)" \
	"sends $s done $s copied $s" "$(zerocopy_done "$out")"

out=$(timeout 60 "$P" -r 1 -n 10 -s 4096 -b 1000 -c "$b,$a")
check "CPUs and a read size named: exit 0" 0 $?
# Several connections: the receiver counts every byte (a short count is
# exit 1), and every zero-copy send completes.
out=$(timeout 60 "$P" -r 1 -n 40 -s 65536 -C 8)
check "8 connections: exit 0" 0 $?
s=$(echo "$out" | sed -n 's/^send_zerocopy_sends: //p')
check "8 connections: every zero-copy send completed, each copied" \
	"sends $s done $s copied $s" "$(zerocopy_done "$out")"
out=$("$P" -n 4 -C 8 2>&1)
check "more connections than bodies: exit 1" "1 send-probe: more connections than bodies" "$? $out"

out=$("$P" -r 0 2>&1)
check "no rounds: exit 1, says why" "1 send-probe: ROUNDS must be 1 to 99: 0" "$? $out"
out=$("$P" -s 1x 2>&1)
check "a bad size: exit 1, says why" "1 send-probe: SIZE must be 1 to 1073741824: 1x" "$? $out"
out=$("$P" -b 0 2>&1)
check "a read size of 0: exit 1, says why" "1 send-probe: READ must be 1 to 16777216: 0" "$? $out"
out=$("$P" -C 513 2>&1)
check "too many connections: exit 1, says why" "1 send-probe: CONNS must be 1 to 512: 513" "$? $out"
out=$("$P" -c 0 2>&1)
check "one CPU named: exit 1" "1 send-probe: not two CPU numbers A,B: 0" "$? $out"
n=$(nproc --all)
out=$("$P" -r 1 -n 1 -c "$a,$n" 2>&1)
check "a CPU not online: exit 1, says which" "1 send-probe: cannot run on CPUs $a and $n" "$? $out"
out=$("$P" -a 1.2.3 2>&1)
check "not an address: exit 1, says which" "1 send-probe: not an IPv4 address: 1.2.3" "$? $out"
out=$("$P" -N /var/run/netns/x 2>&1)
check_match "a namespace without an address: exit 1, says why" '^send-probe: -N needs -a' "$out"
# A receiver that fails before it connects ends the run, not hangs it.
out=$(timeout 60 "$P" -r 1 -n 1 -N /nonexistent-netns -a 127.0.0.2 2>&1)
check "a network namespace that is not there: exit 1" 1 $?
check_match "... says which" '^send-probe: /nonexistent-netns: No such file or directory$' "$out"
check_match "... and that the receiver ended" '^send-probe: the receiver ended before it connected$' "$out"
out=$(taskset -c "$a" "$P" 2>&1)
check "one CPU to run on: exit 1" "1 send-probe: fewer than two CPUs to run on" "$? $out"
out=$("$P" extra 2>&1)
check_match "an argument too many: usage, exit 1" '^usage: send-probe ' "$out"

[ "$fails" = 0 ]
