#!/bin/bash
# bench/holds.sh - batched holds and releases against one command per
# snapshot, after illumos' `zfs send -R` hold fix
# (../shared/reference/illumos-zfs-send-batched-holds.txt: 2N syncs -> 2,
# 20 s -> under 1 s).  Results go to BENCHMARKS.md ("Holds (bench/holds.sh)").
#
# Shapes (real snapshots, each `snapshot -r` is one command):
#   ref   the reference's: test + test/site1..site10 (11 datasets),
#         8 recursive snapshots (initial, 1..7) = 88 snapshots
#   big   big + big/d01..d99 (100 datasets), 100 recursive snapshots = 10,000
#   one   a single snapshot (the baseline sync count)
#
# For each shape, the same run measures hold + release of every snapshot:
#   -r      cairn hold -r TAG ROOT@S1 ROOT@S2 ...  then  cairn release -r ...
#           (one command each; ROOT@Sk expands to every dataset)
#   list    cairn hold TAG DS@S ... (every name given explicitly), release alike
#   each    one cairn hold per snapshot, then one cairn release per snapshot
# Seconds: wall time; for -r and list the median of CAIRN_BENCH_TRIALS
# trials (default 5), for `each` one pass.  Syncs: fsync + fdatasync +
# syncfs calls counted by `strace -f --seccomp-bpf -c` in a separate pass.
# Every pass checks the hold count afterwards with sqlite3 (the script
# stops otherwise); closing, the sqlite3 shell checkpoints the WAL, so each
# pass starts from an empty WAL.
#
# Targets (issue): the batched forms cost the same number of syncs at every
# size (equal to the one-snapshot count), and hold + release of the 10,000
# snapshots takes under 0.5 s.  Prints PASS/MISS for each.
#
# Environment:
#   CAIRN_BENCH_DIR     work directory (default /var/tmp/cairn-bench-holds)
#   CAIRN_BENCH_BIN     cairn binary (default: built with make into $DIR/build,
#                       out of tree, so it never races a developer's build/)
#   CAIRN_BENCH_TRIALS  trials of the batched forms (default 5)
#   CAIRN_BENCH_KEEP=1  keep the store afterwards
#
# Nearly all of a run is the 20,000 single commands of "big (each)", run
# twice (timed, then under strace): about 10 minutes on 2 cores while the
# catalog's WAL stays bounded, 50 minutes with the tree of 2026-11-30,
# whose WAL grows with every command (see BENCHMARKS.md).
set -euo pipefail
export LC_ALL=C TZ=UTC

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${CAIRN_BENCH_DIR:-/var/tmp/cairn-bench-holds}
TRIALS=${CAIRN_BENCH_TRIALS:-5}
STORE=$BASE/store
SRC=$BASE/src
LOG=$BASE/log

T_BIG_S=0.5 # hold + release of 10,000, batched

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
command -v strace >/dev/null || { say "installing strace"; apt-get install -y strace >/dev/null; }
command -v sqlite3 >/dev/null || { say "installing sqlite3"; apt-get install -y sqlite3 >/dev/null; }
strace -f --seccomp-bpf -c -o /dev/null true 2>/dev/null || die "strace does not work here"

if [ -n "${CAIRN_BENCH_BIN:-}" ]; then
	CAIRN=$CAIRN_BENCH_BIN
else
	CAIRN=$BASE/build/cairn
	say "building $CAIRN"
	mkdir -p "$BASE"
	make -s -C "$ROOT" B="$BASE/build" "$BASE/build/cairn" >&2 || die "make failed"
fi
[ -x "$CAIRN" ] || die "$CAIRN: not executable"
export CAIRN_STORE=$STORE

cleanup() { [ -n "${CAIRN_BENCH_KEEP:-}" ] || rm -rf "$STORE"; }
trap cleanup EXIT
rm -rf "$STORE" "$SRC" "$LOG"
mkdir -p "$SRC" "$LOG"

