#!/bin/bash
# bench/list.sh - `cairn list -t snapshot` throughput, after the method of
# openzfs#18850 (../shared/reference/openzfs-pr-18850-batched-snapshot-listing.txt).
# Results go to BENCHMARKS.md ("Listing (bench/list.sh)").
#
#   setup   a parent dataset bench with 8 children bench/fs00000..fs00007 over
#           a small source; 2000 x `cairn snapshot -r bench@N` (timed)
#   8x2000  printf 'bench/fs%05d\n' {0..7} | xargs -r -n1 -P$P cairn list -H -p
#           -t snapshot -d 1 -o COLUMNS  >/dev/null,  P = 1, 2, 4, 8;
#           1 warm-up and 5 measured trials; throughput = 16000 / wall time
#           COLUMNS A = createtxg,guid,name,creation,userrefs,type
#                   B = name,written,used
#           each with the default batch settings, with CAIRN_LIST_BATCH_SIZE=1,
#           and through the one-row reference path (CAIRN_LIST_REFERENCE=1,
#           the "nobatch" of the PR's tables)
#   1M      a dataset with 1,000,000 snapshots (rows copied in SQL, one
#           transaction); `cairn list -H -p -t snapshot -d 1 -o A million`:
#           1 warm-up, 3 measured; wall time and peak RSS (/usr/bin/time -v)
#
# Every configuration is first run once with its output counted: a listing
# that does not print the expected number of rows is reported INVALID
# instead of being timed.
#
# Environment:
#   CAIRN_BENCH_DIR      work directory (default /var/tmp/cairn-bench-list); the
#                        store is rebuilt unless CAIRN_BENCH_REUSE=1 and complete
#   CAIRN_BENCH_BIN      cairn binary (default: build/cairn, built with make)
#   CAIRN_BENCH_SNAPS    snapshots per dataset (default 2000)
#   CAIRN_BENCH_MILLION  rows of the big dataset (default 1000000; 0 skips it)
#   CAIRN_BENCH_TRIALS   measured trials (default 5)
#   CAIRN_BENCH_KEEP=1   keep the store afterwards
set -euo pipefail
export LC_ALL=C TZ=UTC

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench-list}
NSNAP=${CAIRN_BENCH_SNAPS:-2000}
MILLION=${CAIRN_BENCH_MILLION:-1000000}
TRIALS=${CAIRN_BENCH_TRIALS:-5}
NDS=8
STORE=$BASE/store
SRC=$BASE/src
LOG=$BASE/log
STAMP=$BASE/store.complete
COLS_A=createtxg,guid,name,creation,userrefs,type
COLS_B=name,written,used

# Targets (issue)
T_SETUP_S=60
T_P1_RATE=1000000
T_MILLION_S=1.5
T_MILLION_MIB=64

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
# verdict EXPR: PASS or MISS; a miss is also kept, with its figures, for the
# plain list of misses printed last.
MISSES=$(mktemp)
verdict() { if awk "BEGIN {exit !($1)}"; then echo PASS; else echo MISS; echo "MISS: $1" >>"$MISSES"; fi; }
now_ns() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b - a) / 1e9}'; }

command -v sqlite3 >/dev/null || { say "installing sqlite3"; apt-get install -y sqlite3 >/dev/null; }
[ -x /usr/bin/time ] || { say "installing time"; apt-get install -y time >/dev/null; }

if [ -n "${CAIRN_BENCH_BIN:-}" ]; then
	CAIRN=$CAIRN_BENCH_BIN
else
	CAIRN=$ROOT/build/cairn
	say "building $CAIRN"
	make -s -C "$ROOT" build/cairn >&2 || die "make build/cairn failed"
fi
[ -x "$CAIRN" ] || die "$CAIRN: not executable"
export CAIRN_STORE=$STORE
mkdir -p "$BASE" "$LOG"

cleanup() { [ -n "${CAIRN_BENCH_KEEP:-}" ] || rm -rf "$STORE" "$STAMP"; }
trap cleanup EXIT

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- setup ----
SETUP_S=-
SETUP_LAT=
INIT_S=-
MBUILD_S=-
if [ "${CAIRN_BENCH_REUSE:-}" = 1 ] && [ -e "$STAMP" ]; then
	say "reusing $STORE"
	SETUP_S=$(sed -n 1p "$STAMP")
	MBUILD_S=$(sed -n 2p "$STAMP")
