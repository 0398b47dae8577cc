#!/bin/bash
# After a 403 for a chunk, verify reads again an object it read before
# (or, before any, the prefix's claim meta/store-id) to tell a credential
# that reads the bucket (the 403 is that object's: missing, to a
# credential without ListBucket) from one refused everywhere.  Any
# failure of that second read counted as the credential's refusal, even a
# 404: but a 404 (NoSuchKey) is the bucket answering this credential, as
# only a credential that may list and read gets one.  So a store whose
# prefix has no claim (made before claims, never collected since), with
# the first chunk verify reads (the index chunk) missing and answered 403
# (tests/s3/faultproxy.py missing-403), was reported as "the bucket
# refused to read chunk ...: is the credential wrong", naming no chunk.
#  1. verify fails naming the index chunk as missing or unreadable with
#     this credential, does not blame the credential, and changes nothing.
#  2. With reads refused everywhere (forbid-get-head), still the
#     credential's refusal.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

# The index chunk: the first one verify reads, and read twice.
key=$(verify_reads 1 2)
first=$(sed -n 's|^log GET /[^/]*/\(.*/chunks/.*\)|\1|p' "$MODE.hits" | head -n 1)
[ "$key" = "$first" ] || fail "the chunk read twice ($key) is not the first read ($first)"
hex=${key##*/}
ok "$S3TOOL" rm "$BUCKET" "$key"
# A prefix without a claim (a store made before claims).
ok "$S3TOOL" rm "$BUCKET" "$PFX/meta/store-id"
state() {
	(cd "$CAIRN_STORE/.chunks" && find . | LC_ALL=C sort)
	cairn get -H -o value lastverified tank@1
	objects
}
state >"$TESTDIR/before"

# 1. the missing index chunk answered 403, everything else readable
echo missing-403 >"$MODE"
cairn verify >/dev/null 2>"$TESTDIR/v.err" && fail "verify with a missing chunk answered 403 succeeded"
echo pass >"$MODE"
grep -q "credential wrong" "$TESTDIR/v.err" && fail "verify blamed the credential: $(cat "$TESTDIR/v.err")"
grep -q "chunk $hex.*403.*missing, or this credential may not read it" "$TESTDIR/v.err" ||
	fail "verify did not name $hex as missing or unreadable: $(cat "$TESTDIR/v.err")"
grep -q "1 bad chunks" "$TESTDIR/v.err" || fail "verify did not count 1 bad chunk: $(cat "$TESTDIR/v.err")"
state >"$TESTDIR/after"
cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
	fail "verify changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"

# 2. every read refused: the credential's
verify_blames_credential
done_test
