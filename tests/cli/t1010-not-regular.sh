#!/bin/bash
# Store files that are not regular files (issue 10, item 2): a FIFO or a
# symlink planted where a chunk, the catalog or gc.lock should be must not
# hang or redirect any reader.  A chunk that is not a regular file is
# corrupt: verify names it and quarantines it as <digest>.bad, restore and
# send fail naming it, GC does not hang.  Every command runs under
# `timeout`: a hang is a failure (exit 124), not a stuck test.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 400000 /dev/urandom >"$SRC/f.bin"
echo hello >"$SRC/small.txt"
ok cairn create -o source="$SRC" -o chunksize=64K ta
ok cairn snapshot ta@1
T="timeout 60"

# A content chunk of f.bin (not a tree or index chunk): the biggest file.
victim=$(find "$CAIRN_STORE/.chunks" -type f -printf '%s %p\n' | sort -n | tail -n 1 | cut -d' ' -f2)
hex=$(basename "$victim")
rm "$victim"
mkfifo "$victim"

rc=0
out=$($T "$CAIRN" restore ta@1 "$TESTDIR/r" 2>&1) || rc=$?
[ $rc -ne 124 ] || fail "restore hangs on a FIFO chunk"
[ $rc -ne 0 ] || fail "restore succeeded over a FIFO chunk"
echo "$out" | grep -q "$hex" || fail "restore does not name the chunk: $out"

rc=0
out=$($T "$CAIRN" send ta@1 2>&1 >/dev/null) || rc=$?
[ $rc -ne 124 ] || fail "send hangs on a FIFO chunk"
[ $rc -ne 0 ] || fail "send succeeded over a FIFO chunk"
echo "$out" | grep -q "$hex" || fail "send does not name the chunk: $out"

rc=0
out=$($T "$CAIRN" gc -n 2>&1) || rc=$?
[ $rc -ne 124 ] || fail "gc -n hangs on a FIFO chunk"

rc=0
out=$($T "$CAIRN" verify 2>&1) || rc=$?
[ $rc -ne 124 ] || fail "verify hangs on a FIFO chunk"
[ $rc -ne 0 ] || fail "verify passed a FIFO chunk"
echo "$out" | grep -q "$hex" || fail "verify does not name the chunk: $out"
[ -p "$victim.bad" ] || fail "FIFO chunk not quarantined as .bad: $(ls -l "$(dirname "$victim")")"
[ ! -e "$victim" ] || fail "FIFO chunk left in place"

# A symlink chunk pointing outside the store: corrupt, not followed.
rm -f "$victim.bad"
cp "$SRC/f.bin" "$TESTDIR/outside"
ln -s "$TESTDIR/outside" "$victim"
rc=0
out=$($T "$CAIRN" verify 2>&1) || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "verify over a symlink chunk: exit $rc"
echo "$out" | grep -q "$hex" || fail "verify does not name the symlink chunk: $out"
[ -L "$victim.bad" ] || fail "symlink chunk not quarantined as .bad"
[ -f "$TESTDIR/outside" ] || fail "the symlink's target was touched"
rm -f "$victim.bad"

# The backup heals it; then the catalog and gc.lock.
ok cairn snapshot ta@2
ok cairn verify
mv "$CAIRN_STORE/catalog.db" "$TESTDIR/catalog.db"
mkfifo "$CAIRN_STORE/catalog.db"
rc=0
out=$($T "$CAIRN" list 2>&1) || rc=$?
[ $rc -ne 124 ] || fail "list hangs on a FIFO catalog"
[ $rc -ne 0 ] || fail "list succeeded on a FIFO catalog"
rm "$CAIRN_STORE/catalog.db"
mv "$TESTDIR/catalog.db" "$CAIRN_STORE/catalog.db"
ok cairn list >/dev/null

rm -f "$CAIRN_STORE/gc.lock"
ln -s "$TESTDIR/elsewhere" "$CAIRN_STORE/gc.lock"
rc=0
out=$($T "$CAIRN" gc 2>&1) || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "gc with a symlink gc.lock: exit $rc"
echo "$out" | grep -q "gc.lock" || fail "gc does not name gc.lock: $out"
[ ! -e "$TESTDIR/elsewhere" ] || fail "gc created the symlink's target"
rm "$CAIRN_STORE/gc.lock"
ok cairn gc
ok cairn verify
done_test
