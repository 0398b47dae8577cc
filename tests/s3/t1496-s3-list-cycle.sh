#!/bin/bash
# A hostile or broken server whose ListObjectsV2 continuation tokens cycle
# (first page -> A -> B -> A ..., B answering the first page again:
# tests/s3/faultproxy.py list-cycle).  Only a token repeated on the very
# next page was caught, so gc and init --import listed forever.  S3 lists
# keys in ascending order, each page after the last key of the page
# before: a key that is not is an error naming ListObjectsV2 and the key.
#  1. init --import fails in bounded time naming the listing, leaves no
#     store, and completes once the server is sane.
#  2. gc fails the same way, loses nothing, and then completes.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
ok cairn config gc_atime_cutoff=0
random_tank 2000000
n=$(objects)
[ "$n" -ge 4 ] || fail "only $n objects"

# 1. import over a listing that cycles
I=$TESTDIR/imported
echo list-cycle >"$MODE"
timeout 60 "$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" >/dev/null 2>"$TESTDIR/imp.err"
rc=$?
echo pass >"$MODE"
[ $rc = 124 ] && fail "import listed a cycling listing for 60 s ($(grep -c "^list-cycle GET" "$MODE.hits") pages)"
[ $rc = 0 ] && fail "import over a cycling listing succeeded"
grep -q "ListObjectsV2.*out of order" "$TESTDIR/imp.err" || fail "import did not name the listing and the key: $(cat "$TESTDIR/imp.err")"
[ "$(grep -c "^list-cycle GET" "$MODE.hits")" -le 3 ] || fail "import read $(grep -c "^list-cycle GET" "$MODE.hits") pages of a 2-page cycle"
[ -e "$I/cairn-store" ] && fail "a failed import left a store"
out=$("$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" 2>&1) || fail "import again: $out"
[ "$(markers "$I")" = "$n" ] || fail "the import has $(markers "$I") markers for $n objects"

# 2. gc over a listing that cycles
rm -f "$MODE.hits"
gc_refuses_listing list-cycle "ListObjectsV2.*out of order"
ok cairn gc >/dev/null
ok cairn verify >/dev/null
rm -rf "$TESTDIR/r"
ok cairn restore tank@1 "$TESTDIR/r" >/dev/null
cmp -s "$SRC/a" "$TESTDIR/r/a" || fail "restore differs"
done_test
