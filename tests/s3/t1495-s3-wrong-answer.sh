#!/bin/bash
# A server (or a proxy on the way) that answers HTTP 200 with a document
# other than the one asked for: here an S3 error document (<Error>) for a
# listing and for DeleteObjects (tests/s3/faultproxy.py list-error-200,
# delete-error-200).  Such a listing was read as an empty bucket, and
# such a delete answer as "every key deleted":
#  1. init --import built a store with no marker at all and said it had
#     succeeded; now it fails naming the listing, leaves no store, and the
#     same command completes once the server is sane.
#  2. gc reported objects removed that the bucket still held; now it
#     fails naming DeleteObjects, and the next gc removes them.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
ok cairn config gc_atime_cutoff=0
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 2000000 /dev/urandom >"$SRC/a"
head -c 1000000 /dev/urandom >"$SRC/b"
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn snapshot tank@1 >/dev/null
n=$(objects)

# 1. import over a listing that is an error document
I=$TESTDIR/imported
echo list-error-200 >"$MODE"
"$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" >/dev/null 2>"$TESTDIR/imp.err" &&
	fail "import over a listing that is no listing succeeded ($(markers "$I") markers of $n objects)"
echo pass >"$MODE"
grep -q "ListObjectsV2" "$TESTDIR/imp.err" || fail "import did not name the listing: $(cat "$TESTDIR/imp.err")"
[ -e "$I/cairn-store" ] && fail "a failed import left a store"
out=$("$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" 2>&1) || fail "import again: $out"
[ "$(markers "$I")" = "$n" ] || fail "the import has $(markers "$I") markers for $n objects"

# 2. gc over a delete answered with an error document
ok cairn destroy tank@1
echo delete-error-200 >"$MODE"
cairn gc >/dev/null 2>"$TESTDIR/gc.err" && fail "gc over a delete answer that is no answer succeeded"
echo pass >"$MODE"
grep -q "DeleteObjects" "$TESTDIR/gc.err" || fail "gc did not name the request: $(cat "$TESTDIR/gc.err")"
[ "$(objects)" = "$n" ] || fail "objects went while the server answered wrongly: $(objects) of $n"
ok cairn gc >/dev/null
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
done_test
