#!/bin/bash
# The retry budget is time without progress (t1493), but only a 2xx
# answer counted as progress: a batch of HEADs asking for chunks the
# bucket does not have yet is all 404s ("absent", each the request's
# result), so a transient 503 late in it found the clock of a 503 long
# before and gave up at once.  tests/s3/faultproxy.py (late-503-head)
# slows each HEAD by 0.1 s and answers the first one 503, and one more
# 3 s later; the budget is 2 s, the batch (s3_have_many through s3tool
# have, 2 connections) about 4 s.
#  1. The batch retries both HEADs and completes with the right answer.
#  2. A server that is gone is still given up on after the budget.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
echo hello >"$TESTDIR/one"
ok "$S3TOOL" put "$BUCKET" "$PFX/there" "$TESTDIR/one"
keys=("$PFX/there")
for i in $(seq 80); do keys+=("$PFX/absent-$i"); done
have() { CAIRN_S3_ENDPOINT=$EP S3TOOL_RETRY_SECONDS=2 S3TOOL_PARALLEL=2 "$S3TOOL" have "$BUCKET" "${keys[@]}"; }

# 1. two 503s 3 s apart in a batch of 404s
echo late-503-head >"$MODE"
t0=$(date +%s)
out=$(have 2>&1) || fail "a batch of HEADs failed over two transient 503s: $out"
took=$(($(date +%s) - t0))
echo pass >"$MODE"
[ "$out" = 1 ] || fail "the batch found $out objects, not 1"
[ "$(grep -c "^late-503-head HEAD" "$MODE.hits" 2>/dev/null)" = 2 ] ||
	fail "not two HEADs were answered 503 (the batch took $took s)"

# 2. radosgw gone: still given up on after the budget
"$CAIRN_SRC/scripts/ceph-dev.sh" kill-rgw "$CEPH_DIR" >/dev/null 2>&1 || fail "kill-rgw"
t0=$(date +%s)
out=$(have 2>&1) && fail "a batch of HEADs with the server gone succeeded: $out"
took=$(($(date +%s) - t0))
"$CAIRN_SRC/scripts/ceph-dev.sh" start-rgw "$CEPH_DIR" >/dev/null 2>&1 || fail "start-rgw"
echo "$out" | grep -q "gave up" || fail "no 'gave up' when the server is gone: $out"
[ "$took" -le 20 ] || fail "the batch took $took s to give up with the server gone (budget 2 s)"
ok "$S3TOOL" rm "$BUCKET" "$PFX/there"
done_test
