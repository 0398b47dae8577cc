#!/bin/bash
# Small files are packed into bundles, and a changed small file re-packs
# only its own bundle: an incremental backup reads that bundle's files and
# writes one new bundle, not the whole directory again.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
# 400 small files of 1000..2999 bytes (about 800K): with 64K chunks a
# bundle closes at 64K, so a dozen or more bundles
for i in $(seq -w 1 400); do head -c $((1000 + RANDOM % 2000)) /dev/urandom >"$SRC/f$i"; done
total=$(cat "$SRC"/f* | wc -c)
ok cairn create -o source="$SRC" -o chunksize=64K -o compression=off tank
out=$(cairn snapshot -v -p tank@1 2>&1) || fail "first backup: $out"
nchunks=$(find "$CAIRN_STORE/.chunks" -type f | wc -l)
echo "400 files, $total bytes: $nchunks chunk files"
# packed: far fewer chunk files than files (bundles plus tree and index)
[ "$nchunks" -le 40 ] || fail "400 small files made $nchunks chunk files: not packed"
[ "$nchunks" -ge 10 ] || fail "400 small files (800K) in $nchunks chunks: bundles above 64K?"
bundles=$(find "$CAIRN_STORE/.chunks" -type f -size +40k | wc -l)
[ "$bundles" -ge 8 ] || fail "only $bundles chunk files above 40K"

# change one file in the middle: one bundle is read again and stored anew
printf 'changed' >>"$SRC/f200"
before=$(find "$CAIRN_STORE/.chunks" -type f | sort)
out=$(cairn snapshot -v -p tank@2 2>&1) || fail "incremental backup: $out"
read_bytes=$(echo "$out" | sed -n 's/.* files, \([0-9]*\) read,.*/\1/p')
new_chunks=$(echo "$out" | sed -n 's/.* \([0-9]*\) new chunks,.*/\1/p')
echo "after one change: $read_bytes bytes read, $new_chunks new chunks"
[ -n "$read_bytes" ] && [ "$read_bytes" -ge "$(stat -c %s "$SRC/f200")" ] ||
	fail "the changed file was not read: $out"
# one bundle: at most 64K plus the file that closed it
[ "$read_bytes" -le $((65536 + 3000)) ] || fail "read $read_bytes bytes for one changed small file: more than its bundle"
# the new bundle, plus new tree and index chunks
[ -n "$new_chunks" ] && [ "$new_chunks" -ge 1 ] && [ "$new_chunks" -le 4 ] ||
	fail "one changed small file made ${new_chunks:-?} new chunks: $out"
added=$(comm -13 <(echo "$before") <(find "$CAIRN_STORE/.chunks" -type f | sort))
big_added=$(for f in $added; do [ "$(stat -c %s "$f")" -gt 40000 ] && echo "$f"; done | wc -l)
[ "$big_added" -le 1 ] || fail "$big_added new bundle-sized chunks for one changed file"

# both snapshots restore exactly
ok cairn restore tank@2 "$TESTDIR/r2"
same_tree "$SRC" "$TESTDIR/r2"
ok cairn restore tank@1 "$TESTDIR/r1"
cmp -s "$TESTDIR/r1/f199" "$SRC/f199" || fail "tank@1 f199"
[ "$(tail -c 7 "$TESTDIR/r1/f200")" != changed ] || fail "tank@1 has the later f200"
[ "$(tail -c 7 "$TESTDIR/r2/f200")" = changed ] || fail "tank@2 lacks the change"
done_test
