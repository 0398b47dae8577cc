#!/bin/bash
# tier: stress
# GC killed at random points (SIGKILL, or SIGINT/SIGTERM for a clean
# stop), with garbage to collect and a backup sometimes running: after
# every kill the store verifies, and every snapshot still restores.  A
# clean stop exits non-zero saying it was interrupted, or 0 when it had
# already finished.  At the end a complete GC leaves no garbage and no
# "<hex>.gc" leftovers.  ROUNDS (default 20).
#
# Backups run in every fourth round, so they fall in all three kinds.
# Coverage is asserted, not hoped for: a third of the rounds signal GC as
# soon as its handlers are installed (before anything is removed), a third
# once the first garbage chunk is gone (inside the sweep, slowed down), the
# rest at a random time.  Each round records whether the signal landed
# before or after the sweep removed something; the test fails unless both
# happened at least ROUNDS/5 times, with both SIGKILL and clean stops.
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-20}
new_store
ok cairn config gc_atime_cutoff=0
SRC=$TESTDIR/src
mkdir -p "$SRC"
cp -a /usr/include/linux/[a-h]*.h "$SRC/"
ok cairn create -o source="$SRC" -o chunksize=64K tank
# How long one GC takes here: kills land anywhere inside that.
t0=$(date +%s%N)
ok cairn gc
gcms=$((($(date +%s%N) - t0) / 1000000 + 50))
# all_there PATH...: every chunk file is still in the store.
all_there() {
	local g
	for g in "$@"; do [ -e "$CAIRN_STORE/$g" ] || return 1; done
}
kills=0 clean=0 finished=0 before=0 after=0
for round in $(seq "$ROUNDS"); do
	# garbage: big files that the next prune orphans
	for i in 0 1 2; do head -c $((100000 + RANDOM * 20)) /dev/urandom >"$SRC/big$i.bin"; done
	echo "/* $round */" >>"$(find "$SRC" -name '*.h' | shuf -n 1)"
	ok cairn snapshot tank@r$round
	manifest "$SRC" >"$TESTDIR/man.r$round"
	ok cairn prune --keep-last 2 tank >/dev/null
	backup=
	if [ $((round % 4)) = 0 ]; then
		# GC keeps every chunk touched within 2 s of a running writer's
		# start, and the last round's mark touched this round's garbage:
		# let that age out, or this round has nothing to collect.
		sleep 2.5
		head -c 300000 /dev/urandom >"$SRC/during.bin"
		"$CAIRN" snapshot tank@d$round 2>/dev/null &
		backup=$!
	fi
	# the garbage this GC is to remove (paths relative to the store)
	garbage=$("$CAIRN" gc -n -v | sed -n 's/^would remove \(\.chunks\/[^ ]*\) .*/\1/p')
	# (a round without garbage listed is not classified; the coverage
	# check at the end counts only rounds that had some)
	[ -n "$garbage" ] || [ $round -le 2 ] || echo "round $round: gc -n listed no garbage"
	mode=$((round % 3))
	[ $mode = 1 ] || [ $((round % 4)) = 0 ] && export CAIRN_TEST_SWEEP_DELAY_US=3000
	"$CAIRN" gc >"$TESTDIR/gc.out" 2>&1 &
	pid=$!
	unset CAIRN_TEST_SWEEP_DELAY_US
	case $((RANDOM % 3)) in
	0) sig=INT ;;
	1) sig=TERM ;;
	*) sig=KILL ;;
	esac
	# A clean stop needs GC's handlers: wait until SIGINT (bit 2) and
	# SIGTERM (bit 15) are caught.  A signal before that is not GC's to
	# handle (the process is still starting).
	while [ $sig != KILL ] && kill -0 $pid 2>/dev/null; do
		cgt=$(sed -n 's/^SigCgt:\t//p' /proc/$pid/status 2>/dev/null)
		[ -n "$cgt" ] && [ $(((0x$cgt >> 1) & (0x$cgt >> 14) & 1)) = 1 ] && break
	done
	case $mode in
	0) ;; # at once
	1)    # once the sweep has removed its first chunk
		while kill -0 $pid 2>/dev/null && all_there $garbage; do :; done ;;
	*)
		ms=$((RANDOM % gcms))
		sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" ;;
	esac
	kill -$sig $pid 2>/dev/null
	{ wait $pid; } 2>/dev/null
	rc=$?
	if [ -z "$garbage" ]; then :
	elif all_there $garbage; then before=$((before + 1))
	else after=$((after + 1)); fi
	if [ $rc = 0 ]; then
		finished=$((finished + 1))
	elif [ $sig = KILL ]; then
		kills=$((kills + 1))
	else
		clean=$((clean + 1))
		grep -q "interrupted" "$TESTDIR/gc.out" || fail "round $round: SIG$sig: $(cat "$TESTDIR/gc.out")"
	fi
	[ -n "$backup" ] && { wait $backup || fail "round $round: backup during GC failed"; }
	[ -n "$backup" ] && manifest "$SRC" >"$TESTDIR/man.d$round"
	rm -f "$SRC/during.bin"
	out=$("$CAIRN" verify 2>&1) || {
		fail "round $round: store does not verify after GC got SIG$sig"
		echo "$out" | head -5 >&2
	}
done
ok cairn gc
ok cairn verify
for s in $(cairn list -H -o name -t snapshot); do
	rm -rf "$TESTDIR/r"
	ok cairn restore "$s" "$TESTDIR/r"
	[ "$(manifest "$TESTDIR/r")" = "$(cat "$TESTDIR/man.${s#tank@}")" ] || fail "$s content"
done
left=$(find "$CAIRN_STORE/.chunks" -name '*.gc' | wc -l)
[ "$left" = 0 ] || fail "$left quarantined chunks left after a complete GC"
out=$(cairn gc -n)
echo "$out" | grep -q 'would remove 0 chunks' || fail "garbage left: $out"
echo "$ROUNDS rounds: $kills killed, $clean stopped cleanly, $finished finished first;" \
	"$before signalled before the sweep removed anything, $after after"
min=$((ROUNDS / 5))
[ $before -ge $min ] || fail "only $before of $ROUNDS signals landed before the sweep (want >= $min)"
[ $after -ge $min ] || fail "only $after of $ROUNDS signals landed inside or after the sweep (want >= $min)"
[ $kills -ge 1 ] && [ $clean -ge 1 ] || fail "no SIGKILL ($kills) or no clean stop ($clean)"
done_test
