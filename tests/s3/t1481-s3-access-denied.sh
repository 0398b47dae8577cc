#!/bin/bash
# A credential the bucket refuses (HTTP 403 on every read: a wrong secret,
# or a key without read rights: tests/s3/faultproxy.py forbid-get-head,
# whose listings still work) says nothing about any chunk.  verify
# reported each chunk it tried as bad ("N bad chunks", "Permission denied"
# on the local marker's path) though nothing was set aside.
#  1. verify with a wrong secret (the radosgw's own 403) fails naming the
#     refusal, the request and the status, reports no bad chunk, and
#     changes nothing (markers, objects, lastverified).
#  2. The same with reads refused and listings allowed; gc fails naming
#     the request and the status, and deletes nothing.
#  3. With the right credential, verify and gc succeed.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
gc_tank
state() {
	(cd "$CAIRN_STORE/.chunks" && find . | LC_ALL=C sort)
	cairn get -H -o value lastverified tank@1
	objects
}
state >"$TESTDIR/before"
unchanged() {
	state >"$TESTDIR/after" 2>/dev/null
	cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
		fail "$1 changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"
}
refused() { # WHAT ERRFILE: verify's refusal, named as such
	grep -q "refused to read chunk.*credential.*GET .*/chunks/.*HTTP 403" "$2" ||
		fail "$1 did not name the refusal, the request and the status: $(cat "$2")"
	grep -q "bad chunk" "$2" && fail "$1 reported bad chunks: $(cat "$2")"
}

# 1. a wrong secret
AWS_SECRET_ACCESS_KEY=wrong-secret "$CAIRN" verify >/dev/null 2>"$TESTDIR/v1.err" &&
	fail "verify with a wrong secret succeeded"
refused "verify with a wrong secret" "$TESTDIR/v1.err"
unchanged "verify with a wrong secret"

# 2. reads refused, listings allowed
echo forbid-get-head >"$MODE"
cairn verify >/dev/null 2>"$TESTDIR/v2.err" && fail "verify with reads refused succeeded"
refused "verify with reads refused" "$TESTDIR/v2.err"
unchanged "verify with reads refused"
echo pass >"$MODE"
ok cairn destroy tank@1
state >"$TESTDIR/before" 2>/dev/null
echo forbid-get-head >"$MODE"
cairn gc >/dev/null 2>"$TESTDIR/gc.err" && fail "gc with reads refused succeeded"
grep -q "GET .*HTTP 403 AccessDenied" "$TESTDIR/gc.err" ||
	fail "gc did not name the request and the status: $(cat "$TESTDIR/gc.err")"
unchanged "gc with reads refused"

# 3. the right credential again
echo pass >"$MODE"
ok cairn gc >/dev/null
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
ok cairn verify >/dev/null
done_test
