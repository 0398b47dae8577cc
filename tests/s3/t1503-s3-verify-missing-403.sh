#!/bin/bash
# S3 answers a GET of a missing key with 403 AccessDenied, not 404, when
# the credential lacks the ListBucket right (tests/s3/faultproxy.py
# missing-403 turns the radosgw's 404 for a chunk into that 403).  verify
# then blamed the credential ("is the credential wrong, or without read
# access?") and named no missing chunk, though it read every other one.
#  1. With two chunk objects gone, verify fails naming each of them as
#     missing or not readable with this credential, does not blame the
#     credential, and keeps their markers (it cannot tell which) and
#     lastverified as they were.
#  2. With reads refused everywhere (forbid-get-head), verify still blames
#     the credential and judges no chunk.
#  3. With 404s answered as such, verify finds both missing and removes
#     their markers.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

# Two chunks that verify reads only once (not index chunks, which it also
# reads to list the others) go from the bucket.
keys=$(verify_reads 2)
hexes=
for key in $keys; do
	ok "$S3TOOL" rm "$BUCKET" "$key"
	hexes="$hexes ${key##*/}"
done
state() {
	(cd "$CAIRN_STORE/.chunks" && find . | LC_ALL=C sort)
	cairn get -H -o value lastverified tank@1
}
state >"$TESTDIR/before"

# 1. missing keys answered 403
echo missing-403 >"$MODE"
cairn verify >/dev/null 2>"$TESTDIR/v.err" && fail "verify with missing chunks answered 403 succeeded"
echo pass >"$MODE"
grep -q "credential wrong" "$TESTDIR/v.err" && fail "verify blamed the credential: $(cat "$TESTDIR/v.err")"
for hex in $hexes; do
	grep -q "chunk $hex.*403.*missing, or this credential may not read it" "$TESTDIR/v.err" ||
		fail "verify did not name $hex as missing or unreadable: $(cat "$TESTDIR/v.err")"
done
grep -q "2 bad chunks" "$TESTDIR/v.err" || fail "verify did not count 2 bad chunks: $(cat "$TESTDIR/v.err")"
state >"$TESTDIR/after"
cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
	fail "verify changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"

# 2. every read refused: the credential's
verify_blames_credential

# 3. 404s as such
cairn verify >/dev/null 2>"$TESTDIR/v3.err" && fail "verify with missing chunks succeeded"
for hex in $hexes; do
	grep -q "$hex.*marker removed" "$TESTDIR/v3.err" || fail "verify did not find $hex missing: $(cat "$TESTDIR/v3.err")"
	[ -e "$CAIRN_STORE/.chunks/${hex:0:4}/$hex" ] && fail "verify kept the marker of missing $hex"
done
done_test
