#!/bin/bash
# bench/s3.sh - cairn with chunks on S3 against restic's S3 backend, side by
# side on the same radosgw (a single-node Ceph from scripts/ceph-dev.sh,
# started here unless CAIRN_S3_ENDPOINT is set).  Steps, each timed:
#   backup      first backup of the corpus
#   unchanged   second backup, nothing changed
#   restore     restore of the first backup into an empty directory
#   prune+gc    forget/destroy the first backup (after a 1 % change and a
#               third backup), then restic prune / cairn gc (cutoff 0)
# and, for cairn, the requests it made (CAIRN_BACKEND_STATS): requests per
# GB uploaded, and the bucket sweep's list+delete requests per million
# chunks.  Prints a table and ratios (restic time / cairn time).
#
# Environment: CAIRN_BENCH_CORPUS (default: /usr/share/doc + /usr/include,
# copied), CAIRN_BENCH_DIR (default /var/tmp/cairn-bench-s3), CAIRN_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CAIRN=${CAIRN_BIN:-$ROOT/build/cairn}
[ -x "$CAIRN" ] || make -s build/cairn
D=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench-s3}
rm -rf "$D/work"
mkdir -p "$D/work"
CEPH=""
if [ -z "${CAIRN_S3_ENDPOINT:-}" ]; then
	CEPH="$D/work/ceph"
	eval "$(scripts/ceph-dev.sh start "$CEPH")"
	trap 'scripts/ceph-dev.sh stop "$CEPH" >/dev/null 2>&1 || true' EXIT
fi
CORPUS=${CAIRN_BENCH_CORPUS:-$D/corpus}
if [ ! -d "$CORPUS" ]; then
	mkdir -p "$CORPUS"
	cp -a /usr/share/doc /usr/include "$CORPUS/" 2>/dev/null || true
fi
bytes=$(du -sb "$CORPUS" | cut -f1)
export RESTIC_PASSWORD=bench RESTIC_CACHE_DIR="$D/work/restic-cache"
R="s3:$CAIRN_S3_ENDPOINT/restic-bench-$$"
S="$D/work/store"
export CAIRN_BACKEND_STATS="$D/work/stats"
: >"$CAIRN_BACKEND_STATS"

t() { # label cmd...: runs cmd, prints seconds
	local s e
	s=$(date +%s.%N)
	"$@" >/dev/null 2>"$D/work/err" || {
		echo "failed: $* ($(tail -3 "$D/work/err"))" >&2
		exit 1
	}
	e=$(date +%s.%N)
	echo "$e - $s" | bc
}
sum_stat() { tr ' ' '\n' <"$CAIRN_BACKEND_STATS" | sed -n "s/^$1=//p" | paste -sd+ | bc; }

restic -r "$R" init >/dev/null
"$CAIRN" -s "$S" init --chunks "s3://cairn-bench-$$/s" >/dev/null
"$CAIRN" -s "$S" create -o source="$CORPUS" ds
"$CAIRN" -s "$S" config gc_atime_cutoff=0 >/dev/null

rb=$(t restic -r "$R" backup "$CORPUS")
cb=$(t "$CAIRN" -s "$S" snapshot ds@1)
up_req=$(($(sum_stat put) + $(sum_stat head) + $(sum_stat list)))
up_bytes=$(sum_stat bytes_up)
ru=$(t restic -r "$R" backup "$CORPUS")
cu=$(t "$CAIRN" -s "$S" snapshot ds@2)
rr=$(t restic -r "$R" restore latest --target "$D/work/rr")
cr=$(t "$CAIRN" -s "$S" restore ds@1 "$D/work/cr")
find "$CORPUS" -type f | awk 'NR % 100 == 0' | while read -r f; do echo "bench change" >>"$f"; done
restic -r "$R" backup "$CORPUS" >/dev/null
"$CAIRN" -s "$S" snapshot ds@3 >/dev/null
first=$(restic -r "$R" snapshots --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
rp=$(t sh -c "restic -r '$R' forget '$first' && restic -r '$R' prune")
: >"$CAIRN_BACKEND_STATS"
cp_=$(t sh -c "'$CAIRN' -s '$S' destroy ds@1 && '$CAIRN' -s '$S' destroy ds@2 && '$CAIRN' -s '$S' gc")
listed=$(sum_stat sweep_listed)
sweep_req=$(($(sum_stat list) + $(sum_stat delete_req)))

printf '\ncorpus %s MB, %s files; load: %s\n' $((bytes >> 20)) "$(find "$CORPUS" -type f | wc -l)" "$(uptime | sed 's/.*load average: //')"
printf '%-12s %10s %10s %8s\n' step restic cairn ratio
for row in "backup $rb $cb" "unchanged $ru $cu" "restore $rr $cr" "prune+gc $rp $cp_"; do
	set -- $row
	printf '%-12s %9.2fs %9.2fs %7.2fx\n' "$1" "$2" "$3" "$(echo "$2 / $3" | bc -l)"
done
printf 'cairn requests per GB uploaded: %.0f (%s requests, %s bytes)\n' \
	"$(echo "$up_req / ($up_bytes / 1000000000)" | bc -l)" "$up_req" "$up_bytes"
printf 'cairn sweep: %s objects listed with %s list+delete requests = %.0f per million chunks\n' \
	"$listed" "$sweep_req" "$(echo "$sweep_req * 1000000 / $listed" | bc -l)"
