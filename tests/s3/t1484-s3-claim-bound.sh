#!/bin/bash
# The prefix's claim, meta/store-id, is a 16-digit id, but it was read with
# a meta object's 4 GiB bound: a broken or hostile server (or a stray
# upload) holding a huge claim made gc and init read it whole into
# memory, and compare its first 23 bytes as if they were an id.  It is now
# read with a bound of 23 bytes (all an id may be); over it, the command
# fails naming the object and the bound:
#  1. gc over a 40 MB claim fails so, in little memory, deleting nothing.
#  2. A claim of 24 bytes, one over, fails gc the same way.
#  3. init --chunks on a prefix holding only such a claim fails naming the
#     object, leaving no store.
#  4. With the store's own claim back, gc removes the garbage.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_new_store
ok cairn config gc_atime_cutoff=0
random_tank 300000
ok cairn destroy tank@1
n=$(objects)
[ "$n" -ge 2 ] || fail "only $n objects"
claim=$("$S3TOOL" get "$BUCKET" "$PFX/meta/store-id") || fail "reading the claim"
[ ${#claim} = 16 ] || fail "the claim is not a 16-digit id: $claim"

# 1. a 40 MB claim
head -c 40000000 /dev/zero | tr '\0' a >"$TESTDIR/huge"
ok "$S3TOOL" put "$BUCKET" "$PFX/meta/store-id" "$TESTDIR/huge"
peak_rss 30000 "$CAIRN" gc && fail "gc over a 40 MB claim succeeded"
grep -q "meta/store-id: answer over 23 bytes" "$TESTDIR/out" ||
	fail "gc did not name the claim and its bound: $(cut -c1-300 "$TESTDIR/out")"
[ "$(objects)" = "$n" ] || fail "objects went under a claim that is not ours: $(objects) of $n"

# 2. one byte over
printf '%s' "${claim}01234567" >"$TESTDIR/claim24"
ok "$S3TOOL" put "$BUCKET" "$PFX/meta/store-id" "$TESTDIR/claim24"
fails_with 1 "meta/store-id: answer over 23 bytes" cairn gc
[ "$(objects)" = "$n" ] || fail "objects went under a claim of 24 bytes: $(objects) of $n"

# 3. init on a prefix that holds only such a claim (no catalog)
O=$TESTDIR/other
ok "$S3TOOL" put "$BUCKET" "$PFX-bare/meta/store-id" "$TESTDIR/claim24"
fails_with 1 "meta/store-id: answer over 23 bytes" "$CAIRN" -s "$O" init --chunks "s3://$BUCKET/$PFX-bare"
[ -e "$O/cairn-store" ] && fail "a failed init left a store"
ok "$S3TOOL" rm "$BUCKET" "$PFX-bare/meta/store-id"

# 4. the store's own claim again
printf '%s' "$claim" >"$TESTDIR/claim"
ok "$S3TOOL" put "$BUCKET" "$PFX/meta/store-id" "$TESTDIR/claim"
ok cairn gc >/dev/null
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
done_test
