#!/bin/bash
# verify judges an encrypted blob by the key that opens it: a blob whose
# GCM tag holds under root A's key but whose id does not match (another
# valid blob of A copied over it) is damage, even while root B's key is
# not loaded.  Before, a blob no loaded key fully decoded counted as good
# as soon as any root lacked its key: verify passed and marked the
# snapshot verified while its restore failed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
mkdir -p "$TESTDIR/a" "$TESTDIR/b"
head -c 600000 /dev/urandom >"$TESTDIR/a/big.bin"
echo hello >"$TESTDIR/b/f"
ok mkroot ra "$PASS1" -o compression=off -o chunksize=64K -o source="$TESTDIR/a"
ok mkroot rb "$PASS2" -o source="$TESTDIR/b"
ok cairn snapshot ra@1 rb@1
# without rb's key, rb's blobs are checked for structure and pass
ok cairn unload-key rb
ok cairn verify
sqlite3 "$CAIRN_STORE/catalog.db" "UPDATE snapshot SET lastverified = 0" || fail "resetting lastverified"
# two content chunks of big.bin (the only blobs over 16K): the second now
# holds the first's valid blob
set -- $(find "$CAIRN_STORE/.chunks" -type f -size +16k | sort | head -2)
[ $# -eq 2 ] || fail "fewer than two content chunks"
victim=$2
h=$(basename "$victim")
cp "$1" "$victim"
[ "$(keystatus rb)" = unavailable ] || fail "rb's key is still loaded"
[ "$(keystatus ra)" = available ] || fail "ra's key is not loaded"
out=$(cairn verify 2>&1)
[ $? -ne 0 ] || fail "verify passed over a swapped blob of ra while rb's key was unloaded: $out"
echo "$out" | grep -q "chunk $h" || fail "verify does not name the swapped chunk $h: $out"
lv=$(cairn get -H -p -o value lastverified ra@1 2>/dev/null)
[ "${lv:-0}" = 0 ] || [ "$lv" = - ] || fail "ra@1 was marked verified: $lv"
# rb's own blobs still pass without its key (checked for structure only)
[ -f "$victim.bad" ] || fail "the swapped chunk was not renamed .bad"
done_test
