#!/bin/bash
# A chunk whose object the bucket answers 403 while this credential reads
# others is reported "missing, or this credential may not read it" with
# "marker kept".  Said also of a chunk that had no marker left (removed
# before: by an earlier verify, a gc, by hand), it was untrue.  And the
# line went on ": Permission denied" after its own explanation: now the
# 403 has an error of its own (CAIRN_EFORBIDDEN), which is the explanation.
#  With two chunk objects gone and answered 403 (tests/s3/faultproxy.py
#  missing-403), one of them without its marker: verify names both, says
#  "marker kept" of the one that has its marker, and of the other that it
#  has none, and changes nothing.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
random_tank 1000000

keys=$(verify_reads 2)
for key in $keys; do
	ok "$S3TOOL" rm "$BUCKET" "$key"
done
kept=$(echo "$keys" | sed -n 1p) kept=${kept##*/}
gone=$(echo "$keys" | sed -n 2p) gone=${gone##*/}
ok rm "$CAIRN_STORE/.chunks/${gone:0:4}/$gone"
state() {
	(cd "$CAIRN_STORE/.chunks" && find . | LC_ALL=C sort)
	cairn get -H -o value lastverified tank@1
}
state >"$TESTDIR/before"

echo missing-403 >"$MODE"
cairn verify --threads 1 --order digest >/dev/null 2>"$TESTDIR/v.err" &&
	fail "verify with missing chunks answered 403 succeeded"
echo pass >"$MODE"
# one message each: where the marker stands, then why (no trailing
# ": Permission denied" after the explanation, which said it already)
why="the bucket answered 403 for the object though this credential reads others: missing, or this credential may not read it ([^:]*)\$"
grep "chunk $kept" "$TESTDIR/v.err" | grep -q ", marker kept: $why" ||
	fail "verify did not say $kept's marker is kept: $(cat "$TESTDIR/v.err")"
grep "chunk $gone" "$TESTDIR/v.err" | grep -q ", no marker (removed before): $why" ||
	fail "verify did not say $gone has no marker: $(cat "$TESTDIR/v.err")"
grep -q "Permission denied" "$TESTDIR/v.err" &&
	fail "verify ended a 403's explanation with Permission denied: $(cat "$TESTDIR/v.err")"
grep "chunk $gone" "$TESTDIR/v.err" | grep -q "marker kept" &&
	fail "verify said the marker of $gone, which has none, is kept: $(cat "$TESTDIR/v.err")"
state >"$TESTDIR/after"
cmp -s "$TESTDIR/before" "$TESTDIR/after" ||
	fail "verify changed the store: $(diff "$TESTDIR/before" "$TESTDIR/after" | head -n 5)"
done_test
