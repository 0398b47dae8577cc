#!/bin/bash
# The local chunk cache of an S3 store (s3_cache_mb): a second restore of
# the same snapshot costs no GET; a damaged cached blob is dropped and read
# again from the bucket (the restore is still exact); the cache keeps to its
# limit, evicting the least recently used blobs; 0 turns it off; verify
# reads the bucket, not the cache; gc's remote sweep forgets what it deletes.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_corpus_snapshot
C=$CAIRN_STORE/cache
cached() { find "$C" -maxdepth 1 -type f -regextype egrep -regex '.*/[0-9a-f]{64}' | wc -l; }
cache_kib() { du -sk --apparent-size "$C" | cut -f1; }

# first restore: every chunk from the bucket, kept in the cache
ok cairn restore tank@1 "$TESTDIR/r1" >/dev/null
same_tree "$SRC" "$TESTDIR/r1"
gets=$(stat_of get)
[ "$gets" -gt 5 ] || fail "first restore made $gets GETs"
[ "$(stat_of cache_misses)" -ge "$gets" ] || fail "first restore: misses $(stat_of cache_misses) < GETs $gets"
[ "$(cached)" -ge "$gets" ] || fail "the cache holds $(cached) blobs after $gets GETs"

# second restore: no request at all
ok cairn restore tank@1 "$TESTDIR/r2" >/dev/null
same_tree "$SRC" "$TESTDIR/r2"
[ "$(stat_of get)" = 0 ] || fail "second restore made $(stat_of get) GETs"
[ "$(stat_of cache_hits)" -ge "$gets" ] || fail "second restore: $(stat_of cache_hits) cache hits"

# a damaged cached blob: dropped, fetched again, restore exact
victim=$(find "$C" -maxdepth 1 -type f -size +20k -regextype egrep -regex '.*/[0-9a-f]{64}' | head -n 1)
[ -n "$victim" ] || fail "no cached blob over 20 KiB"
printf '\xff\xff\xff\xff' | dd of="$victim" bs=1 seek=10000 conv=notrunc status=none
ok cairn restore tank@1 "$TESTDIR/r3" >/dev/null
same_tree "$SRC" "$TESTDIR/r3"
[ "$(stat_of get)" = 1 ] || fail "restore over one damaged cached blob made $(stat_of get) GETs (want 1)"
ok cairn restore tank@1 "$TESTDIR/r3b" >/dev/null
[ "$(stat_of get)" = 0 ] || fail "the damaged blob was not replaced in the cache"
rm -rf "$TESTDIR"/r1 "$TESTDIR"/r2 "$TESTDIR"/r3 "$TESTDIR"/r3b

# verify reads the bucket, never the cache
ok cairn verify >/dev/null
[ "$(stat_of get)" -ge "$gets" ] || fail "verify made $(stat_of get) GETs (the cache answered for the bucket)"

# the limit: 1 MiB, least recently used first out (a lowered limit is
# enforced by the next insert: start from an empty cache)
ok cairn config s3_cache_mb=1
rm -rf "$C"
ok cairn restore tank@1 "$TESTDIR/r4" >/dev/null
same_tree "$SRC" "$TESTDIR/r4"
[ "$(cache_kib)" -le 1100 ] || fail "cache holds $(cache_kib) KiB over a 1 MiB limit"
[ "$(stat_of cache_evictions)" -gt 0 ] || fail "no eviction under a 1 MiB limit"
rm -rf "$TESTDIR/r4"

# 0: no cache
ok cairn config s3_cache_mb=0
rm -rf "$C"
ok cairn restore tank@1 "$TESTDIR/r5" >/dev/null
same_tree "$SRC" "$TESTDIR/r5"
[ "$(stat_of get)" -ge "$gets" ] || fail "restore without cache made $(stat_of get) GETs"
[ -e "$C" ] && fail "s3_cache_mb=0 made a cache directory"
rm -rf "$TESTDIR/r5"

# gc's remote sweep drops the blobs it deletes from the cache
ok cairn config s3_cache_mb=256
ok cairn restore tank@1 "$TESTDIR/r6" >/dev/null
rm -rf "$TESTDIR/r6"
before=$(cached)
[ "$before" -gt 0 ] || fail "cache empty before gc"
ok cairn destroy -r tank@1
ok cairn config gc_atime_cutoff=0
ok cairn gc >/dev/null
[ "$(stat_of sweep_removed)" -gt 0 ] || fail "gc removed nothing from the bucket"
[ "$(cached)" = 0 ] || fail "$(cached) of $before cached blobs survived the sweep that deleted them"
done_test
