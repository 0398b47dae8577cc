#!/bin/bash
# sync -R -F destroys, as recv -F does with an incremental -R stream, the
# destination's snapshots that the source no longer has - also when that
# is all that changed, as it does for destroyed datasets.  Before, a
# snapshot destroyed on the source left the destination "up to date" with
# it on every run, until the source took a new snapshot (whose stream
# then destroyed it): sync run again did not converge.  Bookmarks there
# stay (recv -F destroys none), and are no reason to send; without -F
# nothing is destroyed.
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
ok ca snapshot -r p@2
ok ca snapshot -r p@3
ok ca sync -R -F p "$B:d"
ok ca sync -R p "$B:e"
ok ca destroy -r p@2

# -n: says it would send, changes nothing
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "sync -R -F -n: $out"
echo "$out" | grep -q "up to date" && fail "BUG: sync -R -F -n calls d up to date, with d@2: $out"
[ "$(snaps d)" = "d@1 d@2 d@3 d/k@1 d/k@2 d/k@3 " ] || fail "sync -n changed d: $(snaps d)"

out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F: $out"
echo "$out" | grep -q "up to date" && fail "BUG: sync -R -F calls d up to date, with d@2: $out"
[ "$(snaps d)" = "d@1 d@3 d/k@1 d/k@3 " ] || fail "BUG: sync -R -F kept what the source destroyed: $(snaps d)"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "second sync -R -F: $out"
echo "$out" | grep -q "up to date" || fail "second sync -R -F is not up to date: $out"

# a bookmark there is no snapshot the source lacks
ok cb bookmark d@1 d#b1
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F beside a bookmark: $out"
echo "$out" | grep -q "up to date" || fail "a bookmark made sync -R -F send: $out"
[ "$(cb list -H -o name -t bookmark -r d)" = "d#b1" ] || fail "the bookmark went"

# without -F the destroyed snapshot stays, and that is up to date
out=$(ca sync -R -v p "$B:e" 2>&1) || fail "sync -R: $out"
echo "$out" | grep -q "up to date" || fail "sync -R without -F is not up to date: $out"
[ "$(snaps e)" = "e@1 e@2 e@3 e/k@1 e/k@2 e/k@3 " ] || fail "sync -R without -F destroyed: $(snaps e)"
done_test
