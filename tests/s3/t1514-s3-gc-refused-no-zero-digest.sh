#!/bin/bash
# gc's refusal (the bucket answers 403 for a stream chunk while mark reads
# it) named chunk 000...0 when the tree walk could not say which chunk it
# failed on.  Here the snapshot's index roots are emptied and its tree
# root's plain length zeroed in the catalog (a walk that does not record
# the failing chunk), and every chunk read is refused while the prefix's
# claim still reads (tests/s3/faultproxy.py forbid-chunks).
#  gc fails with the refusal naming the snapshot's tree stream and no
#  all-zero digest, and removes nothing.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

unnamed_stream_chunk
before=$(objects)

echo forbid-chunks >"$MODE"
cairn gc >/dev/null 2>"$TESTDIR/gc.err" && fail "gc with chunk reads refused succeeded"
echo pass >"$MODE"
grep -q "refused to read" "$TESTDIR/gc.err" || fail "gc did not name the refusal: $(cat "$TESTDIR/gc.err")"
grep -q "0000000000000000000000000000000000000000000000000000000000000000" "$TESTDIR/gc.err" &&
	fail "gc named an all-zero digest: $(cat "$TESTDIR/gc.err")"
grep -q "the tree stream of tank@1" "$TESTDIR/gc.err" ||
	fail "gc did not name the snapshot's tree stream: $(cat "$TESTDIR/gc.err")"
[ "$(objects)" = "$before" ] || fail "gc removed objects: $before before, $(objects) after"
done_test
