#!/bin/bash
# gc reads the prefix's claim (meta/store-id) before its local sweep, and a
# read answered 503 is retried for the whole retry budget.  A SIGINT there
# went unheard (the S3 client is given gc's stop flag only for the bucket
# sweep), so gc kept retrying the claim to the end of the budget before it
# stopped: tests/s3/faultproxy.py claim-503 answers every read of the
# claim 503 SlowDown; the budget is 60 s.
#  1. SIGINT during those retries stops gc within a few seconds, saying it
#     was interrupted, with nothing deleted and every marker kept.
#  2. With the server sane again, gc removes the garbage.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
ok cairn config s3_retry_seconds=60
ok cairn config gc_atime_cutoff=0
random_tank 500000
ok cairn destroy tank@1
n=$(objects)
[ "$n" -ge 2 ] || fail "only $n objects"
m=$(markers)
tries() { cat "$MODE.hits" 2>/dev/null | grep -c "^claim-503 GET"; }

# 1. SIGINT while the claim is being retried
echo claim-503 >"$MODE"
"$CAIRN" gc >/dev/null 2>"$TESTDIR/gc.err" &
gcpid=$!
for _ in $(seq 300); do [ "$(tries)" -ge 2 ] && break; sleep 0.1; done
[ "$(tries)" -ge 2 ] || fail "gc never retried the claim"
interrupt_gc $gcpid "$TESTDIR/gc.err"
[ "$(markers)" = "$m" ] || fail "markers went: $(markers) of $m"

# 2. sane again
ok cairn gc >/dev/null
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
done_test
