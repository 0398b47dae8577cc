#!/bin/bash
# gc over a bucket that refuses reads (HTTP 403), with snapshots in the
# store, failed safely but led with a warning about the index chunk it
# could not read ("index stream chunk ...: Permission denied", then the
# same for the tree stream), the bucket's 403 only in the last line's
# trailing detail.  t1481 runs gc with no snapshot left.
#  1. Reads refused, listings allowed (tests/s3/faultproxy.py
#     forbid-get-head): gc fails leading with the refusal (the chunk, the
#     GET and its HTTP 403 AccessDenied), says nothing of "Permission
#     denied", and changes nothing (markers, objects).
#  2. The same with a wrong secret (the radosgw's own 403).
#  3. With the right credential, gc succeeds and keeps every object.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
gc_tank
state() {
	(cd "$CAIRN_STORE/.chunks" && find . | LC_ALL=C sort)
	objects
}
state >"$TESTDIR/before"
refused() { # WHAT ERRFILE
	head -n 1 "$2" | grep -Eq "^cairn: gc: the bucket refused to read chunk [0-9a-f]{64} .*tank@1.*GET .*/chunks/.*HTTP 403" ||
		fail "$1: gc did not lead with the refusal, the request and the status: $(cat "$2")"
	grep -q "Permission denied" "$2" && fail "$1: gc blamed a local file: $(cat "$2")"
	state >"$TESTDIR/after"
	cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
		fail "$1: gc changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"
}

# 1. reads refused, listings allowed
echo forbid-get-head >"$MODE"
cairn gc >/dev/null 2>"$TESTDIR/gc1.err" && fail "gc with reads refused succeeded"
echo pass >"$MODE"
refused "reads refused" "$TESTDIR/gc1.err"
grep -q "HTTP 403 AccessDenied" "$TESTDIR/gc1.err" || fail "gc did not name the code: $(cat "$TESTDIR/gc1.err")"

# 2. a wrong secret
AWS_SECRET_ACCESS_KEY=wrong-secret "$CAIRN" gc >/dev/null 2>"$TESTDIR/gc2.err" &&
	fail "gc with a wrong secret succeeded"
refused "a wrong secret" "$TESTDIR/gc2.err"

# 3. the right credential
ok cairn gc >/dev/null
[ "$(objects)" = "$n" ] || fail "gc of a store whose snapshot needs every object left $(objects) of $n"
done_test
