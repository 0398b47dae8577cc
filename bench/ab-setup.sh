# bench/ab-setup.sh - the set-up shared by the scripts that time the tree's
# cairn against a baseline binary on the bench corpus (bench/recv.sh,
# bench/restore.sh).  Source it with NAME set to the script's name; it sets
# ROOT, BASE, CORPUS, WORK ($BASE/$NAME-work, emptied and removed on exit),
# ROUNDS, NEW (the binary measured: CAIRN_BENCH_BIN or the tree built into
# $BASE/$NAME-build), OLD (CAIRN_BENCH_BASE, may be empty), PRIO (the
# command prefix of timed steps: under root, nice -10 in their own session,
# as in bench/backup.sh) and sources bench/limit.sh with the same priority.
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench}
CORPUS=${CAIRN_BENCH_CORPUS:-$BASE/corpus}
WORK=$BASE/$NAME-work
BUILD=$BASE/$NAME-build
ROUNDS=${CAIRN_BENCH_ROUNDS:-2}
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
[ -d "$CORPUS" ] || die "$CORPUS: no corpus (bench/backup.sh builds one)"
if [ -n "${CAIRN_BENCH_BIN:-}" ]; then
	NEW=$CAIRN_BENCH_BIN
else
	NEW=$BUILD/cairn
	make -s -C "$ROOT" B="$BUILD" "$NEW" >&2 || die "make failed"
fi
OLD=${CAIRN_BENCH_BASE:-}
PRIO=()
if [ "$(id -u)" = 0 ]; then
	PRIO=(setsid -w bash -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' -10)
fi
LIMIT_PRIO=(${PRIO[@]+"${PRIO[@]}"})
. "$ROOT/bench/limit.sh"

rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
