#!/bin/bash
# Coverage-guided fuzzing of every target in tests/fuzz (`make fuzz`).
#
# Each fuzz_<name>.c is built with clang -fsanitize=fuzzer,address,undefined
# (build-fuzz/), seeded from tests/fuzz/corpus/<name>, and run for
# FUZZ_SECONDS (default 45) with a per-input timeout.  A crash, leak,
# sanitizer report or per-input timeout fails the run; the input that did it
# is kept under build-fuzz/artifacts/ and its path printed.
#
# Inputs the fuzzer found that add coverage are merged (-merge=1) back into
# tests/fuzz/corpus/<name>, so they can be committed and `make check` replays
# them.  The fuzzer writes its new inputs to a scratch corpus under
# build-fuzz/ and only the merge step adds files to the stored corpus (named
# by their SHA-1, never touching the seeds), so a clean clone needs nothing
# but clang.  FUZZ_MERGE=0 leaves the stored corpus alone.  FUZZ_TARGETS
# limits the run to some targets (space separated names, e.g. "blob token").
set -u
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-45}
MERGE=${FUZZ_MERGE:-1}
B=build-fuzz
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz: $CC not found (scripts/deps.sh installs clang)" >&2; exit 1; }

# The flags are stamped so a change of them rebuilds instead of mixing objects.
echo "$CC $SAN" | cmp -s - "$B/.flags" 2>/dev/null || { rm -rf "$B"; mkdir -p "$B"; echo "$CC $SAN" >"$B/.flags"; }

targets=()
if [ -n "${FUZZ_TARGETS:-}" ]; then
	for t in $FUZZ_TARGETS; do targets+=("fuzz_$t"); done
else
	for s in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$s" .c)"); done
fi
bins=()
for t in "${targets[@]}"; do bins+=("$B/libfuzzer/$t"); done
make -s B="$B" CC="$CC" STATIC=0 OPT="-O1 -g $SAN" \
	LDLIBS='$(PKG_LIBS) -pthread -fsanitize=address,undefined' \
	"${bins[@]}" || { echo "fuzz: build failed" >&2; exit 1; }

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
pass=0 fail=0
failed=()
for t in "${targets[@]}"; do
	name=${t#fuzz_}
	seeds=tests/fuzz/corpus/$name
	work=$B/work/$name
	art=$B/artifacts/$name
	log=$B/logs/$name.log
	rm -rf "$work"
	mkdir -p "$work" "$art" "$B/logs" "$seeds"
	before=$(find "$seeds" -type f | wc -l)
	# New inputs go to $work (the first directory); the seeds are read only.
	"$B/libfuzzer/$t" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art/" "$work" "$seeds" >"$log" 2>&1
	rc=$?
	stats=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
	cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
	if [ $rc -ne 0 ]; then
		fail=$((fail + 1))
		failed+=("$name")
		echo "FAIL fuzz/$name (exit $rc; input kept in $art/)"
		ls "$art" | sed "s|^|    $art/|"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -10 | sed 's/^/    /'
		continue
	fi
	added=0
	if [ "$MERGE" = 1 ] && [ -n "$(ls -A "$work")" ]; then
		"$B/libfuzzer/$t" -merge=1 -timeout=20 -rss_limit_mb=2048 "$seeds" "$work" \
			>"$B/logs/$name.merge.log" 2>&1 || {
			fail=$((fail + 1))
			failed+=("$name")
			echo "FAIL fuzz/$name (merge failed, see $B/logs/$name.merge.log)"
			continue
		}
		added=$(($(find "$seeds" -type f | wc -l) - before))
	fi
	pass=$((pass + 1))
	echo "PASS fuzz/$name (${SECS}s, ${stats:-?} execs, ${cov:-cov: ?}, $added new corpus inputs)"
done
[ ${#failed[@]} -gt 0 ] && echo "fuzz failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