# seconds between two $EPOCHREALTIME values (no fork inside the timing)
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", b - a}'; }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
nholds() { sqlite3 "$STORE/catalog.db" "SELECT COUNT(*) FROM hold WHERE tag='$1'"; }

# ---- setup ----
t0=$EPOCHREALTIME
"$CAIRN" init >/dev/null
echo x >"$SRC/f"
"$CAIRN" create -o source="$SRC" test
for i in $(seq 1 10); do
	mkdir "$SRC/site$i" && echo "$i" >"$SRC/site$i/f"
	"$CAIRN" create "test/site$i"
done
for s in initial 1 2 3 4 5 6 7; do "$CAIRN" snapshot -r "test@$s"; done
mkdir -p "$SRC/big"
echo big >"$SRC/big/f"
"$CAIRN" create -o source="$SRC/big" big
for i in $(seq -w 1 99); do
	mkdir "$SRC/big/d$i" && echo "$i" >"$SRC/big/d$i/f"
	"$CAIRN" create "big/d$i"
done
for s in $(seq -w 1 100); do "$CAIRN" snapshot -r "big@s$s"; done
"$CAIRN" create -o source="$SRC" one
"$CAIRN" snapshot one@only
say "setup: $(secs "$t0" "$EPOCHREALTIME") s"

declare -A ROOTS NAMES N
ROOTS[one]="one@only"
ROOTS[ref]="test@initial $(printf 'test@%s ' 1 2 3 4 5 6 7)"
ROOTS[big]=$(printf 'big@s%s ' $(seq -w 1 100))
for shape in one ref big; do
	root=${ROOTS[$shape]%%@*}
	NAMES[$shape]=$("$CAIRN" list -H -o name -t snapshot -r "$root")
	N[$shape]=$(echo "${NAMES[$shape]}" | wc -l)
	echo "${NAMES[$shape]}" >"$LOG/names.$shape"
done
[ "${N[ref]}" = 88 ] && [ "${N[big]}" = 10000 ] && [ "${N[one]}" = 1 ] ||
	die "setup made ${N[one]}/${N[ref]}/${N[big]} snapshots, expected 1/88/10000"

# ---- measurement ----
# set_cmd FORM VERB SHAPE: CMD (an array) is that form of the hold (VERB
# hold) or release of every snapshot of SHAPE; CMD_IN its stdin.
set_cmd() {
	local form=$1 verb=$2 shape=$3
	CMD_IN=/dev/null
	case $form in
	-r) read -r -a CMD <<<"$CAIRN $verb -r bench ${ROOTS[$shape]}" ;;
	list) mapfile -t CMD <"$LOG/names.$shape"; CMD=("$CAIRN" "$verb" bench "${CMD[@]}") ;;
	each) CMD=(xargs -d '\n' -n1 "$CAIRN" "$verb" bench); CMD_IN=$LOG/names.$shape ;;
	esac
}
# run_pass FORM VERB SHAPE: seconds of one pass; checks the hold count.
run_pass() {
	local t0 t1 want
	set_cmd "$@"
	t0=$EPOCHREALTIME
	"${CMD[@]}" <"$CMD_IN" >/dev/null 2>"$LOG/err" || die "$* failed: $(head -3 "$LOG/err")"
	t1=$EPOCHREALTIME
	want=$([ "$2" = hold ] && echo "${N[$3]}" || echo 0)
	[ "$(nholds bench)" = "$want" ] || { echo INVALID; return; }
	secs "$t0" "$t1"
}
# sync_pass FORM VERB SHAPE: sync calls of one pass under strace.
sync_pass() {
	set_cmd "$@"
	strace -f --seccomp-bpf -c -o "$LOG/strace" -e trace=fsync,fdatasync,syncfs \
		"${CMD[@]}" <"$CMD_IN" >/dev/null 2>"$LOG/err" ||
		die "$* failed under strace: $(head -3 "$LOG/err")"
	awk '$NF == "total" {print $4}' "$LOG/strace"
}

