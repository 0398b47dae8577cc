#!/bin/bash
# When the bucket refuses verify's reads and the stream walk cannot say
# which chunk it failed on, verify's refusal named chunk 000...0 (an
# all-zero digest, never a chunk).  Here the snapshot's index roots are
# emptied and its tree root's plain length zeroed in the catalog (a walk
# that does not record the failing chunk), and every read is refused
# (tests/s3/faultproxy.py forbid-get-head).
#  verify fails with the credential's refusal naming the snapshot and its
#  tree stream, and no all-zero digest.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

unnamed_stream_chunk

echo forbid-get-head >"$MODE"
cairn verify tank@1 >/dev/null 2>"$TESTDIR/v.err" && fail "verify with reads refused succeeded"
echo pass >"$MODE"
grep -q "refused to read.*credential wrong" "$TESTDIR/v.err" ||
	fail "verify did not blame the credential: $(cat "$TESTDIR/v.err")"
grep -q "0000000000000000000000000000000000000000000000000000000000000000" "$TESTDIR/v.err" &&
	fail "verify named an all-zero digest: $(cat "$TESTDIR/v.err")"
grep -q "tree stream of tank@1" "$TESTDIR/v.err" ||
	fail "verify did not name the snapshot's tree stream: $(cat "$TESTDIR/v.err")"
done_test
