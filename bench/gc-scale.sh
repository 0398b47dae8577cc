#!/bin/bash
# bench/gc-scale.sh - garbage collection at scale: mark and sweep of
# synthetic stores of 2M, 10M and 20M chunks (CAIRN_BENCH_SIZES), with
# time, chunks/s and peak RSS for each, and the cost ratios against the
# smallest size set beside linear.  Results go to BENCHMARKS.md
# ("Garbage collection at scale").
#
# Root only: each store lives on its own ext4 file system in a sparse
# image file under $CAIRN_BENCH_DIR, attached to a loop device and mounted
# under /var/tmp/gcscale-mnt/N, because the root file system has too few
# inodes for 20M chunk files.  The image is made with inline_data and
# 512-byte inodes: a 174-byte chunk file then lives in its inode (512 bytes
# of disk instead of a 4 KiB block), so 20M chunks take ~10 GB, not ~80.
# On exit every mount and loop device made here is released; the images
# are deleted unless CAIRN_BENCH_KEEP=1 (deleting the image is how a 20M
# store goes away in seconds; rm -r of its files takes many minutes).
#
# Store shape (bench/mkstore.c), the same per 200k chunks at every size so
# that only the size changes: N/200,000 datasets x 5 snapshots, 50,000
# chunks shared by all, each dataset's window of 95,000 own chunks sliding
# by 25,000 per snapshot (145,000 references per snapshot, ~3.6 per chunk;
# a snapshot's working set stays below the 1M LRU at every size).
#
# Runs per size, each `cairn gc -j` with the defaults (order inode, batch
# and LRU 1,048,576, 2 threads) on a store with nothing to remove:
#   warm  after one warm-up run
#   cold  after `sync; echo 3 > /proc/sys/vm/drop_caches`
# Peak RSS and CPU time from /usr/bin/time; mark and sweep times from GC's
# status.  The tables come from bench/gc-scale-report.py, which can be run
# again on a run's log directory.
#
# Environment: CAIRN_BENCH_DIR (default /var/tmp/cairn-bench-gcscale),
# CAIRN_BENCH_SIZES (default "2000000 10000000 20000000"),
# CAIRN_BENCH_STEP=make (only build the stores, and keep them),
# CAIRN_BENCH_GC_ARGS (more `cairn gc` options, e.g. "--order digest"),
# CAIRN_BENCH_KEEP=1, CAIRN_BENCH_NOAPPEND=1 (do not touch BENCHMARKS.md).
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench-gcscale}
MNT=/var/tmp/gcscale-mnt
SIZES=${CAIRN_BENCH_SIZES:-2000000 10000000 20000000}
STEP=${CAIRN_BENCH_STEP:-all}
LOG=$BASE/log
say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (loop devices, mount, drop_caches)"
mkdir -p "$BASE" "$LOG" "$MNT"
[ -x /usr/bin/time ] || { say "installing time"; apt-get -o DPkg::Lock::Timeout=900 install -y time >/dev/null || die "no /usr/bin/time"; }
command -v python3 >/dev/null || die "needs python3"
command -v losetup >/dev/null && command -v mkfs.ext4 >/dev/null || die "needs losetup and mkfs.ext4"

# ---- mounts, released on exit ----
MOUNTED=()
cleanup() {
	local n
	for n in "${MOUNTED[@]}"; do
		umount "$MNT/$n" 2>/dev/null || umount -l "$MNT/$n" || true
		# The device stays busy for a moment after umount: retry.
		if [ -e "$BASE/loop-$n" ]; then
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				losetup -d "$(cat "$BASE/loop-$n")" 2>/dev/null && break
				sleep 0.5
			done
		fi
		rm -f "$BASE/loop-$n"
		rmdir "$MNT/$n" 2>/dev/null || true
		if [ "$STEP" != make ] && [ -z "${CAIRN_BENCH_KEEP:-}" ]; then
			rm -f "$BASE/gcscale-$n.img"
		fi
	done
}
trap cleanup EXIT

# attach N: mounts image N (making the file system if it has none).
attach() {
	local n=$1 img=$BASE/gcscale-$1.img loop
	mkdir -p "$MNT/$n"
	if [ ! -e "$img" ]; then
		# Inodes: the chunks, 65,536 fan-out directories, index chunks, slack.
		local inodes=$((n + n / 10 + 200000))
		truncate -s $((n * 1600 + 8 * 1024 * 1024 * 1024)) "$img"
		mkfs.ext4 -q -F -O inline_data -I 512 -N "$inodes" -b 4096 \
			-E lazy_itable_init=1,lazy_journal_init=1 "$img" || die "mkfs of $img failed"
	fi
	loop=$(losetup -f --show "$img") || die "no free loop device"
	echo "$loop" >"$BASE/loop-$n"
	MOUNTED+=("$n")
	# noinit_itable: no background zeroing of inode tables (it would
	# write gigabytes into the sparse image and skew the timings).
	mount -o noatime,noinit_itable "$loop" "$MNT/$n" || die "mount of $img failed"
}

