#!/bin/bash
# Runs every test: the unit binaries, the fuzz targets over their stored
# corpus, and the numbered CLI scripts.  Ends with "N passed, N failed".
# A test that exits 77 is counted as skipped.  CAIRN_LONG=1 adds the long
# stress runs (tests/cli/long-*.sh).
set -u
cd "$(dirname "$0")/.."
B=${CAIRN_BUILD:-build}
export CAIRN="$PWD/$B/cairn"
export CAIRN_SRC="$PWD"
pass=0 fail=0 skip=0
failed=()

run() {
	local name=$1
	shift
	local log start end
	log=$(mktemp)
	start=$(date +%s.%N)
	"$@" >"$log" 2>&1
	local rc=$?
	end=$(date +%s.%N)
	local secs
	secs=$(printf '%.1f' "$(echo "$end - $start" | bc 2>/dev/null || echo 0)")
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $name (${secs}s)"
	elif [ $rc -eq 77 ]; then
		skip=$((skip + 1))
		echo "SKIP $name: $(tail -n 1 "$log")"
	else
		fail=$((fail + 1))
		failed+=("$name")
		echo "FAIL $name (exit $rc)"
		tail -n 30 "$log" | sed 's/^/    /'
	fi
	rm -f "$log"
}

for t in "$B"/tests/test_*; do
	[ -x "$t" ] && run "unit/$(basename "$t")" "$t"
done
for f in "$B"/fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	n=$(basename "$f")
	run "fuzz-replay/$n" "$f" "tests/fuzz/corpus/${n#fuzz_}"
done
pattern='tests/cli/t[0-9]*.sh'
[ "${CAIRN_LONG:-}" = 1 ] && pattern="$pattern tests/cli/long-*.sh"
for s in $pattern; do
	[ -f "$s" ] || continue
	run "cli/$(basename "$s" .sh)" bash "$s"
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
