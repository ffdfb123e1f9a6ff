# Sourced by the benchmarks, in POSIX sh: the median and the spread
# (lowest-highest) of a column of numbers on standard input; the
# cross-CPU copy rate beside a run.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6g\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }
# xcopy: the slower way of xcopy-probe's cross-CPU copy rate (GB/s), or
# n/a without it; xcopy_min A B: the lower of two such figures. A run
# beside a low one fell in a period when memory one vCPU writes reaches
# the other slowly (docs/BENCHMARKS.md, "Periods of slow copies into the
# socket").
xcopy() {
	"$top_builddir/contrib/bench/xcopy-probe" 2>/dev/null |
		awk '{ print ($2 < $3 ? $2 : $3) } END { if (NR == 0) print "n/a" }'
}
xcopy_min() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "n/a" || b == "n/a") print "n/a"; else print (a + 0 < b + 0 ? a : b) }'
}
