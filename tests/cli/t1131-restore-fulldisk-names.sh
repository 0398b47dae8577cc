#!/bin/bash
# A restore that fills its disk names what it could not write and why,
# exits 1 and writes nothing outside its target.  A volume's image is
# named by its target (it said "/: write: No space left on device", as if
# the root filesystem were full); a tree's files by their paths.
. "$(dirname "$0")/lib.sh"
new_store
small_disk 1M
head -c 3000000 /dev/urandom >"$TESTDIR/vol.img"
ok cairn create -V -o source="$TESTDIR/vol.img" vol
ok cairn snapshot vol@1
fails_with 1 "^cairn: restore: $MNT/v.img: write: No space left on device$" cairn restore vol@1 "$MNT/v.img"
rm -f "$MNT/v.img"
mkdir -p "$TESTDIR/src/d"
head -c 3000000 /dev/urandom >"$TESTDIR/src/d/big"
echo small >"$TESTDIR/src/a"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn snapshot tank@1
touch "$MNT/outside"
before=$(stat -c '%s %Y %a' "$MNT/outside")
# One writer: a (in path order before d/big) is written before d/big
# fills the disk.  With several, d/big could take the last page first
# (then a is named with its reason, but this test wants both cases).
CAIRN_RESTORE_THREADS=1 "$CAIRN" restore tank@1 "$MNT/r" 2>"$TESTDIR/err"
rc=$?
[ $rc = 1 ] || fail "a restore onto a full disk: exit $rc"
grep -q "^cairn: restore: d/big: write: No space left on device$" "$TESTDIR/err" ||
	fail "d/big not named with its reason: $(cat "$TESTDIR/err")"
[ "$(cat "$MNT/r/a")" = small ] || fail "a, which fits, was not restored"
[ "$(stat -c '%s %Y %a' "$MNT/outside")" = "$before" ] || fail "a file beside the target changed"
[ "$(ls "$MNT" | tr '\n' ' ')" = "outside r " ] || fail "restore wrote beside its target: $(ls "$MNT")"
done_test
