#!/bin/bash
# bench/limit.sh - the machine's ceiling for the backup data path: SHA-256
# plus zstd (the store's default level, through cairn's own blob_encode) of
# the bench corpus, in memory, on all cores, no file system work
# (bench/limit.c).  Other bench scripts source this file and call
# `limit_probe CORPUS BUILD_DIR` to get LIMIT_MBS for their ratios; run
# alone it prints the figure with the machine load next to it.
#
# Environment:
#   CAIRN_LIMIT_RUNS   runs of the probe, best one kept (default 2)
#   CAIRN_LIMIT_LEVEL  zstd level (default 2 = the store default)
#   CAIRN_LIMIT_CHUNK  average chunk size (default 1048576 = the default)

# LIMIT_PRIO: optional command prefix (array) the probe runs under, so that
# it gets the same CPU priority as the steps it is compared with.
LIMIT_PRIO=(${LIMIT_PRIO[@]+"${LIMIT_PRIO[@]}"})
# limit_probe CORPUS BUILD_DIR: builds BUILD_DIR/bench/limit from the tree
# (make bench), runs it, sets LIMIT_MBS and LIMIT_LINE, prints the runs on
# stderr.
limit_probe() {
	local corpus=$1 build=$2 root out
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	make -s -C "$root" B="$build" "$build/bench/limit" >&2 || {
		echo "bench: building the limit probe failed" >&2
		return 1
	}
	out=$("${LIMIT_PRIO[@]}" "$build/bench/limit" -r "${CAIRN_LIMIT_RUNS:-2}" -l "${CAIRN_LIMIT_LEVEL:-2}" \
		-c "${CAIRN_LIMIT_CHUNK:-1048576}" "$corpus") || {
		echo "bench: the limit probe failed" >&2
		return 1
	}
	printf '%s\n' "$out" | sed 's/^/   limit: /' >&2
	LIMIT_MBS=$(printf '%s\n' "$out" | sed -n 's/^limit: \([0-9.]*\) MB\/s$/\1/p')
	LIMIT_LINE="$(printf '%s\n' "$out" | head -n 1); best $LIMIT_MBS MB/s; load $(cut -d' ' -f1-3 /proc/loadavg)"
	[ -n "$LIMIT_MBS" ]
}

# Run alone: bench/limit.sh [CORPUS]
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench}
	CORPUS=${1:-${CAIRN_BENCH_CORPUS:-$BASE/corpus}}
	[ -d "$CORPUS" ] || { echo "bench: $CORPUS: no corpus (bench/backup.sh builds one)" >&2; exit 1; }
	echo "load before: $(uptime)"
	limit_probe "$CORPUS" "$BASE/build"
	echo "limit probe $(date -u '+%Y-%m-%d %H:%M UTC'): $LIMIT_LINE"
fi
