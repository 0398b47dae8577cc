#!/bin/bash
# As t0852, but the chunk left out of the later group is an index root
# (a snapshot's list of its chunks, sent after its data chunks), not a data
# chunk.  The receiver must treat it as a chunk neither sent nor present,
# keep the later group's partial state, and give a token that skips
# nothing of it, so that resuming completes.  (Before: the index reader's
# failure read "snapshot index unreadable or incomplete" and did not count
# as a missing chunk, so the kept token skipped the gap and every resume
# failed the same way: retry never converged.)
. "$(dirname "$0")/lib.sh"
T=$TESTDIR/src
three_groups w w
cut_s1_s3 800000 '[23]-*'
ca send -t "$tok" >"$TESTDIR/r" || fail "send -t"
drop_group_chunk "$TESTDIR/r" "$TESTDIR/r2" index
cb recv -s tk <"$TESTDIR/r2" 2>"$TESTDIR/err" && fail "a stream with an index chunk left out was received"
grep -q "tk@s3: index chunk [0-9a-f]\{64\} was neither sent nor present on the receiver" "$TESTDIR/err" ||
	fail "the missing index chunk is not the reason given: $(cat "$TESTDIR/err")"
got=$(cb list -H -o name -t snapshot -r tk | tr '\n' ' ')
[ "$got" = "tk@s1 tk@s2 tk/w@s1 tk/w@s2 " ] || fail "the resumed group s2 was not committed: $got"
tok2=$(cb get -H -o value receive_resume_token tk)
case $tok2 in [23]-*) ;; *) fail "the later group's partial state was discarded: $tok2" ;; esac
ca send -t "$tok2" >"$TESTDIR/r3" || fail "send -t of the later group's token"
cb recv -s tk <"$TESTDIR/r3" 2>"$TESTDIR/err" ||
	fail "BUG: resuming the later group did not complete: $(cat "$TESTDIR/err")"
want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')
[ "$want" = "$(cb list -H -p -t snapshot -r -o name,guid tk)" ] || fail "did not converge"
[ "$(cb get -H -o value receive_resume_token tk)" = - ] || fail "partial state left"
ok cb verify -r tk >/dev/null
done_test
