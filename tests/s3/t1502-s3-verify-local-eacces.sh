#!/bin/bash
# verify took every EACCES on a bucket store for the bucket's refusal
# (HTTP 403), even one from a local file: a chunk whose local file holds
# its blob (not an empty marker) that this user may not open.  It then
# blamed the credential ("the bucket refused to read chunk ... is the
# credential wrong") though the bucket was never asked.
#  1. verify, run as another user, of a store whose one chunk file it may
#     not open fails naming that chunk, its local file and "Permission
#     denied", does not blame the bucket, and leaves the file and the
#     objects as they were.
#  2. The file readable again, verify succeeds.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (to run as a second user)"; exit 77; }
command -v setpriv >/dev/null || { echo "setpriv missing"; exit 77; }
OTHER=60123
s3_new_store
random_tank 1000000
n=$(objects)
marker=$(find "$CAIRN_STORE/.chunks" -type f -regextype egrep -regex '.*/[0-9a-f]{64}' | head -n 1)
hex=$(basename "$marker")
# The chunk's local file holds its blob, as when it is kept locally.
ok "$S3TOOL" get "$BUCKET" "$PFX/chunks/${hex:0:4}/$hex" >"$TESTDIR/blob"
cp "$TESTDIR/blob" "$marker"
ok cairn verify >/dev/null

# 1. the store is the other user's, but for that one file
chmod 755 "$TESTDIR"
: >"$CAIRN_BACKEND_STATS"
chown -R "$OTHER:$OTHER" "$CAIRN_STORE" "$CAIRN_BACKEND_STATS"
chown 0:0 "$marker"
chmod 600 "$marker"
setpriv --reuid=$OTHER --regid=$OTHER --clear-groups "$CAIRN" verify >/dev/null 2>"$TESTDIR/v.err" &&
	fail "verify of a chunk file it may not open succeeded"
grep -q "bucket refused\|credential" "$TESTDIR/v.err" && fail "verify blamed the bucket: $(cat "$TESTDIR/v.err")"
grep -q "$hex.*\.chunks/${hex:0:4}/$hex.*Permission denied" "$TESTDIR/v.err" ||
	fail "verify did not name the chunk, its file and the reason: $(cat "$TESTDIR/v.err")"
cmp -s "$TESTDIR/blob" "$marker" || fail "verify changed the chunk's file"
[ "$(objects)" = "$n" ] || fail "objects went: $(objects) of $n"

# 2. readable again
chown -R 0:0 "$CAIRN_STORE" "$CAIRN_BACKEND_STATS"
ok cairn verify >/dev/null
done_test
