#!/bin/bash
# A resume token names the group in flight by the sender's createtxg,
# which is local to each store (a copy's snapshots have the receiver's
# transaction numbers).  So a token cannot be resumed from another store
# holding the same snapshots (same guids): zfs resumes from any sender
# with the token's snapshot, cairn does not (docs/REPLICATION.md, resume
# from another sender).  Pinned here: send -t there refuses before a byte
# is written ("no longer on this store"), the receiver's partial state is
# untouched, the original sender still resumes it, and a sync from the
# other store discards it (saying why) and sends the group again in the
# same run, converging to the same guids.
. "$(dirname "$0")/lib.sh"
new_store
second_store
third_store
T=$TESTDIR/src
mkdir -p "$T"
head -c 3000000 /dev/urandom >"$T/f"
ok ca create -o source="$T" tank
ok ca snapshot tank@1
head -c 3000000 /dev/urandom >"$T/g"
ok ca snapshot tank@2
# B: a copy of tank with the same snapshots (same guids)
ok ca sync tank "$B:tank"
[ "$(cb list -H -p -o guid tank@2)" = "$(ca list -H -p -o guid tank@2)" ] || fail "B's copy"
# C: an incremental receive from A, cut
ca send tank@1 | ok cc recv bk
ca send -i @1 tank@2 >"$TESTDIR/i12"
cut_recv bk "$TESTDIR/i12" cc

fails_with 1 "the group the resume token continues is no longer on this store" cb send -t "$tok"
[ -z "$(cb send -t "$tok" 2>/dev/null | head -c 1)" ] || fail "send -t wrote bytes before refusing"
[ "$(cc get -H -o value receive_resume_token bk)" = "$tok" ] || fail "the refused send -t changed C's state"
# A, the sender of the cut stream, resumes it
ca send -t "$tok" >"$TESTDIR/resumed" || fail "send -t from A"

# sync from B: the token is unusable there, discarded, and sent again
cb sync tank "$C:bk" 2>"$TESTDIR/err" || fail "sync from B: $(cat "$TESTDIR/err")"
grep -q "bk: discarding the partial receive" "$TESTDIR/err" || fail "discard not said: $(cat "$TESTDIR/err")"
[ "$(cc list -H -p -o name,guid -t snapshot bk | sed 's/^bk//')" = "$(ca list -H -p -o name,guid -t snapshot tank | sed 's/^tank//')" ] ||
	fail "C did not converge"
done_test
