#!/bin/bash
# Every verb on a store whose chunks live in S3 (Ceph radosgw): snapshot,
# restore, list, holds, bookmarks, prune, send/recv, sync, verify, gc.
# Request counts: an unchanged backup uploads nothing and asks nothing
# (dedup from local markers, no HEAD per chunk); a sweep of N objects uses
# about N/1000 list and delete requests.  No secret lands in the store.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_new_store
grep -rqs -- "$AWS_SECRET_ACCESS_KEY" "$CAIRN_STORE" && fail "the secret key is stored in the store"
grep -q "^chunks = s3://$BUCKET/$PFX" "$CAIRN_STORE/backend.conf" || fail "backend.conf"
SRC=$TESTDIR/src
corpus "$SRC"
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn create tank/sub
ok cairn snapshot -r tank@1 >/dev/null
n=$(objects)
m=$(markers)
[ "$n" -gt 10 ] && [ "$n" = "$m" ] || fail "bucket holds $n objects, store $m markers"
up=$(stat_of put)
[ "$up" -ge "$n" ] || fail "snapshot made $up PUTs for $n objects"
# markers hold no data
used=$(du -sk "$CAIRN_STORE/.chunks" | cut -f1)
[ "$used" -lt 1024 ] || fail "markers take $used KiB"

# unchanged backup: no PUT, no HEAD, no GET of content
ok cairn snapshot -r tank@2 >/dev/null
[ "$(stat_of put)" -le 2 ] || fail "unchanged snapshot uploaded $(stat_of put) objects"
[ "$(stat_of head)" = 0 ] || fail "unchanged snapshot sent $(stat_of head) HEAD requests"
[ "$(objects)" = "$n" ] || fail "unchanged snapshot added objects"

rm -rf "$TESTDIR/r1"
ok cairn restore tank@1 "$TESTDIR/r1" >/dev/null
same_tree "$SRC" "$TESTDIR/r1"
[ "$(stat_of get)" -gt 0 ] || fail "restore read nothing from the bucket"

# listing, holds, bookmarks, prune
cairn list -H -p -o name,referenced -t snapshot | grep -q "^tank@1	[0-9][0-9]*$" || fail "list -Hp"
ok cairn hold keep tank@1
fails_with 1 "held" cairn destroy tank@1
ok cairn release keep tank@1
ok cairn bookmark tank@1 tank#b1
echo "change" >>"$SRC/sub/f4"
ok cairn snapshot -r tank@3 >/dev/null
ok cairn prune --keep-last 1 tank >/dev/null

# send | recv into a local store and into another S3 store; sync S3 -> S3
L=$TESTDIR/local
ok "$CAIRN" -s "$L" init >/dev/null
cairn send tank@3 | "$CAIRN" -s "$L" recv copy || fail "send | recv to a local store"
rm -rf "$TESTDIR/r3" "$TESTDIR/r3l"
ok cairn restore tank@3 "$TESTDIR/r3" >/dev/null
ok "$CAIRN" -s "$L" restore copy@3 "$TESTDIR/r3l" >/dev/null
same_tree "$TESTDIR/r3" "$TESTDIR/r3l"
same_tree "$SRC" "$TESTDIR/r3"
S2=$TESTDIR/s2
s3_new_store "$S2" "$PFX-b"
"$CAIRN" -s "$L" send copy@3 | "$CAIRN" -s "$S2" recv back || fail "send | recv into S3"
ok cairn sync tank "$S2:synced" >/dev/null
rm -rf "$TESTDIR/r4"
ok "$CAIRN" -s "$S2" restore synced@3 "$TESTDIR/r4" >/dev/null
same_tree "$SRC" "$TESTDIR/r4"
ok "$CAIRN" -s "$S2" verify >/dev/null

# verify reads every chunk from the bucket; a damaged object is named.
# First collect what the prune left unreferenced: verify reads only the
# chunks snapshots reference, so a victim that only tank@1 used would be
# damaged unread (seen once in CI, as "verify passed over a damaged object").
ok cairn config gc_atime_cutoff=0
ok cairn gc >/dev/null
ok cairn verify >/dev/null
victim=$("$S3TOOL" ls "$BUCKET" "$PFX/chunks/" | head -1)
"$S3TOOL" get "$BUCKET" "$victim" >"$TESTDIR/obj" || fail "get object"
printf 'garbage' | dd of="$TESTDIR/obj" bs=1 seek=40 conv=notrunc status=none
"$S3TOOL" put "$BUCKET" "$victim" "$TESTDIR/obj" || fail "put object"
out=$(cairn verify 2>&1)
[ $? -ne 0 ] || fail "verify passed over a damaged object"
echo "$out" | grep -q "${victim##*/}" || fail "verify did not name the damaged chunk: $out"

# gc: destroy everything, sweep with cutoff 0; the bucket ends empty
for s in $(cairn list -H -o name -t snapshot -r tank); do ok cairn destroy "$s"; done
ok cairn destroy tank#b1
cairn list -H -o name -t snapshot,bookmark -r tank >"$TESTDIR/left"
[ -s "$TESTDIR/left" ] && fail "snapshots left: $(cat "$TESTDIR/left")"
before=$(objects)
ok cairn gc >/dev/null
after=$(objects)
[ "$after" = 0 ] || fail "gc left $after of $before objects"
[ "$(markers)" = 0 ] || fail "gc left $(markers) markers"
[ "$(stat_of sweep_removed)" = "$before" ] || fail "sweep removed $(stat_of sweep_removed) of $before"
[ "$(stat_of delete_req)" -le $(((before + 999) / 1000)) ] || fail "sweep of $before objects used $(stat_of delete_req) delete requests"

# A sweep of over 1000 objects: one list request per 1000, one delete
# request per 1000.
IMG=$TESTDIR/vol.img
head -c $((1300 * 65536)) /dev/urandom >"$IMG"
ok cairn create -V -o source="$IMG" -o chunksize=64K vol
ok cairn snapshot vol@a >/dev/null
total=$(objects)
[ "$total" -ge 1300 ] || fail "volume made only $total objects"
ok cairn destroy vol@a
ok cairn gc >/dev/null
removed=$(stat_of sweep_removed)
dreq=$(stat_of delete_req)
lreq=$(stat_of list)
echo "sweep: $removed objects removed with $dreq delete and $lreq list requests"
[ "$removed" = "$total" ] || fail "sweep removed $removed of $total"
[ "$dreq" = $(((total + 999) / 1000)) ] || fail "$dreq delete requests for $total objects"
[ "$lreq" -le $((total / 1000 + 2)) ] || fail "$lreq list requests for $total objects"
done_test