else
	rm -rf "$STORE" "$SRC" "$STAMP"
	for i in $(seq 0 $((NDS - 1))); do
		d=$(printf 'fs%05d' "$i")
		mkdir -p "$SRC/$d"
		echo "dataset $d" >"$SRC/$d/file"
	done
	echo top >"$SRC/top"
	t0=$(now_ns)
	"$CAIRN" init >/dev/null
	t1=$(now_ns)
	INIT_S=$(secs "$t0" "$t1")
	say "init: $INIT_S s"
	"$CAIRN" create -o source="$SRC" bench
	for i in $(seq 0 $((NDS - 1))); do "$CAIRN" create "$(printf 'bench/fs%05d' "$i")"; done
	say "setup: $NSNAP x cairn snapshot -r bench@N over $((NDS + 1)) datasets"
	t0=$(now_ns)
	: >"$LOG/setup.ms"
	for i in $(seq 1 "$NSNAP"); do
		s0=$EPOCHREALTIME
		"$CAIRN" snapshot -r "bench@s$i" || die "snapshot -r bench@s$i failed"
		echo "$s0 $EPOCHREALTIME" >>"$LOG/setup.ms"
	done
	t1=$(now_ns)
	SETUP_S=$(secs "$t0" "$t1")
	# per-command latency: the total is dominated by commit fsyncs, whose
	# latency depends on what else the machine's disk is doing
	SETUP_LAT=$(awk '{print ($2 - $1) * 1000}' "$LOG/setup.ms" | sort -n |
		awk '{v[NR] = $1} END {printf "per command: median %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms",
			v[int(NR * 0.5) + 1], v[int(NR * 0.9) + 1], v[int(NR * 0.99) + 1], v[NR]}')
	say "setup: $SETUP_S s; $SETUP_LAT"
	if [ "$MILLION" -gt 0 ]; then
		"$CAIRN" create -o source="$SRC/fs00000" million
		"$CAIRN" snapshot million@seed
		say "building million: $((MILLION - 1)) snapshot rows in one transaction"
		t0=$(now_ns)
		sqlite3 -cmd ".timeout 60000" "$STORE/catalog.db" "
		BEGIN IMMEDIATE;
		WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $MILLION - 1)
		INSERT INTO snapshot(dataset, name, guid, createtxg, creation, referenced,
			logicalreferenced, written, used, userrefs, defer_destroy)
		 SELECT s.dataset, printf('m%07d', i), (abs(random()) % 9000000000000000000) + 1,
			(SELECT value FROM meta WHERE key = 'txg') + i, s.creation + i / 100,
			s.referenced, s.logicalreferenced, 0, 0, 0, 0
		 FROM c, snapshot s JOIN dataset d ON s.dataset = d.id
		 WHERE d.name = 'million' AND s.name = 'seed';
		UPDATE meta SET value = value + $MILLION WHERE key = 'txg';
		COMMIT;" || die "building million failed"
		t1=$(now_ns)
		MBUILD_S=$(secs "$t0" "$t1")
		say "million: built in $MBUILD_S s; catalog $(du -m "$STORE/catalog.db" | cut -f1) MiB"
	fi
	printf '%s\n%s\n' "$SETUP_S" "$MBUILD_S" >"$STAMP"
fi
TOTAL=$((NDS * NSNAP))

# ---- 8 x NSNAP through xargs -P ----
names() { for i in $(seq 0 $((NDS - 1))); do printf 'bench/fs%05d\n' "$i"; done; }
# listing P COLS [VAR=VALUE...]: one run of all datasets, output to stdout
listing() {
	local p=$1 cols=$2
	shift 2
	names | env "$@" xargs -r -n1 -P"$p" "$CAIRN" list -H -p -t snapshot -d 1 -o "$cols"
}

