#!/bin/bash
# A store whose bucket does not exist (deleted, or misnamed in
# backend.conf) failed verify with a line per chunk it tried, each an
# "Input/output error" of that chunk, and only the summary named the
# cause; and a HEAD's 404, which has no body, passed for a missing object
# whatever was missing.  Now the first read that meets the missing bucket
# ends the verify: one error, "no such bucket NAME", no chunk judged,
# nothing changed (markers, lastverified).  With the right name again the
# same verify passes.  (tests/s3/test_s3.c checks the HEAD side:
# s3_have_many asks the bucket after a 404.)
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_corpus_snapshot
ok cairn snapshot tank@2 >/dev/null
ok cairn verify
[ "$(markers)" -gt 20 ] || fail "too few chunks for the test: $(markers)"

state() {
	(cd "$CAIRN_STORE/.chunks" && find . | LC_ALL=C sort)
	cairn get -H -o value lastverified tank@1 tank@2
}
conf=$CAIRN_STORE/backend.conf
nobucket=$BUCKET-none-$$
grep -q "^chunks = s3://$BUCKET/" "$conf" || fail "unexpected backend.conf: $(cat "$conf")"
sed -i "s#^chunks = s3://$BUCKET/#chunks = s3://$nobucket/#" "$conf"
"$S3TOOL" ls "$nobucket" "" >/dev/null 2>&1 && fail "bucket $nobucket exists"
rm -rf "$CAIRN_STORE/cache"
state >"$TESTDIR/before"

cairn verify >/dev/null 2>"$TESTDIR/v.err" && fail "verify without its bucket succeeded"
[ "$(wc -l <"$TESTDIR/v.err")" = 1 ] || fail "verify without its bucket: not one line: $(cat "$TESTDIR/v.err")"
grep -q "^cairn: verify: no such bucket $nobucket (.*HTTP 404 NoSuchBucket).*No chunk was judged, nothing was changed" \
	"$TESTDIR/v.err" || fail "verify did not name the missing bucket: $(cat "$TESTDIR/v.err")"
grep -q "bad chunk" "$TESTDIR/v.err" && fail "verify blamed chunks: $(cat "$TESTDIR/v.err")"
state >"$TESTDIR/after"
cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
	fail "verify changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"

# the right bucket again: the same verify works
sed -i "s#^chunks = s3://$nobucket/#chunks = s3://$BUCKET/#" "$conf"
ok cairn verify
done_test
