#!/bin/bash
# radosgw killed mid-backup and mid-gc.
#  1. Killed and restarted during a backup: the backup retries and
#     completes; everything verifies and restores.
#  2. Killed for longer than the retry budget: the backup fails with a
#     clear error, commits nothing; after restart the same command
#     completes.
#  3. Killed during gc's bucket sweep and restarted: gc completes; killed
#     past the budget: gc fails clearly, a rerun completes; nothing
#     referenced is lost and the bucket ends with exactly the marked chunks.
# Each kill is checked to have hit the command while it ran.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
CEPH="$CAIRN_SRC/scripts/ceph-dev.sh"
trap '"$CEPH" start-rgw "$CEPH_DIR" >/dev/null 2>&1 || true; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT
s3_new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 30000000 /dev/urandom >"$SRC/big"
for i in $(seq 20); do head -c $((RANDOM * 3)) /dev/urandom >"$SRC/f$i"; done
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn config sync_batch_chunks=64

# wait_objects N: until the bucket holds at least N objects under PFX.
wait_objects() {
	for _ in $(seq 300); do
		[ "$(objects 2>/dev/null || echo 0)" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# 1. kill + restart mid-backup
cairn snapshot tank@1 >/dev/null 2>"$TESTDIR/err1" &
sp=$!
wait_objects 20 || fail "backup uploaded nothing"
"$CEPH" kill-rgw "$CEPH_DIR"
kill -0 $sp 2>/dev/null || fail "backup ended before radosgw was killed (no fault injected)"
sleep 3
"$CEPH" start-rgw "$CEPH_DIR" >/dev/null || fail "radosgw restart"
wait $sp || fail "backup did not survive a radosgw restart: $(cat "$TESTDIR/err1")"
[ "$(stat_of retries)" -gt 0 ] || fail "no request was retried: the kill missed the backup"
ok cairn verify >/dev/null
rm -rf "$TESTDIR/r1"
ok cairn restore tank@1 "$TESTDIR/r1" >/dev/null
same_tree "$SRC" "$TESTDIR/r1"

# 2. down for longer than the retry budget: clear error, nothing committed
head -c 20000000 /dev/urandom >"$SRC/big2"
CAIRN_S3_RETRY_SECONDS=2 cairn snapshot tank@2 >/dev/null 2>"$TESTDIR/err2" &
sp=$!
wait_objects $(($(objects) + 10)) || fail "second backup uploaded nothing"
"$CEPH" kill-rgw "$CEPH_DIR"
kill -0 $sp 2>/dev/null || fail "second backup ended before the kill"
wait $sp && fail "backup succeeded with radosgw down"
grep -q "gave up after" "$TESTDIR/err2" || fail "unclear error: $(cat "$TESTDIR/err2")"
grep -q "^cairn: snapshot: " "$TESTDIR/err2" || fail "error not in cairn's format: $(cat "$TESTDIR/err2")"
"$CEPH" start-rgw "$CEPH_DIR" >/dev/null || fail "radosgw restart"
cairn list -H -o name -t snapshot | grep -q '@2$' && fail "failed backup committed a snapshot"
ok cairn snapshot tank@2 >/dev/null
rm -rf "$TESTDIR/r2"
ok cairn restore tank@2 "$TESTDIR/r2" >/dev/null
same_tree "$SRC" "$TESTDIR/r2"

# 3. kill during gc's sweep
ok cairn config gc_atime_cutoff=0
ok cairn destroy tank@1
rm "$SRC/big"
ok cairn snapshot tank@3 >/dev/null
ok cairn destroy tank@2
# the bucket sweep waits 2 s before its delete request; radosgw is down
# from 1 s to 5 s, so that request meets it down
CAIRN_TEST_BUCKET_SWEEP_DELAY_US=2000000 cairn gc >/dev/null 2>"$TESTDIR/err3" &
gp=$!
sleep 1
kill -0 $gp 2>/dev/null || fail "gc ended before the kill"
"$CEPH" kill-rgw "$CEPH_DIR"
sleep 4
"$CEPH" start-rgw "$CEPH_DIR" >/dev/null || fail "radosgw restart"
wait $gp || fail "gc did not survive a radosgw restart: $(cat "$TESTDIR/err3")"
[ "$(stat_of retries)" -gt 0 ] || fail "gc retried nothing: the kill missed it"
# down for longer than the budget: gc fails clearly, a rerun completes
ok cairn destroy tank@3
ok cairn snapshot tank@4 >/dev/null
"$CEPH" kill-rgw "$CEPH_DIR"
CAIRN_S3_RETRY_SECONDS=2 cairn gc >/dev/null 2>"$TESTDIR/err4" && fail "gc succeeded with radosgw down"
grep -q "^cairn: gc: .*gave up after" "$TESTDIR/err4" || fail "unclear gc error: $(cat "$TESTDIR/err4")"
"$CEPH" start-rgw "$CEPH_DIR" >/dev/null || fail "radosgw restart"
ok cairn gc >/dev/null
ok cairn verify >/dev/null
[ "$(objects)" = "$(markers)" ] || fail "bucket holds $(objects) objects for $(markers) markers"
rm -rf "$TESTDIR/r4"
ok cairn restore tank@4 "$TESTDIR/r4" >/dev/null
same_tree "$SRC" "$TESTDIR/r4"
done_test
