#!/bin/bash
# A flipped bit in an encrypted blob: restore names the chunk and the file
# (GCM tag / checksum), verify finds it with the key loaded and without it
# (ciphertext checksum), and GC, holds and verify of a root without key
# work.  A damaged wrapped key in the catalog is reported, never accepted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 1500000 /dev/urandom >"$SRC/big.bin"
echo small >"$SRC/small.txt"
ok mkroot tank "$PASS1" -o source="$SRC" -o chunksize=64K -o compression=off
ok cairn snapshot tank@one
ok cairn verify

flipbyte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\x$(printf %02x $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# content chunks of big.bin are the only blobs over 16K
victim=$(find "$CAIRN_STORE/.chunks" -type f -size +16k | head -1)
[ -n "$victim" ] || fail "no content chunk found"
h=$(basename "$victim")
flipbyte "$victim" 5000
cp "$victim" "$TESTDIR/damaged"

out=$(cairn restore tank@one "$TESTDIR/r" 2>&1)
[ $? = 1 ] || fail "restore of a damaged encrypted chunk: exit not 1: $out"
echo "$out" | grep -q "big.bin.*chunk $h: data is corrupt" || fail "restore names chunk and file: $out"
cmp -s "$SRC/small.txt" "$TESTDIR/r/small.txt" || fail "restore went on with the other files"

# with the key
out=$(cairn verify 2>&1)
[ $? = 1 ] || fail "verify with key: exit not 1: $out"
echo "$out" | grep -q "chunk $h" || fail "verify with key names the chunk: $out"
echo "$out" | grep "chunk $h" | grep -q "file big.bin" || fail "verify with key names the file: $out"
[ -e "$victim.bad" ] || fail "bad chunk not renamed"
# without the key: the ciphertext checksum catches it, no file names
mv "$TESTDIR/damaged" "$victim" && rm -f "$victim.bad"
ok cairn unload-key tank
out=$(cairn verify 2>&1)
[ $? = 1 ] || fail "verify without key: exit not 1: $out"
echo "$out" | grep -q "chunk $h (snapshot tank@one" || fail "verify without key names the chunk: $out"

# heal: a new backup rewrites the chunk; then everything verifies again,
# with and without the key, and GC/holds/prune need no key
ok cairn load-key tank <<<"$PASS1"
ok cairn snapshot tank@two
ok cairn verify
ok cairn restore tank@one "$TESTDIR/r2"
cmp "$SRC/big.bin" "$TESTDIR/r2/big.bin" || fail "healed restore"
ok cairn unload-key tank
ok cairn verify
ok cairn hold keep tank@one
ok cairn config gc_atime_cutoff=0
ok cairn gc >/dev/null
ok cairn release keep tank@one
ok cairn destroy tank@two
ok cairn gc >/dev/null
ok cairn verify
ok cairn load-key tank <<<"$PASS1"
rm -rf "$TESTDIR/r2" && ok cairn restore tank@one "$TESTDIR/r2"
cmp "$SRC/big.bin" "$TESTDIR/r2/big.bin" || fail "restore after gc without key"
ok cairn unload-key tank

# a damaged wrapped key: never unwraps, says so, changes nothing
sqlite3 "$CAIRN_STORE/catalog.db" \
	"UPDATE cryptkey SET keyblob = substr(keyblob, 1, 100) ||
	 CASE WHEN substr(keyblob, 101, 1) = x'00' THEN x'01' ELSE x'00' END || substr(keyblob, 102)" ||
	fail "sqlite update"
out=$(cairn load-key tank <<<"$PASS1" 2>&1)
[ $? = 1 ] || fail "load-key with a damaged key blob succeeded: $out"
echo "$out" | grep -q "tank: incorrect key" || fail "damaged key blob: $out"
sqlite3 "$CAIRN_STORE/catalog.db" "UPDATE cryptkey SET keyblob = x'00'" || fail "sqlite update"
out=$(cairn load-key tank <<<"$PASS1" 2>&1)
[ $? = 1 ] || fail "load-key with a truncated key blob succeeded"
echo "$out" | grep -q "wrapped key missing or damaged" || fail "truncated key blob: $out"
[ "$(keystatus tank)" = unavailable ] || fail "a damaged key blob loaded a key"
done_test
