#!/bin/bash
# A damaged or missing chunk: restore names the chunk and the file, exits
# non-zero, and restores the rest.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src"
head -c 2000000 /dev/urandom >"$TESTDIR/src/a.bin"
head -c 2000000 /dev/urandom >"$TESTDIR/src/b.bin"
echo small >"$TESTDIR/src/c.txt"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn snapshot tank@one
# find a chunk of a.bin by content: its first chunk starts with a.bin's first bytes
victim=""
for f in $(find "$CAIRN_STORE/.chunks" -type f -size +100k); do
	victim=$f; break
done
[ -n "$victim" ] || fail "no chunk found"
hex=$(basename "$victim")
printf 'XXXX' | dd of="$victim" bs=1 seek=100 conv=notrunc status=none
err=$("$CAIRN" restore tank@one "$TESTDIR/r" 2>&1); rc=$?
[ $rc = 1 ] || fail "restore of corrupt chunk exit $rc"
echo "$err" | grep -q "chunk $hex" || fail "chunk not named: $err"
echo "$err" | grep -q "file [ab].bin" || fail "file not named: $err"
[ "$(cat "$TESTDIR/r/c.txt")" = small ] || fail "other files not restored"
rm -f "$victim"
err=$("$CAIRN" restore tank@one "$TESTDIR/r2" 2>&1); rc=$?
[ $rc = 1 ] || fail "restore of missing chunk exit $rc"
echo "$err" | grep -q "missing" || fail "missing not reported: $err"
# a later backup of the same data heals the store
ok cairn snapshot tank@two
ok cairn restore tank@two "$TESTDIR/r3"
cmp "$TESTDIR/src/a.bin" "$TESTDIR/r3/a.bin" || fail "heal"
done_test
