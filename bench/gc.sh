#!/bin/bash
# bench/gc.sh - garbage collection: mark and sweep on a synthetic store of
# 2,000,000 chunks and 200 snapshots, warm and cold, for --order none,
# digest and inode.  Results go to BENCHMARKS.md ("Garbage collection").
#
# The store is made by bench/mkstore.c (built here against the tree's
# libcairn.a): 2,000,000 chunk files of 150 plain bytes written straight
# into .chunks/xxxx/ under their SHA-256 names, in "backup day" order (so
# inode order has nothing to do with digest order, as in a real store);
# 10 datasets x 20 snapshots; each snapshot references 150,000 chunks
# (50,000 shared by all, 100,000 of its dataset's own, a window that
# slides by 5,000 per snapshot): 30,000,000 references, each snapshot with
# a real index stream.  It is kept between runs (CAIRN_BENCH_DIR).
#
# Runs (each `cairn gc -j` on the same store, nothing to remove; figures
# from the status GC reports, peak RSS from /usr/bin/time):
#   warm  --order none|digest|inode, default batch (gc_batch 65,536) and
#         --batch 1M (the LRU's size), after one warm-up run
#   cold  the same after `sync; echo 3 > /proc/sys/vm/drop_caches` (root;
#         skipped with a note otherwise)
#   RSS   default settings on this store and on a 10x smaller one of the
#         same shape; --cache-capacity 65536 on both (a cache smaller than
#         either store: the same RSS on both); the dry run (gc -n)
# "referenced chunks/s" = references marked (touches + LRU hits, i.e. every
# chunk reference of every snapshot's index) / mark time; "touches/s" =
# distinct chunks touched / mark time.
#
# Environment: CAIRN_BENCH_DIR (default /var/tmp/cairn-bench-gc),
# CAIRN_BENCH_BIN (a cairn binary; default: build the tree out of tree into
# $CAIRN_BENCH_DIR/build), CAIRN_BENCH_CHUNKS (default 2000000),
# CAIRN_BENCH_NOAPPEND=1 (do not touch BENCHMARKS.md).
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench-gc}
N=${CAIRN_BENCH_CHUNKS:-2000000}
SMALL=$((N / 10))
LOG=$BASE/log
say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
mkdir -p "$BASE" "$LOG"
[ -x /usr/bin/time ] || { say "installing time"; apt-get install -y time >/dev/null || die "no /usr/bin/time"; }
command -v python3 >/dev/null || die "needs python3"

# ---- build ----
say "building into $BASE/build"
# mkstore links with the library like the command (the Makefile's bench rule).
make -s -C "$ROOT" B="$BASE/build" "$BASE/build/cairn" "$BASE/build/bench/mkstore" >&2 ||
	die "make failed"
CAIRN=${CAIRN_BENCH_BIN:-$BASE/build/cairn}
MKSTORE=$BASE/build/bench/mkstore

# ---- stores ----
# make_store DIR CHUNKS SHARED SLIDE: (re)builds DIR unless it is complete.
make_store() {
	local dir=$1 stamp="$1.complete" params="$2 10 20 $3 $4 150"
	if [ -e "$stamp" ] && [ "$(cat "$stamp")" = "$params" ]; then
		say "reusing $dir ($params)"
		return
	fi
	rm -rf "$dir" "$stamp"
	say "making $dir: mkstore $params"
	local t0=$(date +%s)
	# shellcheck disable=SC2086
	"$MKSTORE" "$dir" $params >"$LOG/mkstore.$(basename "$dir")" || die "mkstore failed"
	say "made in $(($(date +%s) - t0)) s"
	echo "$params" >"$stamp"
}
STORE=$BASE/store-$N
SSTORE=$BASE/store-$SMALL
make_store "$STORE" "$N" $((N / 40)) $((N / 400))
make_store "$SSTORE" "$SMALL" $((SMALL / 40)) $((SMALL / 400))

