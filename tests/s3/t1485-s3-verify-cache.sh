#!/bin/bash
# verify reads every chunk from the bucket, bypassing the chunk cache, but
# it still kept every blob it read in the cache: a verify of a big store
# evicted the working set of restores and gc, and filled the cache with
# blobs read once.
#  1. verify of a store with an empty cache leaves it empty.
#  2. verify leaves a warm cache as it was (same blobs, untouched files),
#     and the next restore still costs no GET.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_new_store
random_tank 2000000
C=$CAIRN_STORE/cache
cached() { find "$C" -maxdepth 1 -type f -regextype egrep -regex '.*/[0-9a-f]{64}' | wc -l; }
snapshot_cache() { (cd "$C" && find . -maxdepth 1 -type f -printf '%f %s %i %T@\n' | LC_ALL=C sort); }

# 1. an empty cache
rm -rf "$C"
ok cairn verify >/dev/null
gets=$(stat_of get)
[ "$gets" -ge 10 ] || fail "verify made $gets GETs"
[ "$(cached)" = 0 ] || fail "verify left $(cached) blobs in the cache ($gets GETs)"

# 2. a warm cache
ok cairn restore tank@1 "$TESTDIR/r1" >/dev/null
cmp -s "$SRC/a" "$TESTDIR/r1/a" || fail "restore differs"
[ "$(cached)" -ge 10 ] || fail "restore left $(cached) blobs in the cache"
snapshot_cache >"$TESTDIR/before"
sleep 0.1
ok cairn verify >/dev/null
snapshot_cache >"$TESTDIR/after"
cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
	fail "verify changed the cache: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 4)"
ok cairn restore tank@1 "$TESTDIR/r2" >/dev/null
[ "$(stat_of get)" = 0 ] || fail "the restore after verify made $(stat_of get) GETs"
done_test
