#!/bin/bash
# Volumes: fixed-size chunks, zero runs stored as holes, exact images back.
. "$(dirname "$0")/lib.sh"
new_store
IMG=$TESTDIR/disk.img
truncate -s 40M "$IMG"
head -c 5000000 /dev/urandom | dd of="$IMG" bs=1M seek=3 conv=notrunc status=none
head -c 1000000 /dev/urandom | dd of="$IMG" bs=1M seek=30 conv=notrunc status=none
ok cairn create -V -o source="$IMG" vol
ok cairn snapshot vol@one
ok cairn restore vol@one "$TESTDIR/out.img"
cmp "$IMG" "$TESTDIR/out.img" || fail "image differs"
[ "$(stat -c %s "$TESTDIR/out.img")" = $((40 << 20)) ] || fail "image size"
[ "$(stat -c %b "$TESTDIR/out.img")" -lt 20000 ] || fail "zero runs not sparse on restore"
fails_with 1 "not empty" "$CAIRN" restore vol@one "$TESTDIR/out.img"
# a changed block only stores that block
echo x | dd of="$IMG" bs=1 seek=100 conv=notrunc status=none
out=$(cairn snapshot -v vol@two 2>&1)
echo "$out" | grep -q ' 1 new chunks\| 2 new chunks\| 3 new chunks' || fail "volume incremental: $out"
ok cairn restore vol@two "$TESTDIR/out2.img"
cmp "$IMG" "$TESTDIR/out2.img" || fail "image two differs"
done_test
