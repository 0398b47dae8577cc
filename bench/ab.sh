#!/bin/bash
# bench/ab.sh - initial backup of the bench corpus by two cairn binaries
# (A = before, B = after a change), interleaved in one run with the limit
# probe (bench/limit.sh), so that a shared, noisy machine hits all three
# alike.  Each round: limit probe (best of 2 runs), then A and B (order alternates
# by round), each into a fresh store.  Prints per step the seconds, MB/s,
# ratio to that round's limit, peak RSS, and the load average.
#
# usage: bench/ab.sh BIN_A BIN_B [ROUNDS]
# Environment: CAIRN_BENCH_DIR (default /var/tmp/cairn-bench; stores go to
# $CAIRN_BENCH_DIR/ab), CAIRN_BENCH_CORPUS (default $CAIRN_BENCH_DIR/corpus),
# CAIRN_BENCH_NICE (default -10 when root: see bench/backup.sh).
set -euo pipefail
export LC_ALL=C
[ $# -ge 2 ] || { echo "usage: bench/ab.sh BIN_A BIN_B [ROUNDS]" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2") ROUNDS=${3:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench}
CORPUS=${CAIRN_BENCH_CORPUS:-$BASE/corpus}
WORK=$BASE/ab
NICE=${CAIRN_BENCH_NICE:--10}
[ "$(id -u)" -eq 0 ] || NICE=0
PRIO=()
[ "$NICE" -eq 0 ] ||
	PRIO=(setsid -w bash -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' "$NICE")
LIMIT_PRIO=(${PRIO[@]+"${PRIO[@]}"})
# Best of two: the first run of the probe often reads 2-3x low on this VM
# (11.7 s against 3.6 s for the same work, 2026-12-02).
CAIRN_LIMIT_RUNS=${CAIRN_LIMIT_RUNS:-2}
. "$ROOT/bench/limit.sh"

BYTES=$(find "$CORPUS" -type f -printf '%i %s\n' | sort -u -k1,1n | awk '{s+=$2} END {printf "%.0f\n", s}')
find "$CORPUS" -type f -print0 | xargs -0 cat >/dev/null # warm the cache
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

# one LABEL BIN: an initial backup into a fresh store
one() {
	local label=$1 bin=$2 t0 t1 s rss
	rm -rf "$WORK/store"
	"$bin" -s "$WORK/store" init >/dev/null
	"$bin" -s "$WORK/store" create -o source="$CORPUS" ds
	sync
	t0=$(date +%s%N)
	/usr/bin/time -f '%M' -o "$WORK/rss" ${PRIO[@]+"${PRIO[@]}"} "$bin" -s "$WORK/store" snapshot ds@1 \
		>/dev/null 2>"$WORK/err" || grep -q 'snapshot taken' "$WORK/err" ||
		{ cat "$WORK/err" >&2; exit 1; }
	t1=$(date +%s%N)
	s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
	rss=$(awk '{printf "%.1f", $1 / 1024}' "$WORK/rss")
	awk -v l="$label" -v s="$s" -v n="$BYTES" -v lim="$LIMIT_MBS" -v rss="$rss" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
		'BEGIN {m = n / s / 1e6; printf "| %-6s | %8s | %7.1f | %6.2f | %8s | %-16s |\n", l, s, m, m / lim, rss, load}'
}

echo "bench/ab.sh $(date -u '+%Y-%m-%d %H:%M UTC'): A=$A B=$B; corpus $CORPUS ($BYTES bytes); nice $NICE"
for ((r = 1; r <= ROUNDS; r++)); do
	limit_probe "$CORPUS" "$BASE/build" 2>/dev/null
	echo
	echo "round $r: limit $LIMIT_MBS MB/s (load $(cut -d' ' -f1-3 /proc/loadavg))"
	echo "| binary | seconds |    MB/s | /limit | RSS MiB | load             |"
	echo "|--------|---------|---------|--------|---------|------------------|"
	if ((r % 2)); then one A "$A"; one B "$B"; else one B "$B"; one A "$A"; fi
done
