#!/bin/bash
# bench/recv-snapshots.sh - receiving a stream with many snapshots of one
# dataset (issue 9: recv used to read the target's snapshot list once per
# incoming snapshot, quadratic in snapshots).  Results go to BENCHMARKS.md
# ("recv of a 5,000-snapshot -I stream").
#
# Builds a store with N (default 5000) snapshots of a one-file dataset,
# receives `send tank@1` into a second store, then times `send -I tank@1
# tank@N | recv` (the stream is written to a file first, so only recv is
# timed) and the dry run `recv -n` of the same stream.  With CAIRN_OLD set
# to another build, the same receives run with it too (fresh copies of the
# target) and the ratios are printed.
# Usage: bench/recv-snapshots.sh [N]   (CAIRN, CAIRN_OLD, CAIRN_BENCH_DIR)
set -eu
N=${1:-5000}
CAIRN=${CAIRN:-$(cd "$(dirname "$0")/.." && pwd)/build/cairn}
# CAIRN_BENCH_WORK: a work directory kept between runs (building the
# snapshots takes minutes); by default a temporary one, removed at exit.
if [ -n "${CAIRN_BENCH_WORK:-}" ]; then
	W=$CAIRN_BENCH_WORK
	mkdir -p "$W"
else
	W=$(mktemp -d "${CAIRN_BENCH_DIR:-/var/tmp}/cairn-bench-rsnap.XXXXXX")
	trap 'rm -rf "$W"' EXIT
fi
A=$W/a B0=$W/b0
if [ ! -s "$W/stream.$N" ]; then
	rm -rf "$A" "$B0" "$W/src"
	"$CAIRN" -s "$A" init >/dev/null
	"$CAIRN" -s "$B0" init >/dev/null
	mkdir "$W/src"
	"$CAIRN" -s "$A" create -o source="$W/src" tank
	echo "building $N snapshots..." >&2
	for i in $(seq 1 "$N"); do
		echo "$i" >"$W/src/f"
		"$CAIRN" -s "$A" snapshot "tank@$i"
	done
	"$CAIRN" -s "$A" send tank@1 | "$CAIRN" -s "$B0" recv dst
	"$CAIRN" -s "$A" send -I tank@1 "tank@$N" >"$W/stream.$N"
fi
echo "stream: $(stat -c %s "$W/stream.$N") bytes, $((N - 1)) snapshots; $(uptime)"

# secs BIN ARGS: wall seconds of `BIN -s COPY recv ARGS dst < stream` on a
# fresh copy of the target store.
secs() {
	local bin=$1
	shift
	rm -rf "$W/b"
	cp -a "$B0" "$W/b"
	local t0 t1
	t0=$(date +%s.%N)
	"$bin" -s "$W/b" recv "$@" dst <"$W/stream.$N" >/dev/null
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}
new=$(secs "$CAIRN")
dry=$(secs "$CAIRN" -n)
echo "recv -I ($((N - 1)) snapshots): ${new}s; recv -n: ${dry}s"
if [ -n "${CAIRN_OLD:-}" ]; then
	old=$(secs "$CAIRN_OLD")
	echo "recv -I with CAIRN_OLD: ${old}s; ratio old/new: $(echo "scale=1; $old / $new" | bc)"
fi
