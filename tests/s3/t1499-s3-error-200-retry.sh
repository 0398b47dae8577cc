#!/bin/bash
# S3 may answer a listing or a DeleteObjects with 200 and then, the call
# having failed after the status went out, an <Error> document in the
# body.  One whose code is transient (InternalError, SlowDown,
# ServiceUnavailable, RequestTimeout) is the same failure as that code
# with a 500 or 503, but it was refused at once, not retried: one such
# answer failed an import or a gc (tests/s3/faultproxy.py error-200-first
# answers the first listing 200 InternalError and the first DeleteObjects
# 200 SlowDown; list-error-200-always answers every listing so).
#  1. init --import retries the listing and completes, with every marker.
#  2. gc retries the DeleteObjects and removes what it must.
#  3. A listing answered so on every try is still given up on after the
#     retry budget (2 s): gc fails naming ListObjectsV2 and the code, and
#     the store still verifies.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
gc_tank
sent() { grep -c "^error-200-sent $1" "$MODE.hits" 2>/dev/null; }

# 1. import over one listing answered 200 InternalError
I=$TESTDIR/imported
echo error-200-first >"$MODE"
out=$("$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" 2>&1) ||
	fail "import over one transient error document failed: $out"
[ "$(sent GET)" = 1 ] || fail "the proxy answered $(sent GET) listings with an error document, not 1"
[ "$(markers "$I")" = "$n" ] || fail "the import has $(markers "$I") markers for $n objects"

# 2. gc over one DeleteObjects answered 200 SlowDown
ok cairn destroy tank@1
out=$(cairn gc 2>&1) || fail "gc over one transient error document failed: $out"
[ "$(sent POST)" = 1 ] || fail "the proxy answered $(sent POST) deletes with an error document, not 1"
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"

# 3. every listing answered 200 ServiceUnavailable: gc gives up in time
ok cairn snapshot tank@2 >/dev/null
echo list-error-200-always >"$MODE"
t0=$(date +%s)
cairn gc >/dev/null 2>"$TESTDIR/gc.err" && fail "gc over listings that are all error documents succeeded"
took=$(($(date +%s) - t0))
echo pass >"$MODE"
grep -q "ListObjectsV2.*ServiceUnavailable.*gave up" "$TESTDIR/gc.err" ||
	fail "gc did not name the listing, the code and the retries: $(cat "$TESTDIR/gc.err")"
[ "$(grep -c "^list-error-200-always GET" "$MODE.hits")" -ge 2 ] || fail "the listing was not retried"
[ "$took" -le 20 ] || fail "gc took $took s to give up (budget 2 s)"
ok cairn verify >/dev/null
done_test
