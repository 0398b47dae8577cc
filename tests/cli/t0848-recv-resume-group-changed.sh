#!/bin/bash
# recv -s (not sync) resuming a cut send -R -I whose group in flight
# changed on the sender (its top's snapshot destroyed there): the resumed
# receive discards the partial state, which can never complete (t0846 is
# the same through sync).  A dry run (recv -n) of that stream changes
# nothing and says so: before, it said "its partial state is discarded"
# and kept it.
# The token carries a digest of the snapshots of the group in flight the
# receiver saw: send -t compares it and refuses such a token before it
# writes a byte.  The same token in the older "2-" spelling (no digest)
# is still accepted, and the receiver's missing-chunk check is the
# backstop that refuses the stream it makes.
. "$(dirname "$0")/lib.sh"
A=$TESTDIR/a B=$TESTDIR/b T=$TESTDIR/src
ca() { "$CAIRN" -s "$A" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca init >/dev/null
ok ca config chunk_size=65536 >/dev/null
ok cb init >/dev/null
mkdir -p "$T/w" "$T/x"
rnd() { head -c 500000 /dev/urandom >"$1"; }
rnd "$T/f"; rnd "$T/w/g"; rnd "$T/x/h"
ok ca create -o source="$T" tank
ok ca create tank/w
ok ca create tank/x
ok ca snapshot -r tank@s1
rnd "$T/f2"; rnd "$T/w/g2"; rnd "$T/x/h2"
ok ca snapshot -r tank@s2
rnd "$T/f3"; rnd "$T/x/h3"
ok ca snapshot -r tank@s3
ca send -R tank@s1 | cb recv tk || fail "full send -R"
ca send -R -I @s1 tank@s3 >"$TESTDIR/i" || fail "send -R -I"
# tank@s2 is about 0.5M: the cut is inside tank/w@s2
head -c 900000 "$TESTDIR/i" | cb recv -s tk 2>/dev/null && fail "a cut stream was received"
tok=$(cb get -H -o value receive_resume_token tk)
case $tok in 3-*) ;; *) fail "the cut receive left no partial state: $tok" ;; esac
ok ca destroy tank@s2
fails_with 1 "cairn: send: tank/w@s2: the group in flight changed on the sender since the cut" \
	ca send -t "$tok"
[ "$(ca send -t "$tok" 2>/dev/null | wc -c)" = 0 ] || fail "send -t of a changed group wrote bytes"
[ "$(cb get -H -o value receive_resume_token tk)" = "$tok" ] || fail "the partial state changed"
# the token as an earlier version spelt it: "2-", without the group digest
old=$(python3 -c '
import hashlib, sys
raw = bytes.fromhex(sys.argv[1][2:])[:36]
print("2-" + (raw + hashlib.sha256(raw).digest()[:8]).hex())' "$tok")
ca send -t "$old" >"$TESTDIR/r" || fail "send -t of a token without the group digest"
fails_with 1 "tk/w@s2: the resumed stream does not continue the interrupted receive" \
	cb recv -n -s tk <"$TESTDIR/r"
[ "$(cb get -H -o value receive_resume_token tk)" = "$tok" ] || fail "recv -n changed the partial state"
cb recv -n -s tk <"$TESTDIR/r" 2>&1 | grep -q "partial state is discarded" &&
	fail "BUG: recv -n says the partial state is discarded"
cb recv -n -s tk <"$TESTDIR/r" 2>&1 | grep -q "this dry run keeps it" ||
	fail "recv -n does not say the state is kept"
fails_with 1 "its partial state is discarded; send again" cb recv -s tk <"$TESTDIR/r"
[ "$(cb get -H -o value receive_resume_token tk)" = - ] || fail "the dead partial state was kept"
# sending again (the group anew) converges
ca send -R -I @s1 tank@s3 | cb recv -s tk || fail "sending again after the discard"
want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')
[ "$want" = "$(cb list -H -p -t snapshot -r -o name,guid tk)" ] || fail "did not converge"
done_test