declare -A MED MIN MAX
RESULTS=$LOG/results.txt
: >"$RESULTS"
# measure LABEL P COLS [VAR=VALUE...]
measure() {
	local label=$1 p=$2 cols=$3
	shift 3
	local n
	n=$(listing "$p" "$cols" "$@" | wc -l)
	if [ "$n" != "$TOTAL" ]; then
		say "$label P=$p $cols: INVALID ($n rows listed, expected $TOTAL)"
		printf '%s\t%s\t%s\tINVALID\t%s rows\t-\n' "$cols" "$label" "$p" "$n" >>"$RESULTS"
		MED[$label/$p/$cols]=0
		return
	fi
	local rates=() t0 t1 k
	for k in $(seq 0 "$TRIALS"); do
		t0=$(now_ns)
		listing "$p" "$cols" "$@" >/dev/null
		t1=$(now_ns)
		[ "$k" = 0 ] && continue # warm-up
		rates+=("$(awk -v n="$TOTAL" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", n / ((b - a) / 1e9)}')")
	done
	local stats
	stats=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{v[NR] = $1; s += $1; ss += $1 * $1}
		END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
		     sd = sqrt(ss / NR - (s / NR) ^ 2); printf "%.0f %.0f %.0f %.0f", m, v[1], v[NR], sd}')
	read -r med min max sd <<<"$stats"
	MED[$label/$p/$cols]=$med
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$cols" "$label" "$p" "$med" "$min" "$max" "$sd" >>"$RESULTS"
	say "$label P=$p $cols: median $med snapshots/s (min $min, max $max)"
}

say "listing $NDS x $NSNAP snapshots: $TRIALS trials after 1 warm-up"
for cols in "$COLS_A" "$COLS_B"; do
	for p in 1 2 4 8; do
		measure batch "$p" "$cols"
		measure batch_size=1 "$p" "$cols" CAIRN_LIST_BATCH_SIZE=1
		measure reference "$p" "$cols" CAIRN_LIST_REFERENCE=1
	done
done

# ---- 1M ----
M_MED=- M_MAX_RSS=- M_ROWS=- M_CPU=-
if [ "$MILLION" -gt 0 ]; then
	say "listing million ($MILLION snapshots): 1 warm-up, 3 measured"
	M_ROWS=$("$CAIRN" list -H -p -t snapshot -d 1 -o "$COLS_A" million | wc -l)
	[ "$M_ROWS" = "$MILLION" ] || say "million: INVALID: $M_ROWS rows listed, expected $MILLION"
	ms=() rss=() cpu=()
	for k in 1 2 3; do
		t0=$(now_ns)
		/usr/bin/time -v -o "$LOG/million.time" "$CAIRN" list -H -p -t snapshot -d 1 \
			-o "$COLS_A" million >/dev/null
		t1=$(now_ns)
		ms+=("$(secs "$t0" "$t1")")
		rss+=("$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$LOG/million.time")")
		cpu+=("$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.2f", u + s}' "$LOG/million.time")")
		say "million trial $k: ${ms[-1]} s, peak RSS ${rss[-1]} MiB," \
			"user $(awk -F': ' '/User time/ {print $2}' "$LOG/million.time") s," \
			"sys $(awk -F': ' '/System time/ {print $2}' "$LOG/million.time") s"
	done
	# RSS counts the pages of catalog.db that SQLite maps (mmap_size): split
	# the peak into anonymous (heap) and file-backed memory by sampling
	# /proc/PID/status while the listing runs.
	"$CAIRN" list -H -p -t snapshot -d 1 -o "$COLS_A" million >/dev/null &
	mpid=$!
	M_ANON=0 M_FILE=0
	while kill -0 "$mpid" 2>/dev/null; do
		read -r a f < <(awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} END {print a + 0, f + 0}' \
			"/proc/$mpid/status" 2>/dev/null || echo "0 0")
		[ "${a:-0}" -gt "$M_ANON" ] && M_ANON=$a
		[ "${f:-0}" -gt "$M_FILE" ] && M_FILE=$f
		sleep 0.005
	done
	wait "$mpid" || { echo "list.sh: the listing of a million snapshots failed" >&2; exit 1; }
	M_ANON=$(awk -v k="$M_ANON" 'BEGIN {printf "%.1f", k / 1024}')
	M_FILE=$(awk -v k="$M_FILE" 'BEGIN {printf "%.1f", k / 1024}')
	say "million: sampled peak RssAnon $M_ANON MiB, RssFile $M_FILE MiB"
	M_MED=$(printf '%s\n' "${ms[@]}" | sort -n | sed -n 2p)
	M_CPU=$(printf '%s\n' "${cpu[@]}" | sort -n | sed -n 2p)
	M_MAX_RSS=$(printf '%s\n' "${rss[@]}" | sort -n | tail -n 1)
	M_B1=$( { /usr/bin/time -f '%e %M' env CAIRN_LIST_BATCH_SIZE=1 "$CAIRN" list -H -p -t snapshot \
		-d 1 -o "$COLS_A" million >/dev/null; } 2>&1 | tail -n 1)
