#!/bin/bash
# bench/send.sh - replication benchmarks.  Results go to BENCHMARKS.md
# ("Replication (bench/send.sh)").
#
#  (a) the illumos report's case: 11 datasets x 8 snapshots, nearly no
#      changes (site6 holds 25 MB, the others a few bytes).  `send -R
#      test@7 >/dev/null` (median of 7 runs), `send -n -R` (no holds, no
#      data); the hold/release part as `cairn hold -r` + `release -r` of the
#      same 88 snapshots (one transaction each, as send takes them), and
#      the unbatched reference (88 single holds + 88 single releases: the
#      2N sync tasks of the report).  Syncs counted with strace -f:
#      "commit syncs" are WAL syncs after written frames, one per write
#      transaction.  Targets: send -R < 0.2 s, at most 2 hold-related syncs.
#  (b) full and incremental send | recv through a pipe between two stores
#      on a ~2 GB corpus of system files (the corpus of bench/backup.sh,
#      copied once into the work dir so it can be changed here), and the
#      incremental after 1% of the files changed (a line appended to every
#      100th).  Targets: full >= 300 MB/s of corpus bytes, incremental < 1 s.
#      In the same run: the limit probe (bench/limit.sh: SHA-256 + zstd of
#      the corpus in memory on all cores) and the peer, restic 0.14's
#      `restic copy` between two repositories (full, then the incremental
#      after the same change); each figure is printed with its ratio to
#      both.  borg 1.2 has no repository-to-repository transfer (borg 2's
#      `transfer` is not in Debian 12), so it has no figure here.
#      CAIRN_BENCH_PEERS=0 skips restic.
#  (c) when the destination already holds most chunks through another
#      dataset: send | recv moves every chunk again; `cairn sync` (if the
#      verb exists) moves only the missing ones.  Bytes moved and time.
#  (d) convergence after a cut: a ~1 GB `send -R` stream (4 datasets of
#      random data, 2 recursive snapshots) cut at 50% into `recv -s`, then
#      finished (1) by `send -t TOKEN | recv -s`, (2) by `cairn sync -R`
#      (which resumes by token itself), against (3) a full re-send.  Time
#      and bytes moved; target: the resume moves < 55% of the full stream.
#
# Environment:
#   CAIRN_BENCH_DIR     base directory (default /var/tmp/cairn-bench)
#   CAIRN_BENCH_CORPUS  corpus to copy (default $CAIRN_BENCH_DIR/corpus; built
#                       as bench/backup.sh does if absent)
#   CAIRN_SEND_WORK     work directory (default $CAIRN_BENCH_DIR/send-work); its
#                       stores are wiped at start, its corpus copy is kept
#   CAIRN_BENCH_BIN     cairn binary to use; by default the tree is built with
#                       make into $CAIRN_BENCH_DIR/send-build (out of tree)
#   SKIP_B=1            only (a), (c) and (d), (c) on a small corpus
#   CAIRN_BENCH_D_MB    size of the (d) stream in MB (default 1000)
# Every step that fails stops the script with a non-zero exit.
# MB = 10^6 bytes.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench}
CORPUS=${CAIRN_BENCH_CORPUS:-$BASE/corpus}
WORK=${CAIRN_SEND_WORK:-$BASE/send-work}
SRC=$WORK/src
CHANGED=$WORK/changed.list