# ---- build ----
say "building into $BASE/build"
# mkstore links with the library like the command (the Makefile's bench rule).
make -s -C "$ROOT" B="$BASE/build" "$BASE/build/cairn" "$BASE/build/bench/mkstore" >&2 ||
	die "make failed"
CAIRN=${CAIRN_BENCH_BIN:-$BASE/build/cairn}
MKSTORE=$BASE/build/bench/mkstore

# ---- stores ----
# make_store N: builds $MNT/N/store unless it is complete.
make_store() {
	local n=$1 dir=$MNT/$1/store params
	params="$n $((n / 200000)) 5 50000 25000 150"
	if [ -e "$dir.complete" ] && [ "$(cat "$dir.complete")" = "$params" ]; then
		say "reusing $dir ($params)"
		return
	fi
	rm -rf "$dir" "$dir.complete"
	say "making $dir: mkstore $params"
	local t0
	t0=$(date +%s)
	# shellcheck disable=SC2086
	nice -n 10 "$MKSTORE" "$dir" $params >"$LOG/mkstore.$n" 2>&1 || die "mkstore failed: $(cat "$LOG/mkstore.$n")"
	say "made in $(($(date +%s) - t0)) s: $(tr '\n' ' ' <"$LOG/mkstore.$n")"
	echo "$params" >"$dir.complete"
}
for n in $SIZES; do
	attach "$n"
	make_store "$n"
done
[ "$STEP" = make ] && { say "stores made; kept in $BASE"; exit 0; }

# ---- runs ----
# run NAME STORE cold|warm: one `cairn gc -j`; saves NAME.json (GC's
# status plus rss_kib, wall_s, user_s, sys_s and fs_inputs).
run() {
	local name=$1 store=$2 mode=$3
	sync
	[ "$mode" = cold ] && echo 3 >/proc/sys/vm/drop_caches
	# shellcheck disable=SC2086
	CAIRN_STORE=$store nice -n 10 /usr/bin/time -v -o "$LOG/$name.time" "$CAIRN" gc -j ${CAIRN_BENCH_GC_ARGS:-} \
		>"$LOG/$name.out" 2>"$LOG/$name.err" || die "$name: gc failed: $(cat "$LOG/$name.err")"
	python3 - "$LOG/$name.out" "$LOG/$name.time" "$LOG/$name.json" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
t = open(sys.argv[2]).read()
def f(label):
    return re.search(re.escape(label) + r": (.*)", t).group(1).strip()
wall = f("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
d["wall_s"] = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
d["rss_kib"] = int(f("Maximum resident set size (kbytes)"))
d["user_s"] = float(f("User time (seconds)"))
d["sys_s"] = float(f("System time (seconds)"))
d["fs_inputs"] = int(f("File system inputs"))
json.dump(d, open(sys.argv[3], "w"))
EOF
	say "$name: $(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("mark %.2fs sweep %.2fs rss %d MiB" % (d["mark_ns"] / 1e9, d["sweep_ns"] / 1e9, d["rss_kib"] // 1024))' "$LOG/$name.json")"
}
rm -f "$LOG"/*.json
for n in $SIZES; do
	run "warmup-$n" "$MNT/$n/store" warm
	run "warm-$n" "$MNT/$n/store" warm
	run "cold-$n" "$MNT/$n/store" cold
done

# ---- report ----
REPORT=$LOG/report.md
python3 "$ROOT/bench/gc-scale-report.py" "$LOG" "$SIZES" >"$REPORT"
cat "$REPORT"

if [ -z "${CAIRN_BENCH_NOAPPEND:-}" ]; then
	{
		echo
		echo "### Garbage collection at scale (bench/gc-scale.sh)"
		echo
		echo "Command: \`bench/gc-scale.sh\` (sizes: $SIZES; gc options: ${CAIRN_BENCH_GC_ARGS:-none}). Date: $(date -u '+%Y-%m-%d %H:%M UTC')."
		echo "Machine: $(nproc) vCPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) RAM ($(uname -r)); each store on its own loop-mounted ext4 (inline_data, 512-byte inodes); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
		echo
		cat "$REPORT"
	} >>"$ROOT/BENCHMARKS.md"
	say "appended to BENCHMARKS.md"
fi
