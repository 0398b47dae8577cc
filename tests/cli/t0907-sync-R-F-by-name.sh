#!/bin/bash
# sync -R -F and recv -R -F agree on which destination datasets are the
# source's.  recv's reconcile keeps a dataset the stream receives into by
# name (whatever its guids); sync's dest_extra must count it as the
# source's too, or sync sees a destroy to send that the receiver never
# makes: every run sends a stream (never "up to date"), sync -n prints
# "would destroy" for a dataset no receive destroys, and a first sync -R -F
# is refused for a destroy that would not happen.
. "$(dirname "$0")/lib.sh"
top_and_kid

# ---- a source child without snapshots, a destination child of its name ----
ok ca create -o source="$S" p
ok ca snapshot p@1
ok ca sync -R -F p "$B:d"
ok ca create -o source="$S/k" p/k
ok cb create d/k
ok ca snapshot p@2
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F: $out"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "second sync -R -F: $out"
echo "$out" | grep -q "up to date" ||
	fail "BUG: second sync -R -F not up to date (d/k is kept by the receiver): $out"
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "sync -R -F -n: $out"
echo "$out" | grep -q "would destroy" &&
	fail "BUG: sync -R -F -n would destroy what recv keeps: $out"
[ "$(names d)" = "d d@1 d@2 d/k " ] || fail "d after sync -R -F: [$(names d)]"

# ---- a first sync -R -F into a top with a child of a source child's name ----
# e/k is where p/k goes by name: no destroy, so no refusal.
ok cb create e
ok cb create e/k
out=$(ca sync -R -F -v p "$B:e" 2>&1) ||
	fail "BUG: first sync -R -F into e (e/k is p/k's by name) refused: $out"
out=$(ca sync -R -F -v p "$B:e" 2>&1) || fail "second sync -R -F into e: $out"
echo "$out" | grep -q "up to date" || fail "second sync -R -F into e not up to date: $out"
[ "$(names e)" = "e e@1 e@2 e/k " ] || fail "e after sync -R -F: [$(names e)]"
done_test
