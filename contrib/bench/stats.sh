# Sourced by the benchmarks: the median and the spread (lowest-highest)
# of a column of numbers on standard input.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6g\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }
