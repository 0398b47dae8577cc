#!/bin/bash
# A resumed sync -R cut between groups: the resume commits the group it
# finished (the one cut before) and the stream stops right after that
# group's end, before the next group has sent anything, so the receiver
# keeps no partial state (nothing was in flight).  sync then sends the
# rest, once, and says what happened: the resume committed its group.
# (It said "the partial receive was discarded there; sending again",
# which was not so.)
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
T=$TESTDIR/src
three_groups w w # ca runs cairn on the store, cb on the second one, $B
# after_groupend: copies a stream up to the end of its first GROUPEND
# record (type 8), then stops, as a link cut right there would
cat >"$TESTDIR/after_groupend" <<'PY'
import sys
i, o = sys.stdin.buffer, sys.stdout.buffer
o.write(i.read(12))  # "CAIRNSND", u32 version
while True:
    h = i.read(5)
    if len(h) < 5:
        break
    n = int.from_bytes(h[1:5], "little")
    o.write(h + i.read(n + 8))  # payload, XXH3-64
    if h[0] == 8:
        break
o.flush()
PY
# the ssh stand-in: each recv is logged; the first is cut as $TESTDIR/cut says
cat >"$TESTDIR/cutssh" <<SH
#!/bin/bash
shift
case "\$*" in
*"'recv' '-s'"*)
	echo recv >>"$TESTDIR/recvs"
	case \$(cat "$TESTDIR/cut") in
	group) echo none >"$TESTDIR/cut"; python3 "$TESTDIR/after_groupend" | sh -c "\$*" ;;
	none) exec sh -c "\$*" ;;
	*) head -c "\$(cat "$TESTDIR/cut")" | sh -c "\$*" ;;
	esac ;;
*) exec sh -c "\$*" ;;
esac
SH
chmod +x "$TESTDIR/cutssh"
sync_R() { CAIRN_SSH=$TESTDIR/cutssh CAIRN_REMOTE=$CAIRN ca sync -R "$@" tank "localhost:$B:tk"; }
# group s1 is about 1M, tank@s2 0.5M: the cut is inside group s2
echo 1800000 >"$TESTDIR/cut"
sync_R 2>/dev/null && fail "the cut sync -R succeeded"
got=$(cb list -H -o name -t snapshot -r tk | tr '\n' ' ')
[ "$got" = "tk@s1 tk/w@s1 " ] || fail "the cut was not in group s2: $got"
[ "$(cb get -H -o value receive_resume_token tk 2>/dev/null)" != - ] ||
	fail "the cut sync -R left no partial state to resume"
# the resume finishes group s2 and is cut right after it
echo group >"$TESTDIR/cut"
: >"$TESTDIR/recvs"
sync_R >"$TESTDIR/out" 2>"$TESTDIR/err" || fail "sync -R after a resume cut between groups: $(cat "$TESTDIR/err")"
[ "$(wc -l <"$TESTDIR/recvs")" = 2 ] || fail "not one resume and one send: $(wc -l <"$TESTDIR/recvs") receives"
grep -q "discarded" "$TESTDIR/err" && fail "BUG: says the partial receive was discarded: $(cat "$TESTDIR/err")"
# sync goes on by itself: the resume's failure does not ask for a rerun
grep -q "run sync again" "$TESTDIR/err" && fail "BUG: asks to run sync again, though it goes on: $(cat "$TESTDIR/err")"
grep -q "^cairn: sync: tk: the resumed receive committed 2 snapshot(s) before it stopped and left no partial state; sending the rest$" "$TESTDIR/err" ||
	fail "does not say the resume committed its group: $(cat "$TESTDIR/err")"
want=$(ca list -H -p -t snapshot -r -o name,guid tank | sed 's|^tank|tk|')
[ "$want" = "$(cb list -H -p -t snapshot -r -o name,guid tk)" ] ||
	fail "sync -R did not converge: $(cb list -H -o name -t snapshot -r tk | tr '\n' ' ')"
[ "$(cb get -H -o value receive_resume_token tk)" = - ] || fail "partial state left"
ok cb restore tk/w@s3 "$TESTDIR/r"
cmp -s "$T/w/g3" "$TESTDIR/r/g3" || fail "tk/w@s3 content"
done_test
