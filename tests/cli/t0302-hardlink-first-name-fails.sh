#!/bin/bash
# When the first name of a hardlinked inode cannot be recorded, the next
# readable name becomes the first one.  Here the first name of an empty
# file is too long as a whole path (source root + path >= PATH_MAX) for its
# xattrs to be read by path, though it fits relative to the root; the
# inode's other name must still be in the snapshot.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/b"
comp=$(printf 'x%.0s' $(seq 1 200))
p=a
while [ ${#p} -lt 3830 ]; do p="$p/$comp"; done
p="$p/$(printf 'y%.0s' $(seq 1 $((4080 - ${#p} - 3))))"
mkdir -p "$SRC/$p"
(cd "$SRC" && cd "$p" && : >e && ln e "$SRC/b/later")
full=$((${#SRC} + 1 + ${#p} + 2))
[ "$full" -ge 4096 ] || fail "the first name's whole path ($full) should reach PATH_MAX"
[ "$SRC/a" \< "$SRC/b" ] || fail "a/... must be walked before b/later"
cairn create -o source="$SRC" tank >/dev/null
out=$(cairn snapshot tank@one 2>&1)
echo "$out" | grep -q "File name too long" || fail "the long name was not reported: $out"
echo "$out" | grep -q "b/later" && fail "b/later was left out: $out"
ok cairn restore tank@one "$TESTDIR/r"
[ -f "$TESTDIR/r/b/later" ] || fail "b/later (a readable name of the inode) is missing"
done_test