fi

# ---- report ----
echo
echo "cairn list benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/^Mem:/ {print $2}') GiB RAM; load average at the start: $LOAD0, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "store:   $STORE ($(findmnt -n -o FSTYPE -T "$BASE" 2>/dev/null || stat -f -c %T "$BASE")), SQLite $(sqlite3 --version | cut -d' ' -f1)"
echo "setup:   $NSNAP x snapshot -r over $((NDS + 1)) datasets: $SETUP_S s (target < $T_SETUP_S s: $(verdict "${SETUP_S/-/999999} < $T_SETUP_S")); init $INIT_S s"
[ -n "$SETUP_LAT" ] && echo "         $SETUP_LAT; I/O pressure (some avg60) at the end: $(awk '/^some/ {print $3}' /proc/pressure/io 2>/dev/null)"
echo
echo "Throughput, snapshots/s over the whole $NDS-process run (median, min, max, stddev of $TRIALS trials)"
echo
printf '| %-42s | %-12s | %s | %9s | %9s | %9s | %8s | %17s |\n' columns kind P median min max stddev "vs batch_size=1"
printf '|%s|%s|---|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..44})" "$(printf -- '-%.0s' {1..14})" \
	"$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..11})" \
	"$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..19})"
while IFS=$'\t' read -r cols kind p med min max sd; do
	b1=${MED[batch_size=1/$p/$cols]:-0}
	ratio=-
	[ "$med" != INVALID ] && [ "$b1" != 0 ] && ratio=$(awk -v a="$med" -v b="$b1" 'BEGIN {printf "%.2fx", a / b}')
	printf '| %-42s | %-12s | %s | %9s | %9s | %9s | %8s | %17s |\n' "$cols" "$kind" "$p" "$med" "$min" "$max" "$sd" "$ratio"
done <"$RESULTS"
echo
A1=${MED[batch/1/$COLS_A]:-0}
echo "target: >= $T_P1_RATE snapshots/s at P=1, columns $COLS_A: $A1 -> $(verdict "$A1 >= $T_P1_RATE")"
if [ "$MILLION" -gt 0 ]; then
	echo "1M:     $MILLION snapshots (built in $MBUILD_S s), $M_ROWS rows listed: median $M_MED s," \
		"(user+sys CPU $M_CPU s), peak RSS $M_MAX_RSS MiB" \
		"-> time < $T_MILLION_S s $(verdict "$M_MED < $T_MILLION_S"), RSS < $T_MILLION_MIB MiB $(verdict "$M_MAX_RSS < $T_MILLION_MIB")" \
		"$([ "$M_ROWS" = "$MILLION" ] || echo '(INVALID row count)')"
	echo "        peak RSS split (sampled): anonymous $M_ANON MiB, file-backed (mapped catalog, libraries) $M_FILE MiB"
	echo "        with CAIRN_LIST_BATCH_SIZE=1: $(echo "$M_B1" | awk '{printf "%s s, peak RSS %.1f MiB", $1, $2 / 1024}')"
fi
if [ -s "$MISSES" ]; then
	echo "targets missed (measured vs target):"
	cat "$MISSES"
fi
rm -f "$MISSES"
# A listing that returned the wrong number of rows is a failed step.
if [ "$MILLION" -gt 0 ] && [ "$M_ROWS" != "$MILLION" ]; then
	echo "list.sh: listed $M_ROWS rows of $MILLION snapshots" >&2
	exit 1
fi
