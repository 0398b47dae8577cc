#!/bin/bash
# A resume that fails and leaves the partial receive where it was (the
# link dropped before the resumed receive began: ssh's exit 255) ends
# the sync: its message must still say what to do, as any other failed
# sync does.  3e11429 dropped 'run sync again' for every failed resume,
# since one that leaves no partial state is followed by a send in the
# same run; this one is not followed by anything.  The next sync resumes
# and converges.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
A=$CAIRN_STORE T=$TESTDIR/src
new_store # ca runs cairn on it, cb on the second store, $B
second_store
ok ca config chunk_size=65536 >/dev/null
mkdir -p "$T/w"
rnd() { head -c 500000 /dev/urandom >"$1"; }
rnd "$T/f"; rnd "$T/w/g"
ok ca create -o source="$T" tank
ok ca create tank/w
ok ca snapshot -r tank@s1
rnd "$T/f2"; rnd "$T/w/g2"
ok ca snapshot -r tank@s2
# the ssh stand-in: a recv is cut after $TESTDIR/cut bytes, or refused
# as ssh refuses a link that is down ("down"), or let through ("none")
cat >"$TESTDIR/cutssh" <<SH
#!/bin/bash
shift
case "\$*" in
*"'recv' '-s'"*)
	case \$(cat "$TESTDIR/cut") in
	none) exec sh -c "\$*" ;;
	down) echo "ssh: connect to host localhost port 22: Connection refused" >&2; exit 255 ;;
	*) head -c "\$(cat "$TESTDIR/cut")" | sh -c "\$*" ;;
	esac ;;
*) exec sh -c "\$*" ;;
esac
SH
chmod +x "$TESTDIR/cutssh"
sync_R() { CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R "$@" tank "localhost:$B:tk"; }
echo 1800000 >"$TESTDIR/cut"
sync_R 2>/dev/null && fail "the cut sync -R succeeded"
tok=$(cb get -H -o value receive_resume_token tk 2>/dev/null)
[ -n "$tok" ] && [ "$tok" != - ] || fail "the cut sync -R left no partial state to resume"
# the resume cannot reach the destination: the partial state stays
echo down >"$TESTDIR/cut"
sync_R >"$TESTDIR/out" 2>"$TESTDIR/err" && fail "sync -R succeeded though its resume could not connect"
[ "$(cb get -H -o value receive_resume_token tk)" = "$tok" ] || fail "the partial state changed"
grep -q "Connection refused" "$TESTDIR/err" || fail "the reason is not said: $(cat "$TESTDIR/err")"
grep -q "run sync again" "$TESTDIR/err" ||
	fail "BUG: sync stopped but does not say to run it again: $(cat "$TESTDIR/err")"
# and the next one resumes and converges
echo none >"$TESTDIR/cut"
sync_R >"$TESTDIR/out" 2>"$TESTDIR/err" || fail "sync -R after the failed resume: $(cat "$TESTDIR/err")"
want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')
[ "$want" = "$(cb list -H -p -t snapshot -r -o name,guid tk)" ] || fail "sync -R did not converge"
[ "$(cb get -H -o value receive_resume_token tk)" = - ] || fail "partial state left"
done_test
