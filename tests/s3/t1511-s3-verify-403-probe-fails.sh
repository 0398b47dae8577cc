#!/bin/bash
# After a 403 for a chunk, verify checks whether this credential reads an
# object it read before (a HEAD).  When that check itself failed for
# another reason (503s past the retry budget, the bucket out of reach),
# verify still said "the bucket refused ... is the credential wrong":
# nothing it knew.  (tests/s3/faultproxy.py missing-403-head-503: a
# missing chunk's 404 answered 403, every HEAD of a chunk 503.)
#  verify fails saying it could not check whether the credential reads
#  other objects and why (the HEAD and its 503), does not blame the
#  credential, judges no chunk and changes nothing.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

# A chunk that verify reads only once (not an index chunk) goes.
key=$(verify_reads 1)
ok "$S3TOOL" rm "$BUCKET" "$key"
state() {
	(cd "$CAIRN_STORE/.chunks" && find . | LC_ALL=C sort)
	cairn get -H -o value lastverified tank@1
}
state >"$TESTDIR/before"

echo missing-403-head-503 >"$MODE"
cairn verify --threads 1 --order digest >/dev/null 2>"$TESTDIR/v.err" &&
	fail "verify whose check after a 403 failed succeeded"
echo pass >"$MODE"
grep -q "^missing-403-head-503 HEAD " "$MODE.hits" || fail "verify made no HEAD: $(cat "$MODE.hits")"
grep -q "credential wrong" "$TESTDIR/v.err" && fail "verify blamed the credential: $(cat "$TESTDIR/v.err")"
grep -q "refused to read chunk ${key##*/}.*could not check whether the credential reads other objects: HEAD .*HTTP 503" "$TESTDIR/v.err" ||
	fail "verify did not say the check failed, and why: $(cat "$TESTDIR/v.err")"
grep -q "No chunk was judged, nothing was changed" "$TESTDIR/v.err" ||
	fail "verify did not say it judged nothing: $(cat "$TESTDIR/v.err")"
grep -q "bad chunk" "$TESTDIR/v.err" && fail "verify reported bad chunks: $(cat "$TESTDIR/v.err")"
state >"$TESTDIR/after"
cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
	fail "verify changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"
done_test
