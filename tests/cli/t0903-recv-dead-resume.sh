#!/bin/bash
# A cut incremental whose source the target lacks saves a resume point
# (the source is checked when the group commits).  Resuming it is refused
# for the missing source, and that refusal discards the dead state: the
# next ordinary incremental is received, with no hand work (syncoid keeps
# resuming a token it sees).  And the words zfs uses for another stream's
# partial state, which syncoid looks for, are in cairn's message.
. "$(dirname "$0")/lib.sh"
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
cb() { "$CAIRN" -s "$B" "$@"; }
mkdir -p "$TESTDIR/src"
echo one >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" ds
ok cairn snapshot ds@one
cairn send ds@one | cb recv bk || fail "full send"
head -c 3000000 /dev/urandom >"$TESTDIR/src/big"
ok cairn snapshot ds@two
head -c 3000000 /dev/urandom >"$TESTDIR/src/big2"
ok cairn snapshot ds@three
cairn send -i @two ds@three >"$TESTDIR/i23"
size=$(stat -c %s "$TESTDIR/i23")
[ "$size" -gt 3000000 ] || fail "incremental stream too small to cut: $size"

# whole: refused, no state
fails_with 1 "incremental source .* is not on the target" cb recv -s bk <"$TESTDIR/i23"
[ -z "$(cb get -H -o value receive_resume_token bk | tr -d -)" ] || fail "a refused whole stream left a token"
# cut: a token is saved (the check is at the commit)
head -c $((size / 2)) "$TESTDIR/i23" | cb recv -s bk 2>/dev/null && fail "a cut stream was received"
tok=$(cb get -H -o value receive_resume_token bk)
[ -n "$tok" ] && [ "$tok" != - ] || fail "the cut left no token (the case this test needs)"
# another stream meets zfs's words for the partial state
cairn send -i @one ds@two >"$TESTDIR/i12"
fails_with 1 'contains partially-complete state from "zfs receive -s"' cb recv -s bk <"$TESTDIR/i12"
# resuming it is refused for the source, and the dead state goes
cairn send -t "$tok" >"$TESTDIR/resume" || fail "send -t"
fails_with 1 "incremental source .* is not on the target" cb recv -s bk <"$TESTDIR/resume"
t2=$(cb get -H -o value receive_resume_token bk)
[ -z "$t2" ] || [ "$t2" = - ] || fail "the dead resume point is still there: $t2"
# so the ordinary incremental now goes through
ok cb recv -s bk <"$TESTDIR/i12"
cb list -H -o name bk@two >/dev/null || fail "bk@two not received after the dead state went"
done_test
