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
T=$TESTDIR/src
three_groups x w x
# tank@s2 is about 0.5M: the cut is inside tank/w@s2
cut_s1_s3 900000 '3-*'
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
# A resumed receive cut again before it stored a chunk (just after the
# group's first SNAP record) keeps the token it resumed: its digest covers
# every snapshot of the group in flight whose chunks the token skips.  A
# token rewritten from the snapshots the resumed stream had shown by then
# (one) would skip the chunks of three while vouching for one: a snapshot
# of the other two destroyed on the sender would not be refused by send -t
# (before: the token was rewritten, and send -t of the changed group sent
# the stream).
A3=$TESTDIR/a3 B3=$TESTDIR/b3 T3=$TESTDIR/src3
# resumes TOKEN N WHAT: send -t TOKEN is not refused, and resuming with it
# makes tk what tank is, with no partial state left
resumes() {
	c3a send -t "$1" >"$TESTDIR/r$2" 2>"$TESTDIR/err" ||
		fail "BUG: send -t refused $3: $(cat "$TESTDIR/err")"
	c3b recv -s tk <"$TESTDIR/r$2" 2>"$TESTDIR/err" || fail "resuming ($2): $(cat "$TESTDIR/err")"
	local want
	want=$(c3a list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')
	[ "$want" = "$(c3b list -H -p -t snapshot -r -o name,guid tk)" ] || fail "did not converge ($2)"
	[ "$(c3b get -H -o value receive_resume_token tk)" = - ] || fail "partial state left ($2)"
}
# snap_cut FILE N: the length of FILE's records up to its Nth SNAP record,
# and 3 bytes of the record after it (a receive cut there has read that
# SNAP record and no chunk after it)
snap_cut() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
off, snaps = 12, 0
while off < len(data):
    t, n = struct.unpack_from("<BI", data, off)
    off += 13 + n
    snaps += t == 4
    if snaps == int(sys.argv[2]):
        break
print(off + 3)
PY
}
c3a() { "$CAIRN" -s "$A3" "$@"; }
c3b() { "$CAIRN" -s "$B3" "$@"; }
ok c3a init >/dev/null
ok c3a config chunk_size=65536 >/dev/null
ok c3b init >/dev/null
# (each dataset its own source directory: a snapshot holds its own files)
mkdir -p "$T3/t" "$T3/w" "$T3/x"
rnd "$T3/t/f"; rnd "$T3/w/g"; rnd "$T3/x/h"
ok c3a create -o source="$T3/t" tank
ok c3a create -o source="$T3/w" tank/w
ok c3a create -o source="$T3/x" tank/x
ok c3a snapshot -r tank@s1
rnd "$T3/t/f2"; rnd "$T3/w/g2"; rnd "$T3/x/h2"
ok c3a snapshot -r tank@s2
rnd "$T3/t/f3"
ok c3a snapshot -r tank@s3
c3a send -R tank@s1 | c3b recv tk || fail "full send -R (3)"
c3a send -R -I @s1 tank@s3 >"$TESTDIR/i3" || fail "send -R -I (3)"
# group s2 is about 1.5M: the cut is inside its third snapshot, tank/x@s2
head -c 1300000 "$TESTDIR/i3" | c3b recv -s tk 2>/dev/null && fail "a cut stream was received (3)"
tok=$(c3b get -H -o value receive_resume_token tk)
gsnaps() { python3 -c 'import sys, struct; t = sys.argv[1]
print(struct.unpack_from("<I", bytes.fromhex(t[2:]), 36)[0] if t[:2] == "3-" else 0)' "$1"; }
[ "$(gsnaps "$tok")" = 3 ] || fail "the cut was not in the group's third snapshot: $tok"
c3a send -t "$tok" >"$TESTDIR/r3" || fail "send -t (3)"
end=$(snap_cut "$TESTDIR/r3" 1)
head -c "$end" "$TESTDIR/r3" | c3b recv -s tk 2>/dev/null && fail "a cut resumed stream was received"
tok2=$(c3b get -H -o value receive_resume_token tk)
[ "$(gsnaps "$tok2")" = 3 ] ||
	fail "BUG: the token of a resume cut before any chunk vouches for $(gsnaps "$tok2") of the 3 snapshots it skips: $tok2"
# the group's second snapshot, whose chunks the token skips, destroyed
ok c3a destroy tank/w@s2
c3a send -t "$tok2" >"$TESTDIR/r4" 2>"$TESTDIR/err" &&
	fail "BUG: send -t resumed a group changed inside the chunks its token skips"
grep -q "the group in flight changed on the sender since the cut" "$TESTDIR/err" ||
	fail "send -t of a changed group: $(cat "$TESTDIR/err")"
[ ! -s "$TESTDIR/r4" ] || fail "send -t of a changed group wrote bytes"
# as zfs (syncoid): zfs's text for a token that cannot be resumed, which
# syncoid answers with receive -A and a send anew
mkdir -p "$TESTDIR/bin"
ln -s "$CAIRN" "$TESTDIR/bin/zfs"
printf 'tank %s\n' "$A3" >"$TESTDIR/pools"
CAIRN_POOLS_FILE=$TESTDIR/pools "$TESTDIR/bin/zfs" send -t "$tok2" >"$TESTDIR/r4" 2>"$TESTDIR/err" &&
	fail "zfs send -t of a changed group succeeded"
grep -q "^cannot resume send: the snapshot used in the initial send no longer exists$" "$TESTDIR/err" ||
	fail "zfs send -t of a changed group: $(cat "$TESTDIR/err")"
[ ! -s "$TESTDIR/r4" ] || fail "zfs send -t of a changed group wrote bytes"

# A token that skips no chunk (a receive cut after its group's first SNAP
# record, before any chunk) continues a group whatever became of it on
# the sender: there is no position to move, and the resumed stream sends
# the whole group.  send -t must not refuse it when that snapshot is
# destroyed (before: "the group in flight changed", and sync discarded
# the partial state).
ok c3b recv -A tk
c3a send -R -I @s1 tank@s3 >"$TESTDIR/i5" || fail "send -R -I (5)"
# cut after the first SNAP record of group s2 (tank@s2)
end=$(snap_cut "$TESTDIR/i5" 1)
head -c "$end" "$TESTDIR/i5" | c3b recv -s tk 2>/dev/null && fail "a stream cut after a SNAP record was received"
tok5=$(c3b get -H -o value receive_resume_token tk)
[ "$(python3 -c 'import sys; print(int.from_bytes(bytes.fromhex(sys.argv[1][2:])[24:32], "little"))' "$tok5")" = 0 ] ||
	fail "the cut token skips chunks: $tok5"
ok c3a destroy tank@s2
resumes "$tok5" 5 "a token that skips nothing"

# The digest covers the snapshots whose chunks the token skips, not one
# the stream had only begun: cut after the SNAP record of a group's
# second snapshot, every chunk received is the first snapshot's, and
# that second one destroyed on the sender moves no skipped position.
# send -t resumes (before: "the group in flight changed", and sync
# discarded the partial state).
rnd "$T3/t/f4"; rnd "$T3/w/g4"; rnd "$T3/x/h4"
ok c3a snapshot -r tank@s4
rnd "$T3/t/f5"
ok c3a snapshot -r tank@s5
c3a send -R -I @s3 tank@s5 >"$TESTDIR/i6" || fail "send -R -I (6)"
end=$(snap_cut "$TESTDIR/i6" 2)
head -c "$end" "$TESTDIR/i6" | c3b recv -s tk 2>/dev/null && fail "a stream cut after a SNAP record was received (6)"
tok6=$(c3b get -H -o value receive_resume_token tk)
ok c3a destroy tank/w@s4
resumes "$tok6" 6 "a group changed only past the chunks its token skips"
ok c3b verify -r tk >/dev/null
done_test
