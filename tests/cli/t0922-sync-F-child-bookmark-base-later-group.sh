#!/bin/bash
# recv -F of a -R stream keeps a snapshot the stream's snapshots build on
# though the sender lists none of its guid (it sends from a bookmark of
# it), also when the dataset's first snapshot comes in a later group than
# the stream's first: the destroys of the snapshots the sender lacks were
# all made with the first group, so sync -R -F from a child's bookmark,
# the child's new snapshot taken after the top's, destroyed the child's
# base and failed ('the stream's incremental source ... is not on the
# target'); the next run sent the child whole.
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
ok ca sync -R p "$B:d"
ok ca bookmark p/k@1 'p/k#1'
ok ca destroy p/k@1
echo more >"$S/f2"
ok ca snapshot p@2
echo more >"$S/k/f2"
ok ca snapshot p/k@3
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "sync -R -F -n: $out"
echo "$out" | grep -q "would destroy" && fail "sync -R -F -n would destroy: $out"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F: $out"
echo "$out" | grep -q "destroyed" && fail "sync -R -F destroyed: $out"
[ "$(names d)" = "d d@1 d@2 d/k d/k@1 d/k@3 " ] || fail "d after sync -R -F: [$(names d)]"
# the next run builds on d/k@1 no more: it goes (t0923)
ok ca sync -R -F p "$B:d"
[ "$(names d)" = "d d@1 d@2 d/k d/k@3 " ] || fail "d after the second sync -R -F: [$(names d)]"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "third sync -R -F: $out"
echo "$out" | grep -q "up to date" || fail "third sync -R -F is not up to date: $out"
ok cb verify -r d >/dev/null
ok cb restore d/k@3 "$TESTDIR/r"
diff -r "$S/k" "$TESTDIR/r" >/dev/null || fail "d/k@3 differs from its source"
# a snapshot the sender lacks of a dataset whose first snapshot comes
# in a later group still goes, with that group: d/k@3 (gone from the
# source), while d/k@3b (kept there as p/k#3b) is the base of d/k@6
echo b >>"$S/k/f"
ok ca snapshot p/k@3b
ok ca sync -R p "$B:d"
ok ca bookmark p/k@3b 'p/k#3b'
ok ca destroy p/k@3b
ok ca destroy p/k@3
echo again >>"$S/f"
ok ca snapshot p@5
echo again >>"$S/k/f"
ok ca snapshot p/k@6
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "third sync -R -F: $out"
[ "$(names d)" = "d d@1 d@2 d@5 d/k d/k@3b d/k@6 " ] || fail "d after the third sync -R -F: [$(names d)]"
# a stream with no snapshots still destroys
ok ca destroy p@2
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "fourth sync -R -F: $out"
[ "$(names d)" = "d d@1 d@5 d/k d/k@6 " ] || fail "d after the fourth sync -R -F: [$(names d)]"
done_test