# ---- runs ----
CANDROP=0
if [ "$(id -u)" = 0 ] && (echo 1 >/proc/sys/vm/drop_caches) 2>/dev/null; then CANDROP=1; fi
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
HZ=$(getconf CLK_TCK)
# Waits (at most 10 s) for other processes to leave the CPUs idle.
wait_quiet() {
	local w=0 b0 b1
	while [ $w -lt 10 ]; do
		b0=$(busy)
		sleep 2
		b1=$(busy)
		[ $((b1 - b0)) -le $((HZ / 5)) ] && return
		w=$((w + 2))
	done
	say "warning: machine busy; timings skewed"
}
# run NAME STORE cold|warm ARGS...: one `cairn gc -j ARGS`; saves NAME.json
# (status plus rss_kib and wall_s).
run() {
	local name=$1 store=$2 mode=$3
	shift 3
	sync
	wait_quiet
	if [ "$mode" = cold ]; then
		[ $CANDROP = 1 ] || { echo '{"skipped": true}' >"$LOG/$name.json"; return; }
		echo 3 >/proc/sys/vm/drop_caches
	fi
	CAIRN_STORE=$store /usr/bin/time -f '%e %M' -o "$LOG/$name.time" "$CAIRN" gc -j "$@" \
		>"$LOG/$name.out" 2>"$LOG/$name.err" || die "$name: gc failed: $(cat "$LOG/$name.err")"
	read -r wall rss <"$LOG/$name.time"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["wall_s"] = float(sys.argv[2]); d["rss_kib"] = int(sys.argv[3])
json.dump(d, open(sys.argv[4], "w"))' "$LOG/$name.out" "$wall" "$rss" "$LOG/$name.json"
	say "$name: $(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("mark %.2fs sweep %.2fs rss %d MiB" % (d["mark_ns"] / 1e9, d["sweep_ns"] / 1e9, d["rss_kib"] // 1024))' "$LOG/$name.json")"
}
rm -f "$LOG"/*.json
run warmup "$STORE" warm
for o in none digest inode; do
	run "warm-$o" "$STORE" warm --order $o
	run "warm-$o-1M" "$STORE" warm --order $o --batch 1M
done
for o in none digest inode; do
	run "cold-$o" "$STORE" cold --order $o
	run "cold-$o-1M" "$STORE" cold --order $o --batch 1M
done
run "rss-small" "$SSTORE" warm
run "rss-small" "$SSTORE" warm
run "rss-small-64k" "$SSTORE" warm --cache-capacity 65536
run "rss-big-64k" "$STORE" warm --cache-capacity 65536
CAIRN_STORE=$STORE /usr/bin/time -f '%e %M' -o "$LOG/dry.time" "$CAIRN" gc -n -j >"$LOG/dry.out" 2>&1 || die "gc -n failed"

# ---- report ----
REPORT=$LOG/report.md
python3 - "$LOG" "$N" "$CANDROP" "$(nproc)" >"$REPORT" <<'EOF'
import json, os, sys
log, n, candrop, ncpu = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
def j(name):
    p = os.path.join(log, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else {"skipped": True}
def rate(d, k):
    return d[k] / (d["mark_ns"] / 1e9) if d.get("mark_ns") else 0
rows = []
for mode in ("warm", "cold"):
    for o in ("none", "digest", "inode"):
        for b in ("", "-1M"):
            d = j("%s-%s%s" % (mode, o, b))
            if d.get("skipped"):
                rows.append("| %s | %s | %s | skipped (no drop_caches) | | | | | |" % (mode, o, b and "1M" or "64K"))
                continue
            rows.append("| %s | %s | %s | %.2f | %.2f M | %.0f K | %.2f | %.2f M | %d |" % (
                mode, o, "1M" if b else "64K (default)", d["mark_ns"] / 1e9,
                rate(d, "referenced_chunks") / 1e6, rate(d, "touched") / 1e3,
                d["sweep_ns"] / 1e9, (d["disk_chunks"] / (d["sweep_ns"] / 1e9)) / 1e6,
                d["rss_kib"] // 1024))
W = {o: j("warm-" + o) for o in ("none", "digest", "inode")}
W1 = {o: j("warm-%s-1M" % o) for o in ("none", "digest", "inode")}
C = {o: j("cold-" + o) for o in ("none", "digest", "inode")}
C1 = {o: j("cold-%s-1M" % o) for o in ("none", "digest", "inode")}
d0 = W["inode"]
print("Store: %d chunk files + %d index/tree chunks, %d snapshots, %d references (%.0f per distinct chunk); LRU 1,048,576, threads %s." % (
    n, d0["disk_chunks"] - n, d0["snapshots"], d0["referenced_chunks"],
    d0["referenced_chunks"] / d0["disk_chunks"], ncpu))
print()
print("| cache | order | batch | mark s | referenced chunks/s | touches/s | sweep s | swept chunks/s | peak RSS MiB |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(r)
print()
verdict = lambda ok: "PASS" if ok else "MISS"
t = []
best = max(W.values(), key=lambda d: rate(d, "referenced_chunks"))
r_def = rate(W["inode"], "referenced_chunks")
t.append(("warm mark >= 1,000,000 referenced chunks/s (default `cairn gc`: inode, batch 64K)",
          "%.2f M/s (%.0f K distinct touches/s)" % (r_def / 1e6, rate(W["inode"], "touched") / 1e3), r_def >= 1e6))
r1 = rate(W1["inode"], "referenced_chunks")
t.append(("  same, --batch 1M", "%.2f M/s (%.0f K distinct touches/s)" % (r1 / 1e6, rate(W1["inode"], "touched") / 1e3), r1 >= 1e6))
if candrop:
    for lab, a, b in (("default batch", C["none"], C["inode"]), ("--batch 1M", C1["none"], C1["inode"])):
        ratio = a["mark_ns"] / b["mark_ns"]
        t.append(("cold mark, inode >= 5x faster than none (%s)" % lab,
                  "%.2fx (none %.1f s, inode %.1f s)" % (ratio, a["mark_ns"] / 1e9, b["mark_ns"] / 1e9), ratio >= 5))
else:
    t.append(("cold mark, inode >= 5x faster than none", "not measured: cannot drop caches (needs root)", False))
sw = max(d["sweep_ns"] for d in (W["none"], W["digest"], W["inode"])) / 1e9
t.append(("warm sweep of %d chunks < 10 s" % d0["disk_chunks"], "%.2f s (slowest of the three warm runs)" % sw, sw < 10))
small = j("rss-small")
s64, b64 = j("rss-small-64k"), j("rss-big-64k")
def bound(cap, batch):
    # LRU + three pending lists + edge cache + directory buffers, plus 48 MiB
    # for the process, SQLite and the index chunk being read.
    return (cap * 64 + 3 * batch * 48 + cap // 16 * 116 + 16 * 65536) / 2**20 + 48
mib = lambda d: d["rss_kib"] / 1024
ok = (mib(W["inode"]) <= bound(1048576, 65536) and mib(W1["inode"]) <= bound(1048576, 1048576)
      and mib(b64) <= bound(65536, 65536) and abs(mib(b64) - mib(s64)) <= max(8, 0.25 * mib(s64)))
t.append(("peak memory bounded by cache and batch settings, not store size",
          "defaults: %.0f MiB (bound %.0f); --batch 1M: %.0f MiB (bound %.0f); --cache-capacity 65536: %.0f MiB on %d chunks, %.0f MiB on %d (bound %.0f); defaults on the small store: %.0f MiB" % (
              mib(W["inode"]), bound(1048576, 65536), mib(W1["inode"]), bound(1048576, 1048576),
              mib(b64), b64["disk_chunks"], mib(s64), s64["disk_chunks"], bound(65536, 65536), mib(small)), ok))
print("| target | measured | verdict |")
print("|---|---|---|")
for name, meas, ok in t:
    print("| %s | %s | %s |" % (name, meas, verdict(ok)))
# Misses again, one per line, outside the table.
for name, meas, ok in t:
    if not ok:
        print("MISS: %s: measured %s" % (name.strip(), meas))
EOF
dry=$(cat "$LOG/dry.time")
cat "$REPORT"
echo "dry run (gc -n, exact reachability in bounded passes): ${dry% *} s, peak RSS $((${dry#* } / 1024)) MiB"

if [ -z "${CAIRN_BENCH_NOAPPEND:-}" ]; then
	{
		echo
		echo "## Garbage collection (bench/gc.sh)"
		echo
		echo "Command: \`bench/gc.sh\` (CAIRN_BENCH_DIR=$BASE). Date: $(date -u '+%Y-%m-%d %H:%M UTC')."
		echo "Machine: $(nproc) vCPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) RAM, $(findmnt -n -o FSTYPE -T "$BASE" 2>/dev/null || stat -f -c %T "$BASE") ($(uname -r)); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
		[ $CANDROP = 1 ] || echo "Cold runs skipped: /proc/sys/vm/drop_caches is not writable here."
		echo
		cat "$REPORT"
		echo
		echo "Dry run (\`gc -n\`: exact reachability, range passes of at most cache + batch digests): ${dry% *} s, peak RSS $((${dry#* } / 1024)) MiB."
	} >>"$ROOT/BENCHMARKS.md"
	say "appended to BENCHMARKS.md"
fi