T_SEND_S=0.2
T_HOLD_SYNCS=2
T_FULL_MBS=300
T_INCR_S=1

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
now_ns() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b - a) / 1e9}'; }
mbs() { awk -v n="$1" -v s="$2" 'BEGIN {printf "%.1f", (s > 0) ? (n / s / 1e6) : 0}'; }
verdict() { if awk "BEGIN {exit !($1)}"; then echo PASS; else echo MISS; fi; }
median() { sort -n | awk '{v[NR] = $1} END {printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
command -v strace >/dev/null || die "strace missing (scripts/deps.sh installs it)"

# ---- build ----
if [ -n "${CAIRN_BENCH_BIN:-}" ]; then
	CAIRN=$CAIRN_BENCH_BIN
else
	CAIRN=$BASE/send-build/cairn
	say "building $CAIRN"
	mkdir -p "$BASE"
	make -s -C "$ROOT" B="$BASE/send-build" "$BASE/send-build/cairn" >&2 || die "make failed"
fi
[ -x "$CAIRN" ] || die "$CAIRN: not executable"
A=$WORK/a B=$WORK/b
ca() { "$CAIRN" -s "$A" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
HAVE_SYNC=
case "$("$CAIRN" --help 2>&1)" in *"
  sync "*) HAVE_SYNC=1 ;; esac

mkdir -p "$WORK"
restore_src() {
	if [ -s "$CHANGED" ]; then
		while IFS=$'\t' read -r size path; do truncate -s "$size" "$path"; done <"$CHANGED"
		rm -f "$CHANGED"
	fi
}
trap 'restore_src; rm -rf "$A" "$B" "$WORK/small" "$WORK/d" "$WORK/restic-a" "$WORK/restic-b" "$WORK/restic-cache"' EXIT
restore_src # an interrupted earlier run
rm -rf "$A" "$B" "$WORK/small"

# commit_syncs ARGS...: "TOTAL COMMITS" syncs of `cairn ARGS` (see t0830)
commit_syncs() {
	strace -f -y -o "$WORK/trace" \
		-e trace=fsync,fdatasync,syncfs,sync,sync_file_range,msync,pwrite64,write \
		"$CAIRN" "$@" >/dev/null 2>&1 || die "cairn $* failed under strace"
	awk '/pwrite64\([0-9]+<[^>]*-wal>/ && !/, 32, 0\) *=/ { dirty = 1 }
		/ (fsync|fdatasync|syncfs|sync_file_range|msync)\(/ || / sync\(\)/ {
			total++; if ($0 ~ /-wal>/) { if (dirty) commits++; dirty = 0 } }
		END { print total + 0, commits + 0 }' "$WORK/trace"
	rm -f "$WORK/trace"
}
# timed N CMD...: median wall seconds of N runs of CMD (stdout discarded)
timed() {
	local n=$1 i t0 t1
	shift
	for ((i = 0; i < n; i++)); do
		t0=$(now_ns)
		"$@" >/dev/null
		t1=$(now_ns)
		secs "$t0" "$t1"
		echo
	done | median
}

# ================= (a) 11 x 8, nearly no changes =================
say "(a) 11 datasets x 8 snapshots"
"$CAIRN" -s "$A" init >/dev/null
S=$WORK/small
mkdir -p "$S/top"
echo top >"$S/top/f"
ca create -o source="$S/top" test
for i in $(seq 1 10); do # separate sources: the parent does not include them
	mkdir -p "$S/site$i"
	echo "$i" >"$S/site$i/f"
	ca create -o source="$S/site$i" "test/site$i"
done
head -c 25000000 /dev/urandom >"$S/site6/data" # site6 holds ~25 MB, as in the report
for s in initial 1 2 3 4 5 6 7; do
	echo "$s" >>"$S/site1/f"
	ca snapshot -r "test@$s" >/dev/null
done
SNAPS=$(ca list -H -t snapshot -r -o name test)
NSNAPS=$(echo "$SNAPS" | wc -l)
STREAM_A=$(ca send -R test@7 | wc -c)
export CAIRN_STORE=$A
A_SEND=$(timed 7 "$CAIRN" send -R test@7)
A_DRY=$(timed 7 "$CAIRN" send -n -R test@7)
A_INC=$(timed 7 "$CAIRN" send -R -i @6 test@7)
ALL8="test@initial test@1 test@2 test@3 test@4 test@5 test@6 test@7"
: >"$WORK/hold.times"
: >"$WORK/rel.times"
for i in 1 2 3 4 5 6 7; do
	t0=$(now_ns)
	"$CAIRN" hold -r bench $ALL8
	t1=$(now_ns)
	"$CAIRN" release -r bench $ALL8
	t2=$(now_ns)
	secs "$t0" "$t1" >>"$WORK/hold.times"
	echo >>"$WORK/hold.times"
	secs "$t1" "$t2" >>"$WORK/rel.times"
	echo >>"$WORK/rel.times"
done
A_HOLD=$(median <"$WORK/hold.times")
A_REL=$(median <"$WORK/rel.times")
t0=$(now_ns)
for s in $SNAPS; do "$CAIRN" hold one "$s"; done
for s in $SNAPS; do "$CAIRN" release one "$s"; done
t1=$(now_ns)
A_UNBATCHED=$(secs "$t0" "$t1")
unset CAIRN_STORE
read -r SY_TOTAL SY_COMMITS <<<"$(commit_syncs -s "$A" send -R test@7)"
read -r SYI_TOTAL SYI_COMMITS <<<"$(commit_syncs -s "$A" send -R -i @6 test@7)"
read -r SYD_TOTAL SYD_COMMITS <<<"$(commit_syncs -s "$A" send -n -R test@7)"
A_HOLDPART=$(awk -v a="$A_HOLD" -v b="$A_REL" 'BEGIN {printf "%.3f", a + b}')
say "send -R: $A_SEND s, send -n -R: $A_DRY s, syncs $SY_TOTAL ($SY_COMMITS commits)"

# ================= (b) throughput on ~2 GB =================
B_DONE=
if [ -z "${SKIP_B:-}" ]; then
	say "(b) corpus"
	if [ ! -e "$SRC.complete" ]; then
		if [ ! -d "$CORPUS" ]; then
			say "building corpus $CORPUS (as bench/backup.sh does)"
			mkdir -p "$CORPUS"
			for d in /usr/share /usr/include /usr/lib/x86_64-linux-gnu; do
				cp -a "$d" "$CORPUS/$(basename "$d")" || die "copying $d into the corpus"
			done
			touch "$CORPUS.complete"
		fi
		say "copying $CORPUS to $SRC (once; kept for later runs)"
		rm -rf "$SRC"
		cp -a "$CORPUS" "$SRC" || die "copying the corpus"
		touch "$SRC.complete"
	fi
	BYTES=$(find "$SRC" -type f -printf '%i %s\n' | sort -u -k1,1n | awk '{s+=$2} END {printf "%.0f", s}')
	NFILES=$(find "$SRC" -type f | wc -l)
	say "corpus copy: $BYTES bytes in $NFILES files"
	ca create -o source="$SRC" ds
	say "snapshot ds@1 (not timed)"
	ca snapshot ds@1 >/dev/null
	"$CAIRN" -s "$B" init >/dev/null
	find "$SRC" -type f -print0 | xargs -0 cat >/dev/null # warm (restore reads none, but fair)
	sync
	STREAM_FULL=$(ca send ds@1 | wc -c)
	T_SENDONLY=$(timed 1 "$CAIRN" -s "$A" send ds@1)
	sync
	t0=$(now_ns)
	ca send ds@1 | cb recv ds
	t1=$(now_ns)
	T_FULL=$(secs "$t0" "$t1")
	sync
	[ "$(ca list -H -p -o guid ds@1)" = "$(cb list -H -p -o guid ds@1)" ] || die "full: guid differs"
	M_FULL=$(mbs "$BYTES" "$T_FULL")
	M_FULL_STREAM=$(mbs "$STREAM_FULL" "$T_FULL")
	say "full send|recv: $T_FULL s, $M_FULL MB/s of corpus, $M_FULL_STREAM MB/s of stream"
	. "$ROOT/bench/limit.sh"
	limit_probe "$SRC" "$BASE/send-build" || die "limit probe failed"
	T_RCOPY=- T_RCOPY_INC=-
	if [ "${CAIRN_BENCH_PEERS:-1}" != 0 ]; then
		command -v restic >/dev/null || die "restic missing (scripts/deps.sh; CAIRN_BENCH_PEERS=0 skips it)"
		export RESTIC_PASSWORD=bench RESTIC_CACHE_DIR=$WORK/restic-cache
		rm -rf "$WORK/restic-a" "$WORK/restic-b"
		restic -q -r "$WORK/restic-a" init >/dev/null
		RESTIC_FROM_PASSWORD=bench restic -q -r "$WORK/restic-b" init \
			--from-repo "$WORK/restic-a" --copy-chunker-params >/dev/null
		say "restic backup of the corpus copy (not timed)"
		restic -q -r "$WORK/restic-a" backup "$SRC" >/dev/null || [ $? -eq 3 ]
		sync
		t0=$(now_ns)
		RESTIC_FROM_PASSWORD=bench restic -q -r "$WORK/restic-b" copy --from-repo "$WORK/restic-a" >/dev/null
		t1=$(now_ns)
		T_RCOPY=$(secs "$t0" "$t1")
		say "restic copy (full): $T_RCOPY s"
	fi

	find "$SRC" -type f -printf '%s\t%p\n' | sort -t $'\t' -k2,2 | awk -F'\t' 'NR % 100 == 0' >"$CHANGED"
	NCHANGED=$(wc -l <"$CHANGED")
	while IFS=$'\t' read -r size path; do echo "cairn send bench change" >>"$path"; done <"$CHANGED"
	ca snapshot ds@2 >/dev/null
	STREAM_INC=$(ca send -i @1 ds@2 | wc -c)
	sync
	t0=$(now_ns)
	ca send -i @1 ds@2 | cb recv ds
	t1=$(now_ns)
	T_INC=$(secs "$t0" "$t1")
	[ "$(ca list -H -p -o guid ds@2)" = "$(cb list -H -p -o guid ds@2)" ] || die "incremental: guid differs"
	say "incremental ($NCHANGED files changed): $T_INC s, $STREAM_INC stream bytes"
	if [ "$T_RCOPY" != - ]; then
		restic -q -r "$WORK/restic-a" backup "$SRC" >/dev/null || [ $? -eq 3 ]
		sync
		t0=$(now_ns)
		RESTIC_FROM_PASSWORD=bench restic -q -r "$WORK/restic-b" copy --from-repo "$WORK/restic-a" >/dev/null
		t1=$(now_ns)
		T_RCOPY_INC=$(secs "$t0" "$t1")
		say "restic copy (incremental): $T_RCOPY_INC s"
	fi
	B_DONE=1
fi

# ================= (c) destination already has most chunks =================
say "(c) destination holds the data through another dataset"
if [ -n "$B_DONE" ]; then
	CSRC=$SRC
else
	CSRC=$S
	"$CAIRN" -s "$B" init >/dev/null
	ca create -o source="$S" ds
	ca snapshot ds@1 >/dev/null
	ca send ds@1 | cb recv ds
fi
# ds2 in A: the same files under another dataset (its chunks dedup in A,
# and B has them all through "ds")
ca create -o source="$CSRC" ds2
ca snapshot ds2@1 >/dev/null
C_STREAM=$(ca send ds2@1 | wc -c)
sync
t0=$(now_ns)
ca send ds2@1 | cb recv -v viarecv 2>"$WORK/c.recv"
t1=$(now_ns)
C_RECV_S=$(secs "$t0" "$t1")
C_RECV_NEW=$(sed -n 's/.*snapshots, \([0-9]*\) new chunks.*/\1/p' "$WORK/c.recv")
if [ -n "$HAVE_SYNC" ]; then
	sync
	t0=$(now_ns)
	ca sync -v ds2 "$B:viasync" >"$WORK/c.sync" 2>&1 || { cat "$WORK/c.sync" >&2; die "sync failed"; }
	t1=$(now_ns)
	C_SYNC_S=$(secs "$t0" "$t1")
	C_SYNC_LINE=$(grep -m1 'synced' "$WORK/c.sync" || tail -n 1 "$WORK/c.sync")
	[ "$(ca list -H -p -o guid ds2@1)" = "$(cb list -H -p -o guid viasync@1)" ] || die "sync: guid differs"
fi

# ================= (d) convergence after a cut at 50% =================
say "(d) a ~${CAIRN_BENCH_D_MB:-1000} MB -R stream cut at 50%"
D=$WORK/d
rm -rf "$D"
mkdir -p "$D/src"
cd_() { "$CAIRN" -s "$D/a" "$@"; }
"$CAIRN" -s "$D/a" init >/dev/null
D_MB=${CAIRN_BENCH_D_MB:-1000}
per=$((D_MB * 1000000 / 8)) # 4 datasets x 2 snapshots, each adding 1/8 of the bytes
cd_ config chunk_size=1M
cd_ create -o source="$D/src/top" top
for c in c1 c2 c3; do cd_ create -o source="$D/src/$c" "top/$c"; done
for k in 1 2; do
	for c in top c1 c2 c3; do
		mkdir -p "$D/src/$c"
		head -c "$per" /dev/urandom >"$D/src/$c/data$k"
	done
	cd_ snapshot -r "top@$k" >/dev/null
done
D_FULL=$(cd_ send -R top@2 | wc -c)
# cut_into STORE: a fresh store that received the first half of the stream
cut_into() {
	"$CAIRN" -s "$1" init >/dev/null
	if cd_ send -R top@2 | head -c $((D_FULL / 2)) | "$CAIRN" -s "$1" recv -s top 2>/dev/null; then
		die "the stream cut at 50% was accepted"
	fi
	"$CAIRN" -s "$1" list -H -p -t snapshot -r -o name top | wc -l
}
# moved CMD...: runs CMD | recv, prints "seconds bytes"
D_WANT=$(cd_ list -H -p -t snapshot -r -o name,guid top)
check_d() {
	[ "$("$CAIRN" -s "$1" list -H -p -t snapshot -r -o name,guid top)" = "$D_WANT" ] || die "(d) $2 did not converge"
}
D_CUT_SNAPS=$(cut_into "$D/b1")
tok=$("$CAIRN" -s "$D/b1" get -H -o value receive_resume_token top)
[ "$tok" != - ] || die "(d) no resume token after the cut"
sync
t0=$(now_ns)
cd_ send -t "$tok" | tee >(wc -c >"$D/moved") | "$CAIRN" -s "$D/b1" recv -s top
t1=$(now_ns)
sleep 0.2
D_RES_S=$(secs "$t0" "$t1")
D_RES_B=$(cat "$D/moved")
check_d "$D/b1" "resume"
rm -rf "$D/b1"
cut_into "$D/b2" >/dev/null
sync
t0=$(now_ns)
"$CAIRN" -s "$D/a" sync -v -R top "$D/b2:top" >"$D/sync.out" 2>&1 || { cat "$D/sync.out" >&2; die "(d) sync failed"; }
t1=$(now_ns)
D_SYNC_S=$(secs "$t0" "$t1")
D_SYNC_LINE=$(tr '\n' ' ' <"$D/sync.out")
check_d "$D/b2" "sync"
rm -rf "$D/b2"
"$CAIRN" -s "$D/b3" init >/dev/null
sync
t0=$(now_ns)
cd_ send -R top@2 | "$CAIRN" -s "$D/b3" recv top
t1=$(now_ns)
D_FULL_S=$(secs "$t0" "$t1")
check_d "$D/b3" "full re-send"
rm -rf "$D"
D_PCT=$(awk -v a="$D_RES_B" -v b="$D_FULL" 'BEGIN {printf "%.1f", 100 * a / b}')
say "(d) resume $D_RES_S s, $D_RES_B bytes ($D_PCT%); sync $D_SYNC_S s; full $D_FULL_S s, $D_FULL bytes"
awk "BEGIN {exit !($D_RES_B < 0.55 * $D_FULL)}" || die "(d) the resume moved $D_PCT% of the full stream (target < 55%)"

# ================= report =================
CPU=$(lscpu | sed -n 's/^Model name: *//p')
FS=$(findmnt -n -o FSTYPE -T "$WORK" 2>/dev/null || stat -f -c %T "$WORK")
echo
echo "cairn replication benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $CPU, $(free -g | awk '/^Mem:/ {print $2}') GiB RAM; work dir $WORK ($FS); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "(a) send -R of 11 datasets x 8 snapshots ($NSNAPS snapshots, stream $STREAM_A bytes; medians of 7)"
echo
printf '| %-52s | %9s | %-22s |\n' "step" "result" "target"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "$(printf -- '-%.0s' {1..11})" "$(printf -- '-%.0s' {1..24})"
printf '| %-52s | %7s s | %-22s |\n' "send -R test@7 >/dev/null" "$A_SEND" "<$T_SEND_S s $(verdict "$A_SEND < $T_SEND_S")"
printf '| %-52s | %7s s | %-22s |\n' "send -R -i @6 test@7 >/dev/null" "$A_INC" "-"
printf '| %-52s | %7s s | %-22s |\n' "send -n -R test@7 (no holds)" "$A_DRY" "-"
printf '| %-52s | %7s s | %-22s |\n' "hold + release part (the two transactions)" "$A_HOLDPART" "-"
printf '| %-52s | %7s s | %-22s |\n' "cairn hold -r of the $NSNAPS snapshots (1 command)" "$A_HOLD" "-"
printf '| %-52s | %7s s | %-22s |\n' "cairn release -r of the $NSNAPS snapshots (1 command)" "$A_REL" "-"
printf '| %-52s | %7s s | %-22s |\n' "unbatched: $NSNAPS hold + $NSNAPS release commands" "$A_UNBATCHED" "-"
printf '| %-52s | %9s | %-22s |\n' "syncs of send -R (total / commit)" "$SY_TOTAL / $SY_COMMITS" "<=$T_HOLD_SYNCS hold-related $(verdict "$SY_COMMITS <= $T_HOLD_SYNCS")"
printf '| %-52s | %9s | %-22s |\n' "syncs of send -R -i (total / commit)" "$SYI_TOTAL / $SYI_COMMITS" "-"
printf '| %-52s | %9s | %-22s |\n' "syncs of send -n -R (total / commit)" "$SYD_TOTAL / $SYD_COMMITS" "-"
echo
echo "commit syncs = one per write transaction (the hold and the release); the rest of the total"
echo "is SQLite WAL housekeeping (restart: WAL header + directory; checkpoint at close)."
if [ -n "$B_DONE" ]; then
	echo
	echo "(b) send | recv through a pipe, store to store; corpus copy $SRC: $BYTES bytes ($(awk -v b="$BYTES" 'BEGIN {printf "%.2f", b / 1e9}') GB), $NFILES files"
	echo
	xr() { [ "$1" = - ] && echo - || awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", (b > 0) ? (a / b) : 0}'; }
	F='| %-40s | %8s | %14s | %11s | %6s | %8s | %-24s |\n'
	echo "limit probe (bench/limit.sh) on the corpus copy: $LIMIT_LINE"
	echo
	printf "$F" step seconds "stream bytes" "MB/s corpus" /limit "x restic" target
	printf '|%s|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..42})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..16})" "$(printf -- '-%.0s' {1..13})" "$(printf -- '-%.0s' {1..8})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..26})"
	printf "$F" "limit: SHA-256+zstd in memory" - - "$LIMIT_MBS" 1.00 - -
	printf "$F" "send ds@1 >/dev/null (alone)" "$T_SENDONLY" "$STREAM_FULL" "$(mbs "$BYTES" "$T_SENDONLY")" "$(awk -v a="$(mbs "$BYTES" "$T_SENDONLY")" -v b="$LIMIT_MBS" 'BEGIN {printf "%.2f", a / b}')" - "-"
	printf "$F" "full: send ds@1 | recv" "$T_FULL" "$STREAM_FULL" "$M_FULL" "$(awk -v a="$M_FULL" -v b="$LIMIT_MBS" 'BEGIN {printf "%.2f", a / b}')" "$(xr "$T_RCOPY" "$T_FULL")" ">=$T_FULL_MBS MB/s $(verdict "$M_FULL >= $T_FULL_MBS")"
	printf "$F" "incremental after 1% ($NCHANGED files)" "$T_INC" "$STREAM_INC" "-" - "$(xr "$T_RCOPY_INC" "$T_INC")" "<$T_INCR_S s $(verdict "$T_INC < $T_INCR_S")"
	[ "$T_RCOPY" = - ] || printf "$F" "restic copy (full / incremental)" "$T_RCOPY" - "$(mbs "$BYTES" "$T_RCOPY")" "$(awk -v a="$(mbs "$BYTES" "$T_RCOPY")" -v b="$LIMIT_MBS" 'BEGIN {printf "%.2f", a / b}')" "$T_RCOPY_INC s" -
	echo
	echo "x restic = restic copy seconds / cairn seconds (above 1: cairn faster); borg 1.2: no transfer verb"
	echo "full stream rate: $M_FULL_STREAM MB/s of stream bytes"
fi
echo
echo "(c) destination already holds the chunks through another dataset ($( [ -n "$B_DONE" ] && echo "the ~2 GB corpus" || echo "small corpus"))"
echo
printf '| %-30s | %8s | %-60s |\n' method seconds "bytes moved"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..32})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..62})"
printf '| %-30s | %8s | %-60s |\n' "send ds2@1 | recv" "$C_RECV_S" "$C_STREAM (stream); receiver stored ${C_RECV_NEW:-?} new chunks"
if [ -n "$HAVE_SYNC" ]; then
	printf '| %-30s | %8s | %-60s |\n' "sync ds2 B:viasync" "$C_SYNC_S" "$C_SYNC_LINE"
else
	printf '| %-30s | %8s | %-60s |\n' "cairn sync" "-" "not a verb in this build: not measured"
fi
echo
echo "(d) convergence after a cut at 50% of a $D_FULL-byte send -R stream (4 datasets x 2 groups; the cut left $D_CUT_SNAPS whole snapshots)"
echo
printf '| %-36s | %8s | %-58s |\n' method seconds "bytes moved"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..38})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..60})"
printf '| %-36s | %8s | %-58s |\n' "send -t TOKEN | recv -s" "$D_RES_S" "$D_RES_B ($D_PCT% of full; target < 55% PASS)"
printf '| %-36s | %8s | %-58s |\n' "sync -R (resumes by token)" "$D_SYNC_S" "$D_SYNC_LINE"
printf '| %-36s | %8s | %-58s |\n' "full re-send: send -R | recv" "$D_FULL_S" "$D_FULL"
