#!/bin/bash
# bench/ab-unchanged.sh - unchanged re-backups of the bench corpus by several
# cairn binaries, interleaved round by round so that a noisy machine hits
# them alike.  One store (made by the first binary with one full backup)
# is shared: every run is an incremental backup of an unchanged tree
# against the newest snapshot.  Prints each binary's wall times in ms,
# sorted, and the median.
#
# usage: bench/ab-unchanged.sh ROUNDS BIN [BIN...]
# Environment: CAIRN_BENCH_DIR (default /var/tmp/cairn-bench; the store
# goes to $CAIRN_BENCH_DIR/ab-unchanged), CAIRN_BENCH_CORPUS (default
# $CAIRN_BENCH_DIR/corpus).  The corpus is only read.
set -euo pipefail
export LC_ALL=C
[ $# -ge 2 ] || { echo "usage: bench/ab-unchanged.sh ROUNDS BIN [BIN...]" >&2; exit 2; }
ROUNDS=$1
shift
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench}
CORPUS=${CAIRN_BENCH_CORPUS:-$BASE/corpus}
export CAIRN_STORE=$BASE/ab-unchanged/store
[ -d "$CORPUS" ] || { echo "bench: no corpus at $CORPUS (bench/backup.sh makes one)" >&2; exit 1; }
rm -rf "$BASE/ab-unchanged"
mkdir -p "$BASE/ab-unchanged"
"$1" init >/dev/null
"$1" create -o source="$CORPUS" ds
"$1" snapshot ds@0
declare -A ms
n=0
for _ in $(seq "$ROUNDS"); do
	for bin in "$@"; do
		n=$((n + 1))
		t0=$(date +%s%N)
		"$bin" snapshot "ds@$n"
		t1=$(date +%s%N)
		ms[$bin]+="$(((t1 - t0) / 1000000)) "
	done
done
echo "unchanged re-backup, $ROUNDS rounds, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for bin in "$@"; do
	sorted=$(echo "${ms[$bin]}" | tr ' ' '\n' | grep . | sort -n | tr '\n' ' ')
	median=$(echo "$sorted" | tr ' ' '\n' | grep . | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
	echo "$bin: median $median ms ($sorted)"
done
rm -rf "$BASE/ab-unchanged"
