#!/bin/bash
# A catalog over 64 MiB (many snapshots of large trees: each keeps the
# chunk lists of its tree and index streams) goes up to the bucket as
# meta/catalog.db after each command like any other.  The copy must come
# back: `init --import` used to read meta objects under the 64 MiB bound
# of chunk and listing answers and failed ("Failure writing output")
# however often it was run, so the bucket's only store copy was useless
# for the disaster it is kept for.  A catalog padded in a table of its
# own stands in for a big one (the real kind takes hours to grow).
# The same for a file:// location.  Chunk objects keep the 64 MiB bound.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_corpus_snapshot
ok cairn config s3_cache_mb=0
pad_catalog "$CAIRN_STORE/catalog.db"
# any write publishes the whole catalog
ok cairn set user:last=1 tank
size=$(stat -c %s "$CAIRN_STORE/catalog.db")
[ "$size" -gt $((64 << 20)) ] || fail "the catalog is only $size bytes"
[ -e "$CAIRN_STORE/catalog.remote-stale" ] && fail "the big catalog did not go up to the bucket"

# the machine is lost; the bucket rebuilds the store
rm -rf "$CAIRN_STORE"
out=$("$CAIRN" -s "$CAIRN_STORE" init --import "s3://$BUCKET/$PFX" 2>&1) || fail "import of a big catalog: $out"
[ "$(cairn get -H -o value user:last tank 2>/dev/null)" = 1 ] || fail "the imported catalog is not the last one"
rm -rf "$TESTDIR/r1"
ok cairn restore tank@1 "$TESTDIR/r1" >/dev/null
same_tree "$SRC" "$TESTDIR/r1"
ok cairn verify >/dev/null

# the same on a file:// location (its meta reads had the same bound)
F=$TESTDIR/fstore
ok "$CAIRN" -s "$F" init --chunks "file://$TESTDIR/fchunks" >/dev/null
ok "$CAIRN" -s "$F" create -o source="$SRC" -o chunksize=64K ftank
ok "$CAIRN" -s "$F" snapshot ftank@1 >/dev/null
pad_catalog "$F/catalog.db"
ok "$CAIRN" -s "$F" set user:last=1 ftank
rm -rf "$F"
out=$("$CAIRN" -s "$F" init --import "file://$TESTDIR/fchunks" 2>&1) || fail "file:// import of a big catalog: $out"
[ "$("$CAIRN" -s "$F" get -H -o value user:last ftank 2>/dev/null)" = 1 ] || fail "file://: the imported catalog is not the last one"

# chunk answers keep their bound: an object over 64 MiB where a chunk
# should be is an error that says so (not a 64 MiB download per try)
victim=$("$S3TOOL" ls "$BUCKET" "$PFX/chunks/" | head -n 1)
head -c $((65 << 20)) /dev/zero >"$TESTDIR/huge"
ok "$S3TOOL" put "$BUCKET" "$victim" "$TESTDIR/huge"
rm -f "$TESTDIR/huge"
fails_with 1 "answer over 67108864 bytes" cairn verify
done_test