declare -A SEC SYN
for shape in one ref big; do
	for form in -r list each; do
		[ "$shape" = one ] && [ "$form" != list ] && continue
		trials=$TRIALS
		[ "$form" = each ] && trials=1
		for verb in hold release; do
			: >"$LOG/times.$verb"
		done
		for ((k = 0; k < trials; k++)); do
			for verb in hold release; do
				s=$(run_pass "$form" "$verb" "$shape")
				[ "$s" = INVALID ] && die "$form $verb $shape: wrong hold count afterwards"
				echo "$s" >>"$LOG/times.$verb"
			done
		done
		for verb in hold release; do
			SEC[$shape,$form,$verb]=$(median <"$LOG/times.$verb")
			SYN[$shape,$form,$verb]=$(sync_pass "$form" "$verb" "$shape")
			[ "$(nholds bench)" = "$([ $verb = hold ] && echo "${N[$shape]}" || echo 0)" ] ||
				die "$form $verb $shape under strace: wrong hold count"
		done
		say "$shape ($form): hold ${SEC[$shape,$form,hold]} s / ${SYN[$shape,$form,hold]} syncs," \
			"release ${SEC[$shape,$form,release]} s / ${SYN[$shape,$form,release]} syncs"
	done
done

# ---- report ----
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo);" \
	"store on $(findmnt -n -o FSTYPE -T "$STORE" 2>/dev/null || stat -f -c %T "$STORE");" \
	"load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
add() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a + b}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf (b > 0) ? "%.0fx" : "-", a / b}'; }
printf '\n%-5s %6s  %-5s %9s %9s %9s  %6s %6s %6s\n' shape snaps form "hold s" "release s" "total s" "hold" "rel" "syncs"
for shape in one ref big; do
	for form in -r list each; do
		[ -n "${SEC[$shape,$form,hold]:-}" ] || continue
		h=${SEC[$shape,$form,hold]} r=${SEC[$shape,$form,release]}
		sh=${SYN[$shape,$form,hold]} sr=${SYN[$shape,$form,release]}
		printf '%-5s %6s  %-5s %9s %9s %9s  %6s %6s %6s\n' "$shape" "${N[$shape]}" "$form" "$h" "$r" \
			"$(add "$h" "$r")" "$sh" "$sr" "$((sh + sr))"
	done
done
echo
for shape in ref big; do
	each=$(add "${SEC[$shape,each,hold]}" "${SEC[$shape,each,release]}")
	for form in -r list; do
		b=$(add "${SEC[$shape,$form,hold]}" "${SEC[$shape,$form,release]}")
		bs=$((SYN[$shape,$form,hold] + SYN[$shape,$form,release]))
		es=$((SYN[$shape,each,hold] + SYN[$shape,each,release]))
		echo "$shape: one command per snapshot vs $form: time $(ratio "$each" "$b") ($each s vs $b s)," \
			"syncs $(ratio "$es" "$bs") ($es vs $bs)"
	done
done
echo
base_h=${SYN[one,list,hold]} base_r=${SYN[one,list,release]}
same=PASS
for shape in ref big; do
	for form in -r list; do
		[ "${SYN[$shape,$form,hold]}" = "$base_h" ] && [ "${SYN[$shape,$form,release]}" = "$base_r" ] || same=MISS
	done
done
echo "$same  batched syncs equal at 1, 88 and 10,000 snapshots (hold $base_h, release $base_r per command)"
for form in -r list; do
	t=$(add "${SEC[big,$form,hold]}" "${SEC[big,$form,release]}")
	v=$(awk -v t="$t" -v m="$T_BIG_S" 'BEGIN {print (t < m) ? "PASS" : "MISS"}')
	echo "$v  hold + release of 10,000 snapshots ($form) in $t s (target < $T_BIG_S s)"
done
