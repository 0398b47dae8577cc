#!/bin/bash
# bench/restore.sh - restore throughput of the tree's cairn against a
# baseline binary, on the bench corpus, alternating in one run, with the
# machine's ceiling from bench/limit.sh for the ratio.
#
# Steps: build (out of tree), back up the corpus once into a fresh store
# (with the tree's binary), run the limit probe, then CAIRN_BENCH_ROUNDS
# rounds of `cairn restore ds@1 DIR` into a fresh directory, baseline then
# tree.  Nothing is deleted on the target filesystem between timed steps
# (ext4 makes new inodes slow for a minute after a mass deletion; see
# bench/backup.sh), so all restore directories stay until the end.  The
# first restore of the tree's binary is compared with the corpus (diff -r).
#
# Environment:
#   CAIRN_BENCH_DIR     base directory (default /var/tmp/cairn-bench)
#   CAIRN_BENCH_CORPUS  corpus (default $CAIRN_BENCH_DIR/corpus; bench/backup.sh
#                       builds it)
#   CAIRN_BENCH_BIN     binary to measure (default: the tree, built into
#                       $CAIRN_BENCH_DIR/restore-build)
#   CAIRN_BENCH_BASE    baseline binary (e.g. a build of main); none = only
#                       the tree's binary is timed
#   CAIRN_BENCH_ROUNDS  rounds (default 2)
#   CAIRN_BENCH_TARGET  where each restore goes: "dir" (default: a new
#                       directory under the work directory), "tmpfs" (a tmpfs
#                       mounted for the run: no disk file system's cost), or
#                       "ext4" (a new ext4 file system on a loop device with
#                       direct I/O, made for the run: no inodes freed
#                       recently, see above, whatever ran before)
# Under root the timed steps run at nice -10 in their own session, as in
# bench/backup.sh.  MB = 10^6 bytes of restored file data.
NAME=restore
. "$(dirname "$0")/ab-setup.sh"
STORE=$WORK/store
"$NEW" -s "$STORE" init >/dev/null
"$NEW" -s "$STORE" create -o source="$CORPUS" ds >/dev/null
echo "backing up the corpus once ($(date -u +%H:%M:%S))" >&2
"$NEW" -s "$STORE" snapshot ds@1 >/dev/null 2>"$WORK/snapshot.err" ||
	grep -q 'snapshot taken' "$WORK/snapshot.err" || die "backup failed"
limit_probe "$CORPUS" "$BUILD" || die "limit probe failed"

# restored file bytes (what MB/s counts): regular files, each inode once
bytes_of() { find "$1" -type f -printf '%i %s\n' | sort -u -k1,1n | awk '{s+=$2} END {printf "%.0f\n", s}'; }

echo "restore ds@1, $ROUNDS rounds; limit $LIMIT_LINE"
printf '%-8s %5s %8s %7s %7s %8s %8s %7s  %s\n' bin round wall_s user_s sys_s rss_MiB MB/s /limit load
declare -A SUM
TARGET=${CAIRN_BENCH_TARGET:-dir}
case $TARGET in dir | tmpfs | ext4) ;; *) die "CAIRN_BENCH_TARGET=$TARGET: dir, tmpfs or ext4" ;; esac
MOUNTS=()
unmount_all() {
	local m
	for m in ${MOUNTS[@]+"${MOUNTS[@]}"}; do
		umount "$m" 2>/dev/null || true
		rm -f "$m.img"
	done
}
trap 'unmount_all; rm -rf "$WORK"' EXIT # replaces ab-setup.sh's
# new_target DIR: makes DIR the mount point of a new file system, as
# CAIRN_BENCH_TARGET says; the restore goes into DIR/r.
new_target() {
	local dir=$1 dev
	mkdir -p "$dir"
	case $TARGET in
	tmpfs) mount -t tmpfs -o size=8g tmpfs "$dir" || die "mount tmpfs" ;;
	ext4)
		truncate -s 8G "$dir.img" &&
			mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dir.img" &&
			dev=$(losetup --direct-io=on --show -f "$dir.img") &&
			mount "$dev" "$dir" && losetup -d "$dev" || die "mount a new ext4 on $dir.img"
		;;
	esac
	[ "$TARGET" = dir ] || MOUNTS+=("$dir")
}
run() { # run NAME BIN ROUND
	local name=$1 bin=$2 i=$3 dir=$WORK/r-$1-$3 load t
	if [ "$TARGET" != dir ]; then
		# The previous restore's file system goes first: with it still
		# mounted, the second restore of each round spent 3-5x the system
		# time, whichever binary it was (BENCHMARKS.md, 2026-12-04).
		unmount_all
		MOUNTS=()
		new_target "$dir"
		dir=$dir/r
	fi
	sync
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	"${PRIO[@]}" /usr/bin/time -o "$WORK/time" -f '%e %U %S %M' "$bin" -s "$STORE" restore ds@1 "$dir" ||
		die "$name: restore failed"
	read -r wall user sys rss <"$WORK/time"
	[ -n "${BYTES:-}" ] || BYTES=$(bytes_of "$dir")
	mbs=$(awk -v b="$BYTES" -v s="$wall" 'BEGIN {printf "%.1f", b / s / 1e6}')
	printf '%-8s %5s %8s %7s %7s %8s %8s %7s  %s\n' "$name" "$i" "$wall" "$user" "$sys" \
		"$((rss / 1024))" "$mbs" "$(awk -v m="$mbs" -v l="$LIMIT_MBS" 'BEGIN {printf "%.2f", m / l}')" "$load"
	SUM[$name]=$(awk -v a="${SUM[$name]:-0}" -v s="$wall" 'BEGIN {print a + s}')
}
for i in $(seq 1 "$ROUNDS"); do
	[ -z "$OLD" ] || run base "$OLD" "$i"
	run tree "$NEW" "$i"
	if [ "$i" = 1 ]; then
		t=$WORK/r-tree-1
		[ "$TARGET" = dir ] || t=$t/r
		diff -r --no-dereference "$CORPUS" "$t" >/dev/null || die "restore differs from the corpus"
	fi
done
echo "target: $TARGET"
echo "restored bytes: $BYTES; date $(date -u '+%Y-%m-%d %H:%M UTC'); uptime: $(uptime)"
[ -z "$OLD" ] || echo "base / tree wall time (sum of rounds): $(awk -v a="${SUM[base]}" -v b="${SUM[tree]}" 'BEGIN {printf "%.2f", a / b}')x"
