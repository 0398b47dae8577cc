#!/bin/bash
# A file changed in the tick a backup started in is recorded racy, its
# ctime 1 ns early, so that the next backup reads it again (DESIGN.md,
# "Writing a snapshot").  diff between that snapshot and the next showed
# such a file modified though neither its content nor any of its times
# had changed; now a ctime 1 ns apart with the same content is the same
# file, while a write the racy rule caught (same size and times, other
# bytes) is still reported.  The coarse-ctime shim (whole-second times,
# the file's ctime frozen in a second) makes the file racy for certain.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
racy_first_snapshot

# backup_read SNAP WORD: tank@SNAP under the shim (which logs WORD), asserting the racy file was read
backup_read() {
	rm -f "$TESTDIR/swap.log"
	out=$(env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" SWAP_LOG="$TESTDIR/swap.log" \
		"$CAIRN" snapshot -v -p tank@$1 2>&1) || fail "tank@$1: $out"
	grep -q "$2 racy" "$TESTDIR/swap.log" 2>/dev/null || fail "tank@$1: the shim did not act"
	read_b=$(echo "$out" | sed -n 's/^[0-9]* files, \([0-9]*\) read,.*/\1/p')
	[ "$read_b" = 41 ] || fail "tank@$1 read '$read_b' bytes, not the racy file again: $out"
}
# Past the frozen second and the 2 s tick: read again, no longer racy.
sleep 3
backup_read two frozen
out=$(cairn diff tank@one tank@two) || fail "diff tank@one tank@two: $out"
[ -z "$out" ] || fail "diff of snapshots of an unchanged file: $out"

# Racy again (frozen anew), then rewritten within the frozen tick: the
# same size and times, other bytes.  Read past the tick (not racy again,
# or both records would carry the same early ctime): diff reports it.
rm -f "$FREEZE_STATE"
shimmed tank@three "froze racy"
[ $rc = 0 ] || fail "tank@three: exit $rc: $out"
printf 'BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\n' >"$SRC/racy"
touch -d '@981173106' "$SRC/racy"
sleep 3
backup_read four frozen
out=$(cairn diff tank@three tank@four) || fail "diff tank@three tank@four: $out"
[ "$out" = "$(printf 'M\t%s/racy' "$COARSE_ROOT")" ] ||
	fail "diff of a write the racy rule caught: '$out'"
done_test
