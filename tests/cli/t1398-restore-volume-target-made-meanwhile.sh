#!/bin/bash
# A volume's target that was not there when judged is made by the restore
# (an exclusive create), so that nothing made there meanwhile is written
# through or over.  Something made there between the judging and the
# create (a shim runs the command just before the open) is refused with a
# reason naming the target, not a bare "File exists", and is left as it
# was; the same command run again judges what is there now: a symlink to
# nothing is refused, an empty file is restored into (full fidelity: the
# same bytes).
. "$(dirname "$0")/lib.sh"
new_store
random_volume 300000 1
build_shim run-before

# made_meanwhile NAME CMD: restores onto $TESTDIR/NAME, which CMD makes
# just before the restore's open of it; the open is refused.
made_meanwhile() {
	rm -f "$TESTDIR/run.log"
	out=$(env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" RUN_CALL=open RUN_AT="$TESTDIR/$1" \
		RUN_LOG="$TESTDIR/run.log" RUN_CMD="$2" "$CAIRN" restore vol@1 "$TESTDIR/$1" 2>&1) &&
		fail "$1: a restore onto a target made meanwhile succeeded"
	grep -q "^ran 0$" "$TESTDIR/run.log" 2>/dev/null || fail "$1: the target was not made before the open"
	[ "$out" = "cairn: restore: $TESTDIR/$1: target made by another program meanwhile; not written (run it again)" ] ||
		fail "$1: the target made meanwhile: $out"
}
made_meanwhile link "ln -s '$TESTDIR/nothere' '$TESTDIR/link'"
[ ! -e "$TESTDIR/nothere" ] || fail "the restore wrote through the symlink"
fails_with 1 "$TESTDIR/link: target is a symlink to nothing, not written through" \
	cairn restore vol@1 "$TESTDIR/link"
made_meanwhile file ": >'$TESTDIR/file'"
[ -f "$TESTDIR/file" ] && [ ! -s "$TESTDIR/file" ] || fail "the file made meanwhile changed"
ok cairn restore vol@1 "$TESTDIR/file"
cmp "$TESTDIR/vol.img" "$TESTDIR/file" || fail "the image restored again differs"
done_test
