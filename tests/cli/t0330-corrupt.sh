#!/bin/bash
# A damaged or missing chunk: restore names the chunk and the file, exits
# non-zero, and restores the rest.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src"
head -c 2000000 /dev/urandom >"$TESTDIR/src/a.bin"
ok cairn create -o source="$TESTDIR/src" tank
# a.bin's chunks: the data chunks of a snapshot of a.bin alone (the tree
# and index chunks are small); the snapshot with the other files reuses them
ok cairn snapshot tank@alone
mapfile -t achunks < <(find "$CAIRN_STORE/.chunks" -type f -size +100k)
[ ${#achunks[@]} -ge 1 ] || fail "no chunk of a.bin found"
head -c 2000000 /dev/urandom >"$TESTDIR/src/b.bin"
echo small >"$TESTDIR/src/c.txt"
touch -d 2001-01-01 "$TESTDIR/src/a.bin" "$TESTDIR/src/b.bin"
ok cairn snapshot tank@one
ok cairn destroy tank@alone
victim=${achunks[$((RANDOM % ${#achunks[@]}))]}
[ -f "$victim" ] || fail "a.bin's chunk $victim is gone"
hex=$(basename "$victim")
printf 'XXXX' | dd of="$victim" bs=1 seek=100 conv=notrunc status=none
err=$("$CAIRN" restore tank@one "$TESTDIR/r" 2>&1); rc=$?
[ $rc = 1 ] || fail "restore of corrupt chunk exit $rc"
echo "$err" | grep -q "chunk $hex" || fail "chunk not named: $err"
echo "$err" | grep -q "file a.bin" || fail "file not named: $err"
echo "$err" | grep -q "b.bin" && fail "b.bin named, its chunks are sound: $err"
cmp -s "$TESTDIR/src/b.bin" "$TESTDIR/r/b.bin" || fail "b.bin not restored"
# the damaged file is not stamped as complete: no recorded mode or mtime
[ "$(stat -c %a "$TESTDIR/r/a.bin")" = 600 ] ||
	fail "the partly restored a.bin got mode $(stat -c %a "$TESTDIR/r/a.bin")"
[ "$(stat -c %Y "$TESTDIR/r/a.bin")" != "$(stat -c %Y "$TESTDIR/src/a.bin")" ] ||
	fail "the partly restored a.bin got the recorded mtime"
[ "$(stat -c %Y "$TESTDIR/r/b.bin")" = "$(stat -c %Y "$TESTDIR/src/b.bin")" ] ||
	fail "b.bin lacks its recorded mtime"
[ "$(cat "$TESTDIR/r/c.txt")" = small ] || fail "other files not restored"
rm -f "$victim"
err=$("$CAIRN" restore tank@one "$TESTDIR/r2" 2>&1); rc=$?
[ $rc = 1 ] || fail "restore of missing chunk exit $rc"
echo "$err" | grep -q "missing" || fail "missing not reported: $err"
echo "$err" | grep -q "file a.bin" || fail "file not named for a missing chunk: $err"
# a later backup of the same data heals the store
ok cairn snapshot tank@two
ok cairn restore tank@two "$TESTDIR/r3"
cmp "$TESTDIR/src/a.bin" "$TESTDIR/r3/a.bin" || fail "heal"
done_test
