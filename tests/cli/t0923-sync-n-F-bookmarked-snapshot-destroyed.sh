#!/bin/bash
# sync -R -F -n names each destination snapshot the real run destroys,
# also one whose snapshot the source keeps only as a bookmark when the
# dataset's stream does not build on it (nothing new in that dataset, or
# it goes on from a newer base): the receiver destroys it, as one the
# sender lacks.  b78a170 left every such snapshot out of the dry run, so
# it said nothing of 'destroyed d/k@1'.  One the stream builds on stays,
# and the dry run says nothing of it (t0915, t0922).
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
# p/k has nothing new: its stream does not build on d/k@1
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "sync -R -F -n: $out"
echo "$out" | grep -q "would destroy d/k@1" || fail "sync -R -F -n does not name d/k@1: $out"
[ "$(names d)" = "d d@1 d/k d/k@1 " ] || fail "d changed by sync -n: [$(names d)]"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F: $out"
echo "$out" | grep -q "destroyed d/k@1" || fail "sync -R -F kept d/k@1: $out"
# two bookmarked there: the stream builds on the newer, d/k@3 (kept as
# p/k#3), and d/k@2 goes
ok ca snapshot p/k@2
echo again >>"$S/k/f"
ok ca snapshot p/k@3
ok ca sync -R p "$B:d"
ok ca bookmark p/k@2 'p/k#2'
ok ca bookmark p/k@3 'p/k#3'
ok ca destroy p/k@2
ok ca destroy p/k@3
echo more >"$S/k/f4"
ok ca snapshot p/k@4
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "second sync -R -F -n: $out"
[ "$(echo "$out" | grep "would destroy")" = "would destroy d/k@2" ] ||
	fail "second sync -R -F -n does not name d/k@2 alone: $out"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "second sync -R -F: $out"
[ "$(names d)" = "d d@1 d@2 d/k d/k@3 d/k@4 " ] || fail "d after the second sync -R -F: [$(names d)]"
# the next run builds on none of them: d/k@3 goes, named by the dry run
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "third sync -R -F -n: $out"
[ "$(echo "$out" | grep "would destroy")" = "would destroy d/k@3" ] ||
	fail "third sync -R -F -n does not name d/k@3 alone: $out"
ok ca sync -R -F p "$B:d"
[ "$(names d)" = "d d@1 d@2 d/k d/k@4 " ] || fail "d after the third sync -R -F: [$(names d)]"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "fourth sync -R -F: $out"
echo "$out" | grep -q "up to date" || fail "fourth sync -R -F is not up to date: $out"
done_test
