#!/bin/bash
# A cut sync -R whose group in flight changed on the source before the
# retry (a snapshot of it destroyed there): the resumed stream skips, by
# position in the group, chunks the cut receive had stored - positions
# that now belong to other chunks.  The token carries a digest of the
# group's snapshots the receiver saw: send -t finds that the group
# changed before it sends a byte, and sync discards the partial state (it
# can never complete) and sends the group again, in the same run.  (Until
# the digest, the receiver found a skipped chunk missing at the end of a
# snapshot and discarded the state then.)  Before, every retry failed with "stream
# is invalid ...: tree chunk neither sent nor present" and kept the state:
# sync never converged without recv -A by hand.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
T=$TESTDIR/src
three_groups x w x
cat >"$TESTDIR/cutssh" <<SH
#!/bin/bash
shift
case "\$*" in
*"'recv' '-s'"*) head -c "\$(cat "$TESTDIR/cut")" | sh -c "\$*" ;;
*) exec sh -c "\$*" ;;
esac
SH
chmod +x "$TESTDIR/cutssh"
# group s1 is about 1.5M, tank@s2 0.5M: the cut is inside tank/w@s2
echo 2300000 >"$TESTDIR/cut"
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R tank "localhost:$B:tk" 2>/dev/null &&
	fail "the cut sync -R succeeded"
got=$(cb list -H -o name -t snapshot -r tk | tr '\n' ' ')
[ "$got" = "tk@s1 tk/w@s1 tk/x@s1 " ] || fail "the cut was not in group s2: $got"
[ "$(cb get -H -o value receive_resume_token tk 2>/dev/null)" != - ] ||
	fail "the cut sync -R left no partial state to resume"
# the group in flight loses its first snapshot: every position moves
ok ca destroy tank@s2
echo 100000000 >"$TESTDIR/cut"
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R tank "localhost:$B:tk" >"$TESTDIR/out" 2>"$TESTDIR/err" ||
	fail "BUG: sync -R after the group in flight changed: $(cat "$TESTDIR/err")"
grep -q "discarding the partial receive (tank/w@s2: the group in flight changed on the sender since the cut" "$TESTDIR/err" ||
	fail "the refused resume does not say why: $(cat "$TESTDIR/err")"
# refused by the sender, from the token's group digest, before a byte was
# sent: not by the receiver at the first skipped chunk it lacks
! grep -q "tk/w@s2: the resumed stream does not continue" "$TESTDIR/err" ||
	fail "the changed group was found by the receiver, late: $(cat "$TESTDIR/err")"
want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')
[ "$want" = "$(cb list -H -p -t snapshot -r -o name,guid tk)" ] ||
	fail "sync -R did not converge: $(cb list -H -o name -t snapshot -r tk | tr '\n' ' ')"
[ "$(cb get -H -o value receive_resume_token tk)" = - ] || fail "partial state left"
ok cb verify -r tk >/dev/null
ok cb restore tk/w@s2 "$TESTDIR/r"
cmp -s "$T/w/g2" "$TESTDIR/r/g2" || fail "tk/w@s2 content"
out=$(CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R -v tank "localhost:$B:tk" 2>&1) ||
	fail "sync again: $out"
echo "$out" | grep -q "up to date" || fail "sync again not a no-op: $out"

# An incremental sync cut in its second group, then the token's own
# incremental source destroyed on the source: planned as sync plans, each
# dataset's base is what the destination has now (tk2@s1, committed), so
# the cut group is resumed, not thrown away (before: "discarding the
# partial receive (resume token's incremental source is gone)").
A2=$TESTDIR/a2 B2=$TESTDIR/b2 T2=$TESTDIR/src2
ok "$CAIRN" -s "$A2" init >/dev/null
ok "$CAIRN" -s "$B2" init >/dev/null
mkdir -p "$T2/w"
rnd "$T2/f"; rnd "$T2/w/g"
ok "$CAIRN" -s "$A2" create -o source="$T2" tank
ok "$CAIRN" -s "$A2" create tank/w
ok "$CAIRN" -s "$A2" snapshot -r tank@s0
ok "$CAIRN" -s "$A2" sync -R tank "$B2:tk2"
rnd "$T2/f1"; rnd "$T2/w/g1"
ok "$CAIRN" -s "$A2" snapshot -r tank@s1
rnd "$T2/f2"; rnd "$T2/w/g2"
ok "$CAIRN" -s "$A2" snapshot -r tank@s2
echo 1700000 >"$TESTDIR/cut"
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN "$CAIRN" -s "$A2" sync -R tank "localhost:$B2:tk2" 2>/dev/null &&
	fail "the cut incremental sync -R succeeded"
got=$("$CAIRN" -s "$B2" list -H -o name -t snapshot -r tk2 | tr '\n' ' ')
[ "$got" = "tk2@s0 tk2@s1 tk2/w@s0 tk2/w@s1 " ] || fail "the cut was not in group s2: $got"
ok "$CAIRN" -s "$A2" destroy -r tank@s0
echo 100000000 >"$TESTDIR/cut"
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN "$CAIRN" -s "$A2" sync -R -v tank "localhost:$B2:tk2" >"$TESTDIR/out" 2>"$TESTDIR/err" ||
	fail "incremental sync -R after its source was destroyed: $(cat "$TESTDIR/err")"
! grep -q "discarding the partial receive" "$TESTDIR/err" ||
	fail "BUG: the cut group was thrown away: $(cat "$TESTDIR/err")"
grep -q "resumed the partial receive into tk2" "$TESTDIR/out" || fail "not resumed: $(cat "$TESTDIR/out")"
want=$("$CAIRN" -s "$A2" list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk2|')
got=$("$CAIRN" -s "$B2" list -H -p -t snapshot -r -o name,guid tk2 | grep -v @s0)
[ "$want" = "$got" ] || fail "incremental sync -R did not converge: $got"
done_test
