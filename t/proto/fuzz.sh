# Runs libFuzzer targets for a bounded time each on a copy of their
# committed seed corpora: `make fuzz-check` builds them with clang and
# runs t/proto/fuzz.sh BUILT-FUZZER... FUZZ_SECONDS sets the time per
# target (default 20). A crash, leak, sanitizer report or timeout fails
# that target and prints the reproducer's path (kept under
# fuzz-artifacts/ beside the fuzzer in the build tree) and its bytes.
# Ends with an automake-style summary (# PASS: / # FAIL:), exit 1 on
# any failure.
set -u
: "${top_srcdir:?run through make fuzz-check}"
secs=${FUZZ_SECONDS:-20}
pass=0 fail=0

run_one() {
	local bin=$1 name dir seeds art work rc f
	name=$(basename "$bin")                      # fuzz_url
	dir=$(basename "$(dirname "$bin")")          # proto, conf
	seeds=$top_srcdir/t/$dir/corpus/${name#fuzz_}
	[ -x "$bin" ] || { echo "not ok - $name: no $bin"; return 1; }
	[ -d "$seeds" ] || { echo "not ok - $name: no seed corpus $seeds"; return 1; }
	art=$(cd "$(dirname "$bin")" && pwd)/fuzz-artifacts/$name
	work=$(mktemp -d "${TMPDIR:-/tmp}/fsd-fuzz.XXXXXX")
	mkdir -p "$art" "$work/corpus"
	# libFuzzer adds what it finds to the first corpus directory: a
	# copy, so that the committed seeds (read-only in distcheck) stay.
	cp "$seeds"/* "$work/corpus/"
	echo "# $name: $secs s from $(ls "$seeds" | wc -l) seeds in $seeds"
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
		-artifact_prefix="$art/" -print_final_stats=1 "$work/corpus" > "$work/log" 2>&1
	rc=$?
	if [ "$rc" != 0 ]; then
		tail -n 60 "$work/log" | sed 's/^/#   /'
		for f in "$art"/*; do
			[ -f "$f" ] || continue
			echo "# reproducer: $f ($(wc -c < "$f") bytes); rerun: $bin $f"
			od -A d -c "$f" | head -n 20 | sed 's/^/#   /'
		done
		echo "not ok - $name: exited $rc"
		rm -rf "$work"
		return 1
	fi
	echo "ok - $name: $(grep -m1 -o 'number_of_executed_units: [0-9]*' "$work/log" | awk '{print $2}') inputs, corpus $(ls "$work/corpus" | wc -l)"
	rm -rf "$work"
}

for b in "$@"; do
	if run_one "$b"; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "============================================================================"
echo "# TOTAL: $((pass + fail))"
echo "# PASS:  $pass"
echo "# FAIL:  $fail"
echo "============================================================================"
[ "$fail" = 0 ]
