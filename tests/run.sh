#!/bin/bash
# Runs every test: the unit binaries, the fuzz targets over their stored
# corpus, and the numbered CLI scripts.  Ends with "N passed, N failed".
#
# Every test runs under a timeout (CAIRN_TEST_TIMEOUT seconds, default 600,
# three times that in a sanitizer build): a hang fails that test, names it,
# and the run goes on.  A test that exits 77 is skipped; under CI=true a skip
# counts as a failure, since CI installs everything tests need
# (scripts/deps.sh) and runs as root.  CAIRN_LONG=1 adds the long stress runs
# (tests/cli/long-*.sh).  CAIRN_TESTS, a list of shell patterns, runs only
# the tests whose names (e.g. unit/test_gc, cli/t0710-holds-atomic) match
# one of them (for re-running a few under the sanitizer by hand).
#
# CAIRN_BUILD names the build directory (default build).  A ThreadSanitizer
# build (build-tsan) sets CAIRN_TSAN=1 and fails a test on any race report.
# An ASan build
# (build-asan) sets CAIRN_ASAN=1 for the tests, so a test can skip, visibly,
# only a leg the sanitizer cannot run (ulimit -v, ptrace by strace); every
# sanitizer report is written under a per-test directory and fails the test
# even when the command's exit status was expected to be non-zero.
set -u
cd "$(dirname "$0")/.."
B=${CAIRN_BUILD:-build}
export CAIRN="$PWD/$B/cairn"
export CAIRN_SRC="$PWD"
limit=${CAIRN_TEST_TIMEOUT:-600}
case $B in
*asan*)
	export CAIRN_ASAN=1
	[ -n "${CAIRN_TEST_TIMEOUT:-}" ] || limit=1800
	;;
*tsan*)
	export CAIRN_TSAN=1
	[ -n "${CAIRN_TEST_TIMEOUT:-}" ] || limit=1800
	;;
esac
strict=0
[ "${CI:-}" = true ] && strict=1
pass=0 fail=0 skip=0
failed=()
sanlogs=$(mktemp -d)
trap 'rm -rf "$sanlogs"' EXIT

# The sanitizer options: reports go to files (checked after each test), and
# a sanitizer's exit status is one no test expects.
san_env() {
	local dir=$1
	export ASAN_OPTIONS="log_path=$dir/asan:exitcode=86:abort_on_error=0:detect_leaks=1${CAIRN_ASAN_EXTRA:+:$CAIRN_ASAN_EXTRA}"
	export UBSAN_OPTIONS="log_path=$dir/ubsan:exitcode=87:print_stacktrace=1:halt_on_error=1"
}
tsan_env() {
	local dir=$1
	export TSAN_OPTIONS="log_path=$dir/tsan:exitcode=88:halt_on_error=0:second_deadlock_stack=1"
}

selected() {
	[ -z "${CAIRN_TESTS:-}" ] && return 0
	local p -
	set -f # the patterns are matched against test names, not files
	for p in $CAIRN_TESTS; do
		# shellcheck disable=SC2053
		[[ $1 == $p ]] && return 0
	done
	return 1
}

run() {
	local name=$1
	shift
	selected "$name" || return 0
	local log start end dir
	log=$(mktemp)
	dir="$sanlogs/${name//\//_}"
	mkdir -p "$dir"
	[ "${CAIRN_ASAN:-}" = 1 ] && san_env "$dir"
	[ "${CAIRN_TSAN:-}" = 1 ] && tsan_env "$dir"
	start=$(date +%s.%N)
	timeout -k 10 "$limit" "$@" >"$log" 2>&1
	local rc=$?
	end=$(date +%s.%N)
	local secs
	secs=$(printf '%.1f' "$(echo "$end - $start" | bc 2>/dev/null || echo 0)")
	local reports
	reports=$(find "$dir" -type f 2>/dev/null | head -3)
	# A report printed on stderr (UBSan's, when it ignores log_path) that
	# the test swallowed still fails it.
	if [ -z "$reports" ] && [ -n "${CAIRN_ASAN:-}${CAIRN_TSAN:-}" ] &&
		grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error: |WARNING: ThreadSanitizer' "$log"; then
		reports=$log
	fi
	if [ -n "$reports" ]; then
		fail=$((fail + 1))
		failed+=("$name")
		echo "FAIL $name (sanitizer report, exit $rc)"
		for r in $reports; do
			head -n 40 "$r" | sed 's/^/    /'
		done
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		fail=$((fail + 1))
		failed+=("$name")
		echo "FAIL $name (timed out after ${limit}s)"
		tail -n 15 "$log" | sed 's/^/    /'
	elif [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $name (${secs}s)"
	elif [ $rc -eq 77 ] && [ $strict = 0 ]; then
		skip=$((skip + 1))
		echo "SKIP $name: $(tail -n 1 "$log")"
	elif [ $rc -eq 77 ]; then
		fail=$((fail + 1))
		failed+=("$name")
		echo "FAIL $name (skipped under CI=true: $(tail -n 1 "$log"))"
	else
		fail=$((fail + 1))
		failed+=("$name")
		echo "FAIL $name (exit $rc)"
		tail -n 30 "$log" | sed 's/^/    /'
	fi
	# A leg a test skipped under a sanitizer is shown, not hidden.
	grep -h '^SKIP-LEG' "$log" | sed "s|^|    $name: |"
	rm -f "$log"
}

# Tiers: a CLI test with a line "# tier: stress" (kill, race and cut loops)
# runs in the stress tier, everything else in the quick tier.  CAIRN_TIER:
# quick (default: `make check`, `make asan`), stress (`make check-stress`),
# all (also what CAIRN_LONG=1 means).
tier=${CAIRN_TIER:-quick}
[ "${CAIRN_LONG:-}" = 1 ] && tier=all
case $tier in quick | stress | all) ;; *) echo "CAIRN_TIER: quick, stress or all" >&2; exit 2 ;; esac
is_stress() { grep -q '^# tier: stress$' "$1"; }
if [ "$tier" != stress ]; then
	for t in "$B"/tests/test_*; do
		[ -x "$t" ] && run "unit/$(basename "$t")" "$t"
	done
	for f in "$B"/fuzz/fuzz_*; do
		[ -x "$f" ] || continue
		n=$(basename "$f")
		run "fuzz-replay/$n" "$f" "tests/fuzz/corpus/${n#fuzz_}"
	done
fi
pattern='tests/cli/t[0-9]*.sh'
[ "${CAIRN_LONG:-}" = 1 ] && pattern="$pattern tests/cli/long-*.sh"
for s in $pattern; do
	[ -f "$s" ] || continue
	case $tier in
	quick) is_stress "$s" && continue ;;
	stress) is_stress "$s" || continue ;;
	esac
	run "cli/$(basename "$s" .sh)" bash "$s"
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}"
fi
[ $skip -gt 0 ] && echo "$skip skipped"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
