#!/bin/bash
# A destination top holding another store's partial receive, which sync
# refuses (its snapshots are none of the source's): sync used to resume
# the top's token before its checks.  The token is not the source's, so
# the "resume" found it unusable and discarded it (recv -A, saying so),
# and only then came the refusal: a refused sync threw away another
# transfer's progress.  Now the checks come first, and a refused sync
# leaves the destination exactly as it was, with or without -R.
. "$(dirname "$0")/lib.sh"
new_store
second_store
third_store
token() { cb get -H -o value receive_resume_token "$1"; }

# the source
one_file_src
ok ca create -o source="$SRC" tank
ok ca snapshot tank@1

# un: a copy of another store's dataset, with a cut incremental of it
O=$TESTDIR/o
mkdir -p "$O"
echo o >"$O/f"
ok cc create -o source="$O" other
ok cc snapshot other@x
cc send other@x | ok cb recv un
head -c 3000000 /dev/urandom >"$O/g"
ok cc snapshot other@y
cc send -i @x other@y >"$TESTDIR/inc"
cut_recv un "$TESTDIR/inc"
before=$(cb list -H -p -o name,guid -t all -r un)

for opt in "" -R "-R -F" -F; do
	# shellcheck disable=SC2086
	ca sync $opt tank "$B:un" >"$TESTDIR/out" 2>"$TESTDIR/err" && fail "sync $opt into un succeeded"
	grep -q "un: has snapshots (eg. un@x) but none in common with tank" "$TESTDIR/err" ||
		fail "sync $opt: not the refusal: $(cat "$TESTDIR/err")"
	grep -q "discarding" "$TESTDIR/err" && fail "sync $opt discarded un's partial state: $(cat "$TESTDIR/err")"
	[ "$(token un)" = "$tok" ] || fail "a refused sync $opt changed un's partial state: $(token un)"
	[ "$(cb list -H -p -o name,guid -t all -r un)" = "$before" ] || fail "a refused sync $opt changed un"
done

# the state is still the other store's to finish
cc send -t "$tok" | ok cb recv -s un
[ "$(token un)" = - ] || fail "un still holds partial state after its resume"
[ "$(cb list -H -o name -t snapshot un | tr '\n' ' ')" = "un@x un@y " ] || fail "un@y not received"
done_test
