#!/bin/bash
# After a 403 for one chunk object, verify asks the bucket again for an
# object it read before (a HEAD): if that works, the 403 is that object's.
# But "read before" counted a chunk read from its local file, kept whole
# there, for which the bucket may have no object: the HEAD of it was
# answered 403 too (missing, to a credential without ListBucket), and
# verify blamed the credential, judging no chunk, though the bucket reads
# fine.  Only a chunk the bucket itself answered may be asked about now.
#  With the first index chunk kept whole locally and its object gone, and
#  a content chunk's object gone, under missing-403 (tests/s3/faultproxy.py):
#  verify reports the content chunk (missing or not readable with this
#  credential), does not blame the credential, and leaves the locally
#  kept chunk alone.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

# the first chunk verify reads: the first index chunk (its collect phase)
echo log >"$MODE"
ok cairn verify --threads 1 --order digest >/dev/null
echo pass >"$MODE"
lkey=$(sed -n 's|^log GET /[^/]*/\(.*/chunks/.*\)|\1|p' "$MODE.hits" | head -n 1)
[ -n "$lkey" ] || fail "no chunk read logged: $(cat "$MODE.hits")"
lhex=${lkey##*/}
rm -f "$MODE.hits"
# a content chunk (read once), not that one
mkey=$(verify_reads 3 | grep -v "$lhex" | head -n 1)
mhex=${mkey##*/}
[ -n "$mhex" ] && [ "$mhex" != "$lhex" ] || fail "no second chunk to remove"

# the index chunk's local file holds its blob; its object goes
marker=$CAIRN_STORE/.chunks/${lhex:0:4}/$lhex
ok "$S3TOOL" get "$BUCKET" "$lkey" >"$TESTDIR/blob"
cp "$TESTDIR/blob" "$marker"
ok "$S3TOOL" rm "$BUCKET" "$lkey"
ok "$S3TOOL" rm "$BUCKET" "$mkey"

echo missing-403 >"$MODE"
rm -f "$MODE.hits"
cairn verify --threads 1 --order digest >/dev/null 2>"$TESTDIR/v.err" &&
	fail "verify with a chunk answered 403 succeeded"
echo pass >"$MODE"
grep -q "credential wrong\|could not check" "$TESTDIR/v.err" &&
	fail "verify blamed the credential: $(cat "$TESTDIR/v.err")"
grep -q "chunk $mhex .*403.*missing, or this credential may not read it" "$TESTDIR/v.err" ||
	fail "verify did not report $mhex: $(cat "$TESTDIR/v.err")"
grep -q "$lhex" "$TESTDIR/v.err" && fail "verify reported the locally kept chunk: $(cat "$TESTDIR/v.err")"
cmp -s "$TESTDIR/blob" "$marker" || fail "verify changed the locally kept chunk's file"
done_test
