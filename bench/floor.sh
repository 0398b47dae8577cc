#!/bin/bash
# bench/floor.sh - the fixed cost of one cairn process (issue 16: "the
# process floor"): exec and dynamic loading, store open, SQLite open and
# the first query, measured as CPU time (perf stat task-clock, which a
# loaded machine inflates far less than wall time) and wall time, mean of
# N runs each, for one or more binaries in the same run (interleaved), with
# the load average printed next to every figure.
#
#   exec        BIN --help                    (exec + loader + argument parsing)
#   open+query  BIN list -H -p -t snapshot -d 1 -o name ds   (3 snapshots)
#   /bin/true   the machine's own exec floor (x true: the ratio to it)
#
# Each binary lists a store it made itself (init, create, 3 snapshots).
#
# usage: bench/floor.sh [-n N] BIN [BIN...]
set -euo pipefail
export LC_ALL=C
N=200
if [ "${1:-}" = -n ]; then N=$2; shift 2; fi
[ $# -ge 1 ] || { echo "usage: bench/floor.sh [-n N] BIN [BIN...]" >&2; exit 2; }
command -v perf >/dev/null || { echo "bench: perf is needed (linux-perf)" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/cairn-floor.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/src"
echo x >"$W/src/f"
# One store per binary, made by that binary: what a command leaves behind
# (a WAL to replay, or none) is part of what the next one pays.
k=0
for bin in "$@"; do
	k=$((k + 1))
	"$bin" -s "$W/s$k" init >/dev/null
	"$bin" -s "$W/s$k" create -o source="$W/src" ds
	for i in 1 2 3; do "$bin" -s "$W/s$k" snapshot "ds@$i" >/dev/null; done
done

# measure LABEL CMD...: "| label | CPU ms | x /bin/true | wall ms | load |"
TRUE_CPU=
measure() {
	local label=$1 out cpu wall
	shift
	out=$(perf stat -x, -e task-clock -r "$N" "$@" 2>&1 >/dev/null) || {
		echo "bench: $* failed" >&2
		exit 1
	}
	cpu=$(printf '%s\n' "$out" | awk -F, '/task-clock/ {printf "%.2f", $1}')
	# perf -x does not print the elapsed time: time the same N runs.
	local t0 t1
	t0=$(date +%s%N)
	for ((i = 0; i < N; i++)); do "$@" >/dev/null; done
	t1=$(date +%s%N)
	wall=$(awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN {printf "%.2f", (b - a) / n / 1e6}')
	[ -n "$TRUE_CPU" ] || TRUE_CPU=$cpu
	printf '| %-44s | %7s | %7s | %7s | %-16s |\n' "$label" "$cpu" \
		"$(awk -v a="$cpu" -v b="$TRUE_CPU" 'BEGIN {printf "%.2f", a / b}')" "$wall" \
		"$(cut -d' ' -f1-3 /proc/loadavg)"
}

echo "bench/floor.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $N runs each, $(nproc) CPUs"
echo "| command                                      |  CPU ms | x true  | wall ms | load             |"
echo "|----------------------------------------------|---------|---------|---------|------------------|"
measure "/bin/true" /bin/true
k=0
for bin in "$@"; do
	k=$((k + 1))
	measure "$(basename "$bin"): --help" "$bin" --help
	measure "$(basename "$bin"): list 3 snapshots" "$bin" -s "$W/s$k" list -H -p -t snapshot -d 1 -o name ds
done
for bin in "$@"; do
	echo "$(basename "$bin"): $(ldd "$bin" | wc -l) shared objects mapped at exec"
done
