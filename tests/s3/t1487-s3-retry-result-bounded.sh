#!/bin/bash
# An answer that is the request's result (404 absent, 412 taken, 501 no
# conditional writes) resets the retry clock (t1486).  But an answer can
# be both such a result and retried (a transient code in its body, or
# ConditionalRequestConflict): the clock was reset on every try, so the
# budget never ran out and the command retried for ever (the backoff stops
# growing at 5 s, under any budget of 5 s or more).  tests/s3/faultproxy.py
# cond-412-conflict answers every conditional PUT 412 with the code
# ConditionalRequestConflict; gc on a prefix whose claim is gone claims it
# with such a PUT.
#  1. gc with a 6 s budget gives up after it, naming the request, the
#     status and the retries, and deletes nothing.
#  2. With the server sane again, gc claims the prefix and works.
# (timeout -k: gc takes a first SIGTERM as a request to stop at its next
# safe point, and a claim being retried is none.)
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
ok cairn config s3_retry_seconds=6
ok cairn config gc_atime_cutoff=0
random_tank 300000
n=$(objects)
[ "$n" -ge 2 ] || fail "only $n objects"
ok "$S3TOOL" rm "$BUCKET" "$PFX/meta/store-id"

# 1. every conditional PUT answered 412 ConditionalRequestConflict
echo cond-412-conflict >"$MODE"
t0=$(date +%s)
timeout -k 5 60 "$CAIRN" gc >/dev/null 2>"$TESTDIR/gc.err"
rc=$?
took=$(($(date +%s) - t0))
echo pass >"$MODE"
[ $rc = 124 ] || [ $rc = 137 ] && fail "gc retried a conditional PUT for 60 s with a 6 s budget ($(grep -c "^cond-412-conflict PUT" "$MODE.hits") tries)"
[ $rc = 0 ] && fail "gc succeeded with every claim answered 412 ConditionalRequestConflict"
grep -q "PUT .*meta/store-id.*HTTP 412 ConditionalRequestConflict.*gave up" "$TESTDIR/gc.err" ||
	fail "gc did not name the request, the status and the retries: $(cat "$TESTDIR/gc.err")"
[ "$(grep -c "^cond-412-conflict PUT" "$MODE.hits")" -ge 2 ] || fail "the conditional PUT was not retried"
[ "$took" -le 30 ] || fail "gc took $took s to give up (budget 6 s)"
[ "$(objects)" = "$n" ] || fail "objects went: $(objects) of $n"

# 2. sane again
ok cairn destroy tank@1
ok cairn gc >/dev/null
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
"$S3TOOL" get "$BUCKET" "$PFX/meta/store-id" >/dev/null || fail "gc did not claim the prefix"
done_test
