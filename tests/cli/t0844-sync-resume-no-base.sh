#!/bin/bash
# An incremental sync -R cut in its first group, then its incremental
# source (tank@s0, the only snapshot the destination has) destroyed on
# the source: the resume has no base for the top there, so send -t
# refuses it ("resume token's incremental source is gone, and the
# receiver has no other base for tank") and sync discards the partial
# state (once the destination has nothing of its own to refuse: a refused
# sync keeps it, t1750), then sends whole.  Without that
# refusal the top was planned whole, the receiver refused the full stream
# ("destination has snapshots") and kept the state: every sync resumed
# it again, and failed, until recv -A by hand.  (t0846 is the case where
# another base is there: resumed, not discarded.)
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
A=$TESTDIR/a B=$TESTDIR/b T=$TESTDIR/src
ca() { "$CAIRN" -s "$A" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
cat >"$TESTDIR/cutssh" <<SH
#!/bin/bash
shift
case "\$*" in
*"'recv' '-s'"*) head -c "\$(cat "$TESTDIR/cut")" | sh -c "\$*" ;;
*) exec sh -c "\$*" ;;
esac
SH
chmod +x "$TESTDIR/cutssh"
ok ca init >/dev/null
ok cb init >/dev/null
mkdir -p "$T/w"
rnd "$T/f"; rnd "$T/w/g"
ok ca create -o source="$T" tank
ok ca create tank/w
ok ca snapshot -r tank@s0
ok ca sync -R tank "$B:tk"
rnd "$T/f1"; rnd "$T/w/g1"
ok ca snapshot -r tank@s1
echo 700000 >"$TESTDIR/cut"
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R tank "localhost:$B:tk" 2>/dev/null &&
	fail "the cut sync -R succeeded"
[ "$(cb list -H -o name -t snapshot -r tk | tr '\n' ' ')" = "tk@s0 tk/w@s0 " ] ||
	fail "the cut was not in the first group"
case $(cb get -H -o value receive_resume_token tk) in 3-*) ;; *) fail "no partial state" ;; esac
ok ca destroy -r tank@s0
echo 100000000 >"$TESTDIR/cut"
# Nothing in common there now: sync refuses before it resumes anything,
# and a refused sync changes nothing, the dead partial state included
# (t1750).  (It used to discard the state first, then refuse.)
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R tank "localhost:$B:tk" 2>"$TESTDIR/err" &&
	fail "sync -R with no base succeeded"
grep -q "has snapshots (eg. tk@s0) but none in common with tank" "$TESTDIR/err" ||
	fail "no 'none in common': $(cat "$TESTDIR/err")"
grep -q discarding "$TESTDIR/err" && fail "a refused sync discarded the partial state: $(cat "$TESTDIR/err")"
case $(cb get -H -o value receive_resume_token tk) in 3-*) ;; *) fail "a refused sync changed the partial state" ;; esac
# Once the destination's snapshots are gone (as the refusal advises), the
# dead state is discarded (the source can no longer plan it) and the
# subtree sent whole, in one run.
ok cb destroy -r tk@s0
CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R tank "localhost:$B:tk" 2>"$TESTDIR/err" ||
	fail "sync -R after the destroy: $(cat "$TESTDIR/err")"
grep -q "tk: discarding the partial receive (resume token's incremental source is gone, and the receiver has no other base for tank)" \
	"$TESTDIR/err" || fail "BUG: the dead resume is not refused: $(cat "$TESTDIR/err")"
[ "$(cb get -H -o value receive_resume_token tk)" = - ] || fail "BUG: the dead partial state was kept"
[ "$(cb list -H -p -t snapshot -r -o name,guid tk)" = "$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')" ] ||
	fail "sync did not converge"
done_test
