#!/bin/bash
# A DeleteObjects answer lists each key the server could not delete as an
# <Error> of its own.  One whose code is transient (SlowDown,
# InternalError, ServiceUnavailable, RequestTimeout) failed that key this
# time only, as a 503 for the whole request would have; only a whole
# <Error> document was retried (t1499), a per-key one failed the gc at
# once (tests/s3/faultproxy.py delete-key-slowdown-first answers the first
# DeleteObjects with SlowDown for its first key; -always does so for
# every DeleteObjects).
#  1. gc retries that key alone (a second DeleteObjects asking for it)
#     and removes every object.
#  2. A key failed so on every try is given up on after the retry budget
#     (2 s): gc fails naming DeleteObjects, the key and the code.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
gc_tank

# 1. one key failed once
ok cairn destroy tank@1
echo delete-key-slowdown-first >"$MODE"
out=$(cairn gc 2>&1) || fail "gc over one key's SlowDown failed: $out"
echo pass >"$MODE"
key=$(sed -n 's/^delete-key-error //p' "$MODE.hits")
[ -n "$key" ] || fail "the proxy failed no key: $(cat "$MODE.hits")"
grep "^delete-asked " "$MODE.hits" | grep -qF " $key" || fail "gc did not ask for $key again: $(cat "$MODE.hits")"
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"

# 2. one key failed on every try: given up on in time
rm -f "$MODE.hits"
head -c 300000 /dev/urandom >"$SRC/a"
ok cairn snapshot tank@2 >/dev/null
ok cairn destroy tank@2
echo delete-key-slowdown-always >"$MODE"
t0=$(date +%s)
cairn gc >/dev/null 2>"$TESTDIR/gc.err" && fail "gc over a key that always fails succeeded"
took=$(($(date +%s) - t0))
echo pass >"$MODE"
grep -q "DeleteObjects: .*/chunks/.*SlowDown.*gave up" "$TESTDIR/gc.err" ||
	fail "gc did not name the request, the key, the code and the retries: $(cat "$TESTDIR/gc.err")"
[ "$(grep -c "^delete-key-error" "$MODE.hits")" -ge 2 ] || fail "the key was not retried: $(cat "$MODE.hits")"
[ "$took" -le 20 ] || fail "gc took $took s to give up (budget 2 s)"
ok cairn gc >/dev/null
[ "$(objects)" = 0 ] || fail "$(objects) objects left after the last gc"
done_test
