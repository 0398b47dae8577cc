#!/bin/bash
# verify that the bucket refuses a read (HTTP 403) fails saying "No chunk
# was judged, nothing was changed" (t1481), and docs/BACKENDS.md says it
# "reports no chunk bad and changes nothing".  But a chunk the bucket had
# answered 404 before the refusal (a credential that stops working part
# way: tests/s3/faultproxy.py forbid-after-404) was still reported bad and
# lost its marker, under that very message.
#  1. verify (one reader, digest order) over a missing chunk read before
#     the refusal fails naming the refusal, reports no bad chunk, and
#     changes nothing: the missing chunk's marker stays.
#  2. With the right credential again, verify finds the chunk missing and
#     removes its marker.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

# Which chunks verify reads only once (not index chunks, which it reads
# to list the others first): the first of them in digest order goes.
key=$(verify_reads 1)
hex=${key##*/}
later=$(sed -n 's|^log GET /[^/]*/.*/chunks/[^/]*/||p' "$MODE.hits" | LC_ALL=C sort -u | awk -v h="$hex" '$1 > h' | wc -l)
[ "$later" -ge 1 ] || fail "no chunk comes after $hex"
ok "$S3TOOL" rm "$BUCKET" "$key"
[ -e "$CAIRN_STORE/.chunks/${hex:0:4}/$hex" ] || fail "no marker for $hex"
state() {
	(cd "$CAIRN_STORE/.chunks" && find . | LC_ALL=C sort)
	cairn get -H -o value lastverified tank@1
}
state >"$TESTDIR/before"

# 1. a 404, then every read refused
rm -f "$MODE.hits"
echo forbid-after-404 >"$MODE"
cairn verify --threads 1 --order digest >/dev/null 2>"$TESTDIR/v.err" &&
	fail "verify with reads refused part way succeeded"
echo pass >"$MODE"
grep -q "refused to read chunk.*GET .*/chunks/.*HTTP 403" "$TESTDIR/v.err" ||
	fail "verify did not name the refusal: $(cat "$TESTDIR/v.err")"
grep -q "bad chunk\|marker removed" "$TESTDIR/v.err" && fail "verify reported bad chunks: $(cat "$TESTDIR/v.err")"
state >"$TESTDIR/after"
cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
	fail "verify changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"

# 2. the right credential again
fails_with 1 "$hex.*marker removed" cairn verify
[ -e "$CAIRN_STORE/.chunks/${hex:0:4}/$hex" ] && fail "verify kept the marker of a missing chunk"
done_test
