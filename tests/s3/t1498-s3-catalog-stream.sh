#!/bin/bash
# The catalog copy may be up to 4 GiB (meta objects' bound), but init
# --import read it whole into memory before writing it out (as much RAM
# as the catalog, and more while the buffer grew), and plain init read
# the whole of it only to learn that the prefix holds a store.  Both now
# stream it to a file: a 70 MiB catalog (padded, as in t1492) is
#  1. imported from S3 in little memory, the same also when its first GET
#     is cut halfway (tests/s3/faultproxy.py meta-cut-first: the retry
#     starts the file again);
#  2. refused by init --chunks on its prefix in little memory;
#  3. imported from a file:// location in little memory.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
# rss_under KIB CMD...: CMD must succeed with a peak resident size under KIB.
rss_under() { peak_rss "$@" || fail "failed: ${*:2} : $(head -c 600 "$TESTDIR/out")"; }
rm -rf "$CAIRN_STORE"
ok cairn init --chunks "s3://$BUCKET/$PFX" --endpoint "$EP" >/dev/null
random_tank 1000000
pad_catalog "$CAIRN_STORE/catalog.db"
ok cairn set user:last=1 tank
[ -e "$CAIRN_STORE/catalog.remote-stale" ] && fail "the big catalog did not go up to the bucket"

# 1. import (twice: the second with its first GET cut halfway)
R=$TESTDIR/reference
rss_under 40960 "$CAIRN" -s "$R" init --import "s3://$BUCKET/$PFX" --endpoint "$EP"
size=$(stat -c %s "$R/catalog.db")
[ "$size" -gt $((64 << 20)) ] || fail "the imported catalog is only $size bytes"
I=$TESTDIR/imported
echo meta-cut-first >"$MODE"
rss_under 40960 "$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP"
echo pass >"$MODE"
grep -q "^meta-cut-first GET .*catalog.db" "$MODE.hits" || fail "the catalog's GET was not cut"
cmp -s "$R/catalog.db" "$I/catalog.db" || fail "a cut GET left a different catalog"
[ "$("$CAIRN" -s "$I" get -H -o value user:last tank 2>/dev/null)" = 1 ] || fail "the imported catalog is not the last one"
ok "$CAIRN" -s "$I" verify >/dev/null

# 2. init on the prefix of a store with a big catalog: refused, small
rm -rf "$TESTDIR/other"
peak_rss 40960 "$CAIRN" -s "$TESTDIR/other" init --chunks "s3://$BUCKET/$PFX" --endpoint "$EP" &&
	fail "init on a prefix holding a store succeeded"
grep -q "already holds a store" "$TESTDIR/out" || fail "init did not say why: $(cat "$TESTDIR/out")"

# 3. file://
F=$TESTDIR/fstore
ok "$CAIRN" -s "$F" init --chunks "file://$TESTDIR/fchunks" >/dev/null
ok "$CAIRN" -s "$F" create -o source="$SRC" -o chunksize=64K ftank
ok "$CAIRN" -s "$F" snapshot ftank@1 >/dev/null
pad_catalog "$F/catalog.db"
ok "$CAIRN" -s "$F" set user:last=1 ftank
rm -rf "$F"
rss_under 40960 "$CAIRN" -s "$F" init --import "file://$TESTDIR/fchunks"
cmp -s "$TESTDIR/fchunks/meta/catalog.db" "$F/catalog.db" || fail "file://: the imported catalog is not the copy"
ok "$CAIRN" -s "$F" verify >/dev/null
done_test
