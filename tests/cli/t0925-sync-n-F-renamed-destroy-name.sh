#!/bin/bash
# sync -R -F -n names a snapshot the real run destroys in a child renamed
# on the source by the name the receiver destroys it under, the child's
# new name ('would destroy d/j@1', as the run says 'destroyed d/j@1'):
# the receiver renames datasets first.  It named it by the old name.
# Both for a snapshot gone from the source and for one kept there only as
# a bookmark that the stream does not build on (3dd22f4).
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
echo k >>"$S/k/f"
ok ca snapshot p/k@0
ok ca sync -R p "$B:d"
ok ca bookmark p/k@1 'p/k#1'
ok ca destroy p/k@1
ok ca destroy p/k@0
ok ca rename p/k p/j
echo more >"$S/f2"
ok ca snapshot p@2
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "sync -R -F -n: $out"
[ "$(echo "$out" | grep "would destroy" | sort | tr '\n' ' ')" = "would destroy d/j@0 would destroy d/j@1 " ] ||
	fail "sync -R -F -n does not name d/j@0 and d/j@1: $out"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F: $out"
[ "$(echo "$out" | grep "^destroyed" | sort | tr '\n' ' ')" = "destroyed d/j@0 destroyed d/j@1 " ] ||
	fail "sync -R -F destroyed other snapshots: $out"
[ "$(names d)" = "d d@1 d@2 d/j " ] || fail "d after sync -R -F: [$(names d)]"
done_test
