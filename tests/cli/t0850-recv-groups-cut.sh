#!/bin/bash
# tier: stress
# Atomic recursive receive, cut anywhere.  `send -R -I` over 5 datasets x
# 6 recursive snapshots is cut at record boundaries (all of them with CAIRN_LONG=1) and at random
# bytes inside records; each cut is received (recv -s) into the same
# target, reset between cuts by copying its catalog back (chunks are
# content-addressed, extra ones are harmless).  After each cut:
#   - recv exits 1 and the target holds exactly the groups whose GROUPEND
#     lies before the cut: every group whole (all 5 datasets or none);
#   - the newest group restores byte-identical to the source;
#   - a retry converges to the source's `list -H -p -t snapshot -r -o
#     name,guid`, by turns: (a) the same stream again, (b) sync -R, (c)
#     send -t with the target's receive_resume_token (sync when the cut
#     left no group in flight).
# CAIRN_LONG=1 cuts at every boundary and more random bytes.  SEED=n
# reproduces a run.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
SEED=${SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$SEED
echo "seed $SEED"
new_store
A=$CAIRN_STORE
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca config chunk_size=65536

DS="tank tank/a tank/a/x tank/b tank/c"
SRC=$TESTDIR/src
REF=$TESTDIR/ref
for d in $DS; do
	mkdir -p "$SRC/$d/sub"
	echo "$d" >"$SRC/$d/name"
	head -c 3000 /dev/urandom >"$SRC/$d/base"
done
ok ca create -o source="$SRC/tank" tank
for d in tank/a tank/a/x tank/b tank/c; do ok ca create -o source="$SRC/$d" "$d"; done
for k in 1 2 3 4 5 6; do
	for d in $DS; do
		head -c $((1000 + RANDOM % 3000)) /dev/urandom >"$SRC/$d/f$k"
		echo "$k" >>"$SRC/$d/sub/log"
		mkdir -p "$REF/$k/$(dirname "$d")"
	done
	ok ca snapshot -r tank@$k
	for d in $DS; do mkdir -p "$REF/$k/$d" && cp -a "$SRC/$d/." "$REF/$k/$d/"; done
done

# the target has @1 everywhere
ca send -R tank@1 | cb recv bk || fail "initial recv -R"
S=$TESTDIR/stream
ca send -R -I @1 tank@6 >"$S" || fail "send -R -I"
want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|bk|')
# records: "offset type length"; groups end at the GROUPEND records
python3 - "$S" >"$TESTDIR/records" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off = 12
while off < len(d):
    t, n = struct.unpack_from("<BI", d, off)
    print(off, t, n)
    off += 13 + n
PY
len=$(stat -c %s "$S")
ngroups=$(awk '$2 == 8' "$TESTDIR/records" | wc -l)
[ "$ngroups" = 5 ] || fail "expected 5 groups in the stream, found $ngroups"
# groups_before OFFSET: how many GROUPEND records end at or before OFFSET
groups_before() { awk -v c="$1" '$2 == 8 && $1 + 13 + $3 <= c {n++} END {print n + 0}' "$TESTDIR/records"; }

SAVE=$TESTDIR/save
mkdir -p "$SAVE"
cp -a "$B"/catalog.db* "$SAVE/"
reset_target() {
	rm -f "$B"/catalog.db*
	cp -a "$SAVE"/catalog.db* "$B/"
}

# cut points: every record boundary, then random bytes
# make check: every second boundary (random phase, printed) and 30 random
# bytes; CAIRN_LONG=1: every boundary and 600 random bytes.
every=2 nrand=30
[ -n "${CAIRN_LONG:-}" ] && every=1 nrand=600
phase=$((RANDOM % every))
echo "record boundaries n with n % $every = $phase"
cuts=$(awk -v e=$every -v p=$phase '(NR - 1) % e == p {print $1}' "$TESTDIR/records")
for i in $(seq 1 $nrand); do cuts="$cuts $(((RANDOM * 32768 + RANDOM) % len))"; done

ncuts=0 ntoken=0 nsync=0 nsame=0
MAXCUTS=${MAXCUTS:-100000}
for cut in $cuts; do
	[ "$ncuts" -ge "$MAXCUTS" ] && break
	[ $((ncuts % 20)) = 0 ] && echo "[${SECONDS}s] $ncuts cuts" >&2
	ncuts=$((ncuts + 1))
	reset_target
	head -c "$cut" "$S" | cb recv -s bk >/dev/null 2>"$TESTDIR/err"
	rc=$?
	[ $rc = 1 ] || fail "cut at $cut: recv exits $rc"
	# whole groups, exactly those before the cut
	got=$(cb list -H -p -t snapshot -r -o name bk)
	g=$(groups_before "$cut")
	for k in 2 3 4 5 6; do
		n=$(echo "$got" | grep -c "@$k$")
		if [ $((k - 1)) -le "$g" ]; then
			[ "$n" = 5 ] || fail "cut at $cut: group @$k has $n of 5 snapshots (expected whole)"
		else
			[ "$n" = 0 ] || fail "cut at $cut: group @$k has $n of 5 snapshots (expected none)"
		fi
	done
	# the newest group restores byte-identical (one dataset per cut, in
	# turn; every snapshot is restored at the end)
	if [ "$g" -gt 0 ]; then
		k=$((g + 1))
		set -- $DS
		shift $((ncuts % 5))
		d=$1
		r=$TESTDIR/r
		rm -rf "$r"
		cb restore "${d/tank/bk}@$k" "$r" || fail "cut at $cut: restore ${d/tank/bk}@$k"
		same_tree "$REF/$k/$d" "$r"
	fi
	# a retry converges
	case $((ncuts % 3)) in
	0)
		nsame=$((nsame + 1))
		cb recv -s bk <"$S" 2>"$TESTDIR/err" || fail "cut at $cut: the same stream again: $(cat "$TESTDIR/err")"
		;;
	1)
		nsync=$((nsync + 1))
		ca sync -R tank "$B:bk" 2>"$TESTDIR/err" || fail "cut at $cut: sync -R: $(cat "$TESTDIR/err")"
		;;
	2)
		tok=$(cb get -H -o value receive_resume_token bk)
		if [ "$tok" != - ]; then
			ntoken=$((ntoken + 1))
			ca send -t "$tok" | cb recv -s bk 2>"$TESTDIR/err" ||
				fail "cut at $cut: send -t: $(cat "$TESTDIR/err")"
		else
			nsync=$((nsync + 1))
			ca sync -R tank "$B:bk" 2>"$TESTDIR/err" || fail "cut at $cut: sync -R: $(cat "$TESTDIR/err")"
		fi
		;;
	esac
	now=$(cb list -H -p -t snapshot -r -o name,guid bk)
	[ "$now" = "$want" ] || {
		fail "cut at $cut: no convergence after the retry ($((ncuts % 3)))"
		diff <(echo "$want") <(echo "$now") | head -5 >&2
	}
	[ $((ncuts % 10)) != 0 ] || [ "$(cb get -H -o value inconsistent bk)" = off ] ||
		fail "cut at $cut: partial state left after the retry"
done
echo "$ncuts cuts of a $len-byte stream: retried $nsame by the same stream, $nsync by sync -R, $ntoken by send -t"
mincuts=90 mintoken=10
[ -n "${CAIRN_LONG:-}" ] && mincuts=200 mintoken=20
[ "$ncuts" -ge $mincuts ] || fail "only $ncuts cuts"
[ "$ntoken" -ge $mintoken ] || fail "only $ntoken retries by token"
# after the last convergence every snapshot restores byte-identical
for k in 1 2 3 4 5 6; do
	for d in $DS; do
		rm -rf "$TESTDIR/r"
		cb restore "${d/tank/bk}@$k" "$TESTDIR/r" || fail "restore ${d/tank/bk}@$k"
		same_tree "$REF/$k/$d" "$TESTDIR/r"
	done
done
done_test
