#!/bin/bash
# bench/recv.sh - `send | recv` and `recv < file` throughput of the tree's
# cairn against a baseline binary, on the bench corpus, alternating in one
# run, with the machine's ceiling from bench/limit.sh for the ratio.
#
# Steps: build (out of tree), back up the corpus once into a source store
# (with the tree's binary), save its full stream to a file, run the limit
# probe, then CAIRN_BENCH_ROUNDS rounds of, per binary (baseline then
# tree), `cairn send ds@1 | cairn recv ds` (the same binary on both ends)
# into a fresh store, and `cairn recv ds < stream` into another fresh
# store.  Every receive is checked (the snapshot's guid).
#
# Environment:
#   CAIRN_BENCH_DIR     base directory (default /var/tmp/cairn-bench)
#   CAIRN_BENCH_CORPUS  corpus (default $CAIRN_BENCH_DIR/corpus)
#   CAIRN_BENCH_BIN     binary to measure (default: the tree, built into
#                       $CAIRN_BENCH_DIR/recv-build)
#   CAIRN_BENCH_BASE    baseline binary (e.g. a build of main); none = only
#                       the tree's binary is timed
#   CAIRN_BENCH_ROUNDS  rounds (default 2)
# Under root the timed steps run at nice -10 in their own session, as in
# bench/backup.sh.  MB = 10^6 bytes of corpus file data.
NAME=recv
. "$(dirname "$0")/ab-setup.sh"
SRC=$WORK/src
"$NEW" -s "$SRC" init >/dev/null
"$NEW" -s "$SRC" create -o source="$CORPUS" ds >/dev/null
echo "backing up the corpus once ($(date -u +%H:%M:%S))" >&2
"$NEW" -s "$SRC" snapshot ds@1 >/dev/null 2>"$WORK/snapshot.err" ||
	grep -q 'snapshot taken' "$WORK/snapshot.err" || die "backup failed"
GUID=$("$NEW" -s "$SRC" list -H -p -o guid ds@1)
"$NEW" -s "$SRC" send ds@1 >"$WORK/stream" || die "send failed"
STREAM=$(stat -c %s "$WORK/stream")
BYTES=$(find "$CORPUS" -type f -printf '%i %s\n' | sort -u -k1,1n | awk '{s+=$2} END {printf "%.0f\n", s}')
limit_probe "$CORPUS" "$BUILD" || die "limit probe failed"

echo "send|recv and recv<file of ds@1 ($STREAM bytes of stream), $ROUNDS rounds; limit $LIMIT_LINE"
printf '%-6s %-10s %5s %8s %7s %7s %8s %8s %7s  %s\n' bin step round wall_s user_s sys_s rss_MiB MB/s /limit load
declare -A SUM
step() { # step NAME BIN ROUND KIND
	local name=$1 bin=$2 i=$3 kind=$4 dst=$WORK/d-$1-$4-$3 load
	sync
	"$bin" -s "$dst" init >/dev/null
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	if [ "$kind" = pipe ]; then
		"${PRIO[@]}" /usr/bin/time -o "$WORK/time" -f '%e %U %S %M' \
			bash -c '"$1" -s "$2" send ds@1 | "$1" -s "$3" recv ds' - "$bin" "$SRC" "$dst" ||
			die "$name: send | recv failed"
	else
		"${PRIO[@]}" /usr/bin/time -o "$WORK/time" -f '%e %U %S %M' \
			"$bin" -s "$dst" recv ds <"$WORK/stream" || die "$name: recv failed"
	fi
	[ "$("$bin" -s "$dst" list -H -p -o guid ds@1)" = "$GUID" ] || die "$name: ds@1 not received"
	read -r wall user sys rss <"$WORK/time"
	mbs=$(awk -v b="$BYTES" -v s="$wall" 'BEGIN {printf "%.1f", b / s / 1e6}')
	printf '%-6s %-10s %5s %8s %7s %7s %8s %8s %7s  %s\n' "$name" "$kind" "$i" "$wall" "$user" "$sys" \
		"$((rss / 1024))" "$mbs" "$(awk -v m="$mbs" -v l="$LIMIT_MBS" 'BEGIN {printf "%.2f", m / l}')" "$load"
	SUM[$name-$kind]=$(awk -v a="${SUM[$name-$kind]:-0}" -v s="$wall" 'BEGIN {print a + s}')
	rm -rf "$dst"
}
for i in $(seq 1 "$ROUNDS"); do
	for kind in pipe file; do
		[ -z "$OLD" ] || step base "$OLD" "$i" "$kind"
		step tree "$NEW" "$i" "$kind"
	done
done
echo "corpus bytes: $BYTES; date $(date -u '+%Y-%m-%d %H:%M UTC'); uptime: $(uptime)"
if [ -n "$OLD" ]; then
	for kind in pipe file; do
		echo "$kind: base / tree wall time (sum of rounds): $(awk -v a="${SUM[base-$kind]}" -v b="${SUM[tree-$kind]}" 'BEGIN {printf "%.2f", a / b}')x"
	done
fi
