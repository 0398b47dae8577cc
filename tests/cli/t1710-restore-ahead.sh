#!/bin/bash
# Restore decodes chunks ahead on worker threads (lib/ahead.c) and writes
# them strictly in stream order.  A file of ~100 chunks between bundles of
# small files and other large files, restored with the default window and
# with windows of one and three chunks, is the same tree; a corrupt chunk in
# the middle of that file is named with the file, the restore finishes (no
# hang: under a timeout), exits 1, and every other file is still restored.
. "$(dirname "$0")/lib.sh"
new_store
S=$TESTDIR/src
mkdir -p "$S/a-small" "$S/d-small"
# bundles: small files before and after the big one (the bundle closes at
# the chunk size, so several bundles each side)
for i in $(seq 1 150); do
	head -c $((RANDOM % 3000 + 1)) /dev/urandom >"$S/a-small/f$i"
	head -c $((RANDOM % 3000 + 1)) /dev/urandom >"$S/d-small/f$i"
done
head -c 3000000 /dev/urandom >"$TESTDIR/A"
head -c 300000 /dev/urandom >"$TESTDIR/M"
head -c 3000000 /dev/urandom >"$TESTDIR/C"
head -c 1500000 /dev/urandom >"$S/c-after.bin"
truncate -s 5M "$S/e-sparse"
printf 'tail' >>"$S/e-sparse"
ln "$S/c-after.bin" "$S/d-small/hardlink"
ln -s ../c-after.bin "$S/d-small/symlink"
ok cairn create -o source="$S" -o chunksize=64K tank

# The chunks of big.bin = A+M+C that neither A nor C alone has: the ones
# around M, so in the middle of a file of ~100 chunks.
chunks() { find "$CAIRN_STORE/.chunks" -type f -size +20k -printf '%f\n' | sort; }
cp "$TESTDIR/A" "$S/big.bin"
ok cairn snapshot tank@a
cp "$TESTDIR/C" "$S/big.bin"
ok cairn snapshot tank@c
chunks >"$TESTDIR/ac.list"
cat "$TESTDIR/A" "$TESTDIR/M" "$TESTDIR/C" >"$S/big.bin"
ok cairn snapshot tank@one
chunks >"$TESTDIR/all.list"
mapfile -t middle < <(comm -13 "$TESTDIR/ac.list" "$TESTDIR/all.list")
[ ${#middle[@]} -ge 2 ] || fail "expected new chunks around M, got ${#middle[@]}"
nbig=$(cairn list -H -p -o referenced tank@one)
[ "$nbig" -gt 6000000 ] || fail "snapshot too small: $nbig"

# Sound store: the default window, one chunk at a time, three chunks.
for w in "" 1 200000; do
	r=$TESTDIR/r-ok$w
	CAIRN_RESTORE_WINDOW=$w timeout 120 "$CAIRN" restore tank@one "$r" ||
		fail "restore (window '$w') failed"
	same_tree "$S" "$r"
done

# A corrupt chunk in the middle of big.bin.
hex=${middle[$((${#middle[@]} / 2))]}
victim=$(find "$CAIRN_STORE/.chunks" -type f -name "$hex")
[ -f "$victim" ] || fail "chunk $hex not found"
printf 'XXXX' | dd of="$victim" bs=1 seek=100 conv=notrunc status=none
for w in "" 1 200000; do
	r=$TESTDIR/r-bad$w
	err=$(CAIRN_RESTORE_WINDOW=$w timeout 120 "$CAIRN" restore tank@one "$r" 2>&1)
	rc=$?
	[ $rc = 1 ] || fail "restore of a corrupt chunk (window '$w'): exit $rc: $err"
	echo "$err" | grep -q "chunk $hex" || fail "chunk not named (window '$w'): $err"
	echo "$err" | grep -q "file big.bin" || fail "file not named (window '$w'): $err"
	echo "$err" | grep -v "big.bin" | grep -q . &&
		fail "other files reported (window '$w'): $err"
	# big.bin is there up to the bad chunk at most; everything else whole
	[ -f "$r/big.bin" ] || fail "big.bin not created (window '$w')"
	rm -f "$r/big.bin"
	touch -r "$S" "$r"
	rm -rf "$TESTDIR/src-nobig"
	cp -a "$S" "$TESTDIR/src-nobig"
	rm -f "$TESTDIR/src-nobig/big.bin"
	touch -r "$S" "$TESTDIR/src-nobig"
	same_tree "$TESTDIR/src-nobig" "$r"
done

# The damaged chunk written again by a later backup heals the store.
rm -f "$victim"
ok cairn snapshot tank@two
ok cairn restore tank@two "$TESTDIR/r-healed"
cmp "$S/big.bin" "$TESTDIR/r-healed/big.bin" || fail "healed big.bin differs"
done_test
