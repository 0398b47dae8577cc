#!/bin/bash
# The retry budget (s3_retry_seconds) bounds the time a batch of requests
# goes on without progress, not the batch's whole time.  An upload batch
# over a slow link takes longer than the budget in plain working; a
# transient 503 SlowDown near its end used to fail the backup at once
# ("gave up after 1 tries"), so on a slow link retries were off for most
# of every batch.  tests/s3/faultproxy.py (late-503) slows each chunk PUT
# and answers the first one 503, and one more 3 s later; the budget is 2 s.
#  1. The backup retries both PUTs and completes (the successes between
#     the two give the second its whole budget); everything verifies and
#     restores.
#  2. A server that stops answering is still given up on after the
#     budget: a backup fails in bounded time, commits nothing, and the
#     same command then completes.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
ok cairn config s3_parallel=2
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 8000000 /dev/urandom >"$SRC/big"
ok cairn create -o source="$SRC" -o chunksize=64K tank

# 1. one 503 late in a long batch
echo late-503 >"$MODE"
t0=$(date +%s)
cairn snapshot tank@1 >/dev/null 2>"$TESTDIR/s1.err" || fail "a backup failed over two transient 503s: $(cat "$TESTDIR/s1.err")"
took=$(($(date +%s) - t0))
echo pass >"$MODE"
[ "$(grep -c "^late-503 PUT" "$MODE.hits" 2>/dev/null)" = 2 ] || fail "not two PUTs were answered 503 (the batch took $took s)"
ok cairn verify >/dev/null
rm -rf "$TESTDIR/r1"
ok cairn restore tank@1 "$TESTDIR/r1" >/dev/null
cmp -s "$SRC/big" "$TESTDIR/r1/big" || fail "restore differs"

# 2. radosgw gone: the backup still gives up after the budget
head -c 2000000 /dev/urandom >"$SRC/more"
"$CAIRN_SRC/scripts/ceph-dev.sh" kill-rgw "$CEPH_DIR" >/dev/null 2>&1 || fail "kill-rgw"
t0=$(date +%s)
fails_with 1 "gave up" cairn snapshot tank@2
took=$(($(date +%s) - t0))
"$CAIRN_SRC/scripts/ceph-dev.sh" start-rgw "$CEPH_DIR" >/dev/null 2>&1 || fail "start-rgw"
[ "$took" -le 20 ] || fail "a backup with the server gone took $took s to give up (budget 2 s)"
cairn list -H -o name -t snapshot | grep -q "tank@2" && fail "a failed backup committed its snapshot"
ok cairn snapshot tank@2 >/dev/null
ok cairn verify >/dev/null
done_test
