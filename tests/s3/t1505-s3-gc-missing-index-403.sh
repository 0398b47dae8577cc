#!/bin/bash
# S3 answers a GET of a missing key with 403 AccessDenied, not 404, when
# the credential lacks the ListBucket right (tests/s3/faultproxy.py
# missing-403).  gc took a 403 for a snapshot's index chunk for the
# credential's refusal and stopped, removing nothing, though the bucket
# read every other object: a store with one missing index chunk could
# never be collected with such a credential, where a 404 (a credential
# with ListBucket) lets gc walk that snapshot's tree instead.
#  1. One index chunk gone, missing keys answered 403: gc walks the
#     snapshot's tree, warns naming the index chunk and the 403, does not
#     blame the credential, removes the garbage (a destroyed snapshot's
#     objects) and keeps every object tank@1 needs.
#  2. Reads refused everywhere (forbid-get-head): still the credential's
#     refusal, nothing removed (as t1504).
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
gc_tank

# An index chunk: verify reads it twice (to list the others, then to check it).
key=$(verify_reads 1 2)
hex=${key##*/}
ok "$S3TOOL" rm "$BUCKET" "$key"
kept=$((n - 1))

# Garbage: a snapshot of more data, destroyed.
head -c 300000 /dev/urandom >"$SRC/b"
ok cairn snapshot tank@2 >/dev/null
ok cairn destroy tank@2
[ "$(objects)" -gt "$kept" ] || fail "tank@2 added no object"

# 2. every read refused: the credential's, nothing removed
rm -rf "$CAIRN_STORE/cache"
echo forbid-get-head >"$MODE"
cairn gc >/dev/null 2>"$TESTDIR/gc2.err" && fail "gc with reads refused succeeded"
echo pass >"$MODE"
grep -q "bucket refused to read chunk" "$TESTDIR/gc2.err" ||
	fail "gc with reads refused did not blame the bucket: $(cat "$TESTDIR/gc2.err")"
[ "$(objects)" -gt "$kept" ] || fail "gc with reads refused removed objects"

# 1. the index chunk's key answered 403, every other read allowed
rm -rf "$CAIRN_STORE/cache"
echo missing-403 >"$MODE"
cairn gc >/dev/null 2>"$TESTDIR/gc.err"
rc=$?
echo pass >"$MODE"
[ $rc = 1 ] || fail "gc over a missing index chunk answered 403 exited $rc: $(cat "$TESTDIR/gc.err")"
grep -q "bucket refused\|credential wrong" "$TESTDIR/gc.err" &&
	fail "gc blamed the credential: $(cat "$TESTDIR/gc.err")"
grep -q "tank@1: index stream chunk $hex.*403.*missing, or this credential may not read it" "$TESTDIR/gc.err" ||
	fail "gc did not name the index chunk and the 403: $(cat "$TESTDIR/gc.err")"
grep -q "trees were walked instead; the rest was collected" "$TESTDIR/gc.err" ||
	fail "gc did not walk the tree: $(cat "$TESTDIR/gc.err")"
[ "$(objects)" = "$kept" ] || fail "gc left $(objects) objects, tank@1 has $kept"
ok cairn restore tank@1 "$TESTDIR/out"
cmp -s "$SRC/a" "$TESTDIR/out/a" || fail "tank@1 restores differently"
done_test
