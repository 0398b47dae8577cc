#!/bin/bash
# bench/diff.sh - cairn diff between two snapshots of the bench corpus with
# 1% of the files changed (a line appended to every 100th file), against
# the same diff from restic as a peer.  Also times a diff against the live
# source.  Results go to BENCHMARKS.md ("diff").
#
# Environment (as bench/backup.sh):
#   CAIRN_BENCH_DIR     base directory (default /var/tmp/cairn-bench)
#   CAIRN_BENCH_CORPUS  corpus directory (default $CAIRN_BENCH_DIR/corpus; built
#                       from /usr/share, /usr/include, /usr/lib/x86_64-linux-gnu
#                       if absent, reused otherwise)
#   CAIRN_BENCH_WORK    work directory (default $CAIRN_BENCH_DIR/work-diff), wiped
#   CAIRN_BENCH_BIN     cairn binary (default: build/cairn of this tree)
#   CAIRN_BENCH_PEERS=0 skip restic
#   CAIRN_BENCH_RUNS    timed runs per step, best kept (default 3)
# The corpus is put back (truncated to its original sizes) on exit.
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench}
CORPUS=${CAIRN_BENCH_CORPUS:-$BASE/corpus}
WORK=${CAIRN_BENCH_WORK:-$BASE/work-diff}
BIN=${CAIRN_BENCH_BIN:-$ROOT/build/cairn}
RUNS=${CAIRN_BENCH_RUNS:-3}
CHANGED=$WORK/changed.list
say() { echo "== $*" >&2; }

[ -x "$BIN" ] || { say "building"; make -C "$ROOT" -j2 build/cairn >/dev/null; }
if [ ! -d "$CORPUS" ]; then
	say "building corpus $CORPUS (cp -a; unreadable items skipped)"
	mkdir -p "$CORPUS"
	for d in /usr/share /usr/include /usr/lib/x86_64-linux-gnu; do
		cp -a "$d" "$CORPUS/$(basename "$d")" 2>/dev/null || true
	done
	touch "$CORPUS.complete"
fi
rm -rf "$WORK"
mkdir -p "$WORK"
export CAIRN_STORE=$WORK/store
restore_corpus() {
	[ -f "$CHANGED" ] || return 0
	while IFS=' ' read -r size f; do truncate -s "$size" "$f"; done <"$CHANGED"
	rm -f "$CHANGED"
}
trap restore_corpus EXIT

# best_of CMD...: the fastest of $RUNS runs, in seconds (output to /dev/null).
best_of() {
	local best=
	for _ in $(seq "$RUNS"); do
		local t0 t1
		t0=$(date +%s.%N)
		"$@" >/dev/null
		t1=$(date +%s.%N)
		best=$(echo "$t1 - $t0" | bc | awk -v b="$best" '{ if (b == "" || $1 < b) print $1; else print b }')
	done
	echo "$best"
}

NFILES=$(find "$CORPUS" -type f | wc -l)
say "corpus: $NFILES files, $(du -sh "$CORPUS" | cut -f1)"
"$BIN" init >/dev/null
"$BIN" create -o source="$CORPUS" ds
"$BIN" snapshot ds@1
# 1%: a line appended to every 100th regular file (sizes kept for the undo).
find "$CORPUS" -type f -writable | sort | awk 'NR % 100 == 0' | while IFS= read -r f; do
	echo "$(stat -c %s "$f") $f" >>"$CHANGED"
	echo "cairn bench change" >>"$f"
done
NCHANGED=$(wc -l <"$CHANGED")
"$BIN" snapshot ds@2
LINES=$("$BIN" diff ds@1 ds@2 | wc -l)
T_SNAP=$(best_of "$BIN" diff ds@1 ds@2)
T_LIVE=$(best_of "$BIN" diff ds@1)
echo "cairn diff ds@1 ds@2: $T_SNAP s ($LINES lines for $NCHANGED changed files of $NFILES)"
echo "cairn diff ds@1 (live source): $T_LIVE s"

if [ "${CAIRN_BENCH_PEERS:-1}" != 0 ] && command -v restic >/dev/null; then
	export RESTIC_REPOSITORY=$WORK/restic RESTIC_PASSWORD=bench
	restore_corpus
	restic init -q
	restic backup -q --tag one "$CORPUS"
	find "$CORPUS" -type f -writable | sort | awk 'NR % 100 == 0' | while IFS= read -r f; do
		echo "$(stat -c %s "$f") $f" >>"$CHANGED"
		echo "cairn bench change" >>"$f"
	done
	restic backup -q --tag two "$CORPUS"
	ids=($(restic snapshots --json | python3 -c 'import json,sys; print(" ".join(s["short_id"] for s in json.load(sys.stdin)))'))
	T_RESTIC=$(best_of restic diff -q "${ids[0]}" "${ids[1]}")
	echo "restic diff: $T_RESTIC s"
	echo "ratio restic/cairn: $(echo "scale=1; $T_RESTIC / $T_SNAP" | bc)x"
fi
echo "load: $(uptime | sed 's/.*load average/load average/')"
