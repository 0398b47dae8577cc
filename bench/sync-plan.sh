#!/bin/bash
# bench/sync-plan.sh - what `sync -R -F` costs before it sends anything: the
# plan (which datasets and snapshots the destination has, which it would
# destroy).  Results go to BENCHMARKS.md ("sync -R -F planning").
#
# Builds a store with DS datasets (a top and DS-1 children, default 9) and N
# `snapshot -r` rounds (default 2000: 18,000 snapshots), syncs it with
# `sync -R -F` into a second store, and then times, ROUNDS times each
# (median, min, max):
#   up to date   `sync -R -F SRC DEST` with nothing to send;
#   dry run      `sync -R -F -n` after every 10th round of snapshots was
#                destroyed on the source, so that it names N/10 x DS stale
#                snapshots there (the store is not changed);
#   floor        the two listings a sync cannot do without: the source's
#                subtree and the destination's (`list -H -p -r -t all`).
# With CAIRN_OLD set to another build, the same commands run with it too,
# interleaved, and the ratios old/new are printed.  There is no zfs peer on
# this machine (no zfs module); syncoid plans with one `zfs list` a side.
# Usage: bench/sync-plan.sh   (CAIRN, CAIRN_OLD, CAIRN_BENCH_DIR,
#        CAIRN_BENCH_SNAPS=N, CAIRN_BENCH_DATASETS=DS, CAIRN_BENCH_ROUNDS)
set -eu
N=${CAIRN_BENCH_SNAPS:-2000}
DS=${CAIRN_BENCH_DATASETS:-9}
ROUNDS=${CAIRN_BENCH_ROUNDS:-5}
CAIRN=${CAIRN:-$(cd "$(dirname "$0")/.." && pwd)/build/cairn}
W=$(mktemp -d "${CAIRN_BENCH_DIR:-/var/tmp}/cairn-bench-syncplan.XXXXXX")
trap 'rm -rf "$W"' EXIT
A=$W/a B=$W/b
die() { echo "sync-plan.sh: $*" >&2; exit 1; }

"$CAIRN" -s "$A" init >/dev/null
"$CAIRN" -s "$B" init >/dev/null
mkdir "$W/src"
echo data >"$W/src/f"
"$CAIRN" -s "$A" create -o source="$W/src" bench
for i in $(seq 1 $((DS - 1))); do
	mkdir "$W/src/fs$i" # a child's source is under its parent's
	echo "$i" >"$W/src/fs$i/f"
	"$CAIRN" -s "$A" create "bench/fs$i"
done
echo "building $N x snapshot -r over $DS datasets..." >&2
for i in $(seq 1 "$N"); do "$CAIRN" -s "$A" snapshot -r "bench@s$i" || die "snapshot $i failed"; done
"$CAIRN" -s "$A" sync -R -F bench "$B:copy" || die "the first sync failed"
"$CAIRN" -s "$A" sync -R -F -v bench "$B:copy" | grep -q "is up to date" ||
	die "the second sync was not up to date"

# secs CMD...: wall seconds of CMD (output discarded; a failure stops the bench).
secs() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null || die "failed: $*"
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}
floor() {
	"$CAIRN" -s "$A" list -H -p -r -t all -o name,guid,createtxg bench &&
		"$CAIRN" -s "$B" list -H -p -r -t all -o name,guid copy
}
# stats V...: "median min max" of the values.
stats() {
	printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%.3f %.3f %.3f", v[int((NR+1)/2)], v[1], v[NR]}'
}

declare -A T
measure() { # measure KEY CMD...
	local key=$1
	shift
	T[$key]="${T[$key]:-} $(secs "$@")"
}
run_round() { # run_round STEP
	local bin
	for bin in "$CAIRN" ${CAIRN_OLD:+"$CAIRN_OLD"}; do
		local who=new
		[ "$bin" = "$CAIRN" ] || who=old
		case $1 in
		current) measure "current-$who" "$bin" -s "$A" sync -R -F bench "$B:copy" ;;
		stale) measure "stale-$who" "$bin" -s "$A" sync -R -F -n bench "$B:copy" ;;
		esac
	done
	measure "floor-$1" floor
}

report() { # report STEP LABEL
	local s
	read -r -a s <<<"$(stats ${T[floor-$1]})"
	echo "$2: floor (both listings) ${s[0]} s (${s[1]}-${s[2]})"
	local who
	for who in new ${CAIRN_OLD:+old}; do
		local v
		read -r -a v <<<"$(stats ${T[$1-$who]})"
		echo "$2: $who ${v[0]} s (${v[1]}-${v[2]}), $(echo "scale=2; ${v[0]} / ${s[0]}" | bc)x the floor"
	done
	if [ -n "${CAIRN_OLD:-}" ]; then
		local o n
		o=$(stats ${T[$1-old]} | cut -d' ' -f1)
		n=$(stats ${T[$1-new]} | cut -d' ' -f1)
		echo "$2: old/new $(echo "scale=1; $o / $n" | bc)x"
	fi
}

echo "store: $DS datasets x $N snapshots; $(uptime)"
for _ in $(seq 1 "$ROUNDS"); do run_round current; done
report current "up to date, sync -R -F"

echo "destroying every 10th round on the source..." >&2
for i in $(seq 10 10 "$N"); do "$CAIRN" -s "$A" destroy -r "bench@s$i"; done
want=$(( (N / 10) * DS ))
got=$("$CAIRN" -s "$A" sync -R -F -n bench "$B:copy" | grep -c '^would destroy')
[ "$got" -eq "$want" ] || die "sync -n named $got stale snapshots, expected $want"
for _ in $(seq 1 "$ROUNDS"); do run_round stale; done
report stale "dry run naming $want stale snapshots, sync -R -F -n"
echo "done; $(uptime)"
