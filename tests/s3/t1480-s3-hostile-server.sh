#!/bin/bash
# A server that answers wrongly (tests/s3/faultproxy.py between cairn and
# radosgw; findings of the 2026-12-03 review):
#  1. Every chunk GET's body garbled: verify calls the chunks damaged and
#     sets their markers aside; with the server healthy again, gc reports
#     those chunks and deletes none of their objects; the next backup
#     stores them again, and everything verifies and restores.
#  1b. Only the first GET of each chunk garbled (a transient fault on the
#     way): verify reads it once more, finds it whole, and sets nothing
#     aside.
#  2. Chunk GETs answered "no such bucket" (a server or configuration
#     error, not retried): verify fails naming it and sets nothing aside
#     (an error of the server is not one of the object).
#  3. A plain HTML 404 (no S3 error code, as from a wrong endpoint): an
#     error naming HTTP 404, never "missing from the chunk store".
#  4. A listing whose continuation token never advances: gc stops with an
#     error instead of listing forever, and deletes nothing.
#  5. A signal while the bucket sweep retries a failing listing ends gc at
#     once ("interrupted"), not when the retry budget is spent.
#  6. A server without conditional writes (501 to If-None-Match): init
#     still claims the prefix, with a plain write read back.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
ok cairn config s3_cache_mb=0
ok cairn config gc_atime_cutoff=0
SRC=$TESTDIR/src
corpus "$SRC"
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn snapshot tank@1 >/dev/null
n=$(objects)
aside() { find "$CAIRN_STORE/.chunks" -name '*.bad' | wc -l; }

# 1. garbled bodies
echo garble-get >"$MODE"
fails_with 1 "corrupt\|damaged" cairn verify
[ "$(aside)" -gt 0 ] || fail "verify set no marker aside over garbled bodies"
echo pass >"$MODE"
fails_with 1 "missing" cairn gc
[ "$(objects)" = "$n" ] || fail "gc deleted objects whose markers verify had set aside ($(objects) of $n left)"
ok cairn snapshot tank@2 >/dev/null
ok cairn gc >/dev/null
ok cairn verify >/dev/null
ok cairn restore tank@1 "$TESTDIR/r1" >/dev/null
same_tree "$SRC" "$TESTDIR/r1"
find "$CAIRN_STORE/.chunks" -name '*.bad' -delete

# 1b. a garbled body once per object
rm -f "$MODE.hits"
echo garble-first >"$MODE"
ok cairn verify >/dev/null
echo pass >"$MODE"
[ -s "$MODE.hits" ] || fail "no read was garbled"
[ "$(aside)" = 0 ] || fail "verify set $(aside) markers aside over a transient garbling"

# 2. the server fails chunk reads
echo nosuchbucket >"$MODE"
fails_with 1 "HTTP 404 NoSuchBucket" cairn verify
[ "$(aside)" = 0 ] || fail "verify set $(aside) markers aside over server errors"

# 3. a 404 that is not S3's NoSuchKey
echo html404 >"$MODE"
err=$(cairn restore tank@1 "$TESTDIR/r3" 2>&1 >/dev/null)
[ $? -ne 0 ] || fail "restore through an HTML 404 succeeded"
echo "$err" | grep -q "HTTP 404" || fail "restore through an HTML 404 did not name it: $err"
echo "$err" | grep -q "missing from the chunk store" && fail "an HTML 404 taken for a missing chunk: $err"
[ "$(aside)" = 0 ] || fail "an HTML 404 set markers aside"

# 4. a listing that never ends
echo list-loop >"$MODE"
timeout 120 "$CAIRN" gc >/dev/null 2>"$TESTDIR/gc.err"
rc=$?
[ $rc -eq 124 ] && fail "gc listed forever"
[ $rc -ne 0 ] || fail "gc over a looping listing succeeded"
grep -q "continuation token did not advance" "$TESTDIR/gc.err" || fail "gc did not name the listing: $(cat "$TESTDIR/gc.err")"
echo pass >"$MODE"
[ "$(objects)" = "$n" ] || fail "objects lost: $(objects) of $n"

# 5. SIGINT while a listing is retried (budget 120 s)
ok cairn config s3_retry_seconds=120
rm -f "$MODE.hits"
echo list-500 >"$MODE"
"$CAIRN" gc >/dev/null 2>"$TESTDIR/gc5.err" &
gcpid=$!
for _ in $(seq 300); do grep -q "^list-500" "$MODE.hits" 2>/dev/null && break; sleep 0.1; done
grep -q "^list-500" "$MODE.hits" || fail "gc never reached the bucket listing"
interrupt_gc $gcpid "$TESTDIR/gc5.err"
ok cairn verify >/dev/null

# 6. no conditional writes
rm -f "$MODE.hits"
echo no-conditional >"$MODE"
ok "$CAIRN" -s "$TESTDIR/nc" init --chunks "s3://$BUCKET/$PFX-nc" --endpoint "http://127.0.0.1:$(cat "$TESTDIR/port")" >/dev/null
echo pass >"$MODE"
grep -q "^no-conditional PUT" "$MODE.hits" || fail "init's claim was not a conditional write"
claim=$("$S3TOOL" get "$BUCKET" "$PFX-nc/meta/store-id") || fail "no claim after init on a server without conditional writes"
[ "$claim" = "$(sed -n 's/^store_id = //p' "$TESTDIR/nc/backend.conf")" ] || fail "the claim is not the store's: $claim"
done_test
