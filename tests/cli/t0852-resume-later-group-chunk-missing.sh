#!/bin/bash
# A resumed stream with a chunk missing in a LATER group than the one it
# resumes.  Only the resumed group skips chunks by their position (the
# token's), so only there can a missing chunk mean that the group changed
# on the sender (t0846, t0848: the partial state is discarded).  In a
# later group nothing was skipped: the sender left the chunk out itself
# (it was told the receiver had it, or the stream is damaged), which is
# refused like a damaged stream, and the partial state of that later
# group is kept.  Its token must not skip the missing chunk: resuming it
# completes the receive.  (Before: no check covered the first-group rule,
# and the kept token skipped the chunks by the count received, the gap
# included, so the resume found a skipped chunk missing and discarded
# the state as a changed group.)  The same when the chunk left out is an
# index root (a snapshot's list of its chunks, sent after its data chunks):
# before, the index reader's failure read "snapshot index unreadable or
# incomplete", did not count as a missing chunk, and the later group's
# state was discarded.
. "$(dirname "$0")/lib.sh"
T=$TESTDIR/src
# WHICH chunk of the later group is left out, and the reason expected
for which in first index; do
	case $which in
	first) why="neither sent nor present" ;;
	index) why="tk@s3: index chunk [0-9a-f]\{64\} was neither sent nor present on the receiver" ;;
	esac
	three_groups w w
	# group s2 is about 1M: the cut is inside it, in tank/w@s2
	cut_s1_s3 800000 '[23]-*'
	ca send -t "$tok" >"$TESTDIR/r" || fail "$which: send -t"
	# the missing chunk is found at the end of its snapshot, before the
	# group's digest is checked
	drop_group_chunk "$TESTDIR/r" "$TESTDIR/r2" $which
	cb recv -s tk <"$TESTDIR/r2" 2>"$TESTDIR/err" && fail "$which: a stream with a chunk left out was received"
	grep -q "$why" "$TESTDIR/err" ||
		fail "$which: the missing chunk is not the reason given: $(cat "$TESTDIR/err")"
	! grep -q "does not continue the interrupted receive" "$TESTDIR/err" ||
		fail "BUG: $which: a chunk missing in a later group counted as a changed group: $(cat "$TESTDIR/err")"
	got=$(cb list -H -o name -t snapshot -r tk | tr '\n' ' ')
	[ "$got" = "tk@s1 tk@s2 tk/w@s1 tk/w@s2 " ] || fail "$which: the resumed group s2 was not committed: $got"
	tok2=$(cb get -H -o value receive_resume_token tk)
	case $tok2 in [23]-*) ;; *) fail "BUG: $which: the later group's partial state was discarded: $tok2" ;; esac
	[ "$tok2" != "$tok" ] || fail "$which: the token still names the resumed group"
	# resuming that state sends the chunk that was left out: it completes
	ca send -t "$tok2" >"$TESTDIR/r3" || fail "$which: send -t of the later group's token"
	cb recv -s tk <"$TESTDIR/r3" 2>"$TESTDIR/err" ||
		fail "BUG: $which: resuming the later group did not complete: $(cat "$TESTDIR/err")"
	want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')
	[ "$want" = "$(cb list -H -p -t snapshot -r -o name,guid tk)" ] || fail "$which: did not converge"
	[ "$(cb get -H -o value receive_resume_token tk)" = - ] || fail "$which: partial state left"
	ok cb verify -r tk >/dev/null
done
done_test
