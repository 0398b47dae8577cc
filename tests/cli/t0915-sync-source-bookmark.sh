#!/bin/bash
# sync sends each dataset from its newest snapshot or bookmark whose
# snapshot the destination has (REPLICATION.md, cairn-sync(8)): a source
# that keeps only a bookmark of what it sent (its snapshot destroyed to
# free space, as syncoid allows) is synced incrementally from it.  Before,
# sync looked for common snapshots only and refused: "has snapshots (eg.
# d@1) but none in common with p", though send -i p#1 | recv works.
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
ok ca sync -R p "$B:d"
ok ca sync p "$B:e"
ok ca bookmark p@1 'p#1'
ok ca bookmark p/k@1 'p/k#1'
ok ca destroy -r p@1
echo more >"$S/f2"; echo more >"$S/k/f2"
ok ca snapshot -r p@2

out=$(ca sync -n p "$B:e" 2>&1) || fail "sync -n from the bookmark: $out"
echo "$out" | grep -q "would sync p@2 #1 -> e" || fail "sync -n did not plan from p#1: $out"
out=$(ca sync -v p "$B:e" 2>&1) || fail "sync from the bookmark: $out"
[ "$(names e)" = "e e@1 e@2 " ] || fail "e after the sync: [$(names e)]"

# -R: from p#1 too (each dataset from its own base, p/k from p/k#1)
ok ca sync -R p "$B:d"
[ "$(names d)" = "d d@1 d@2 d/k d/k@1 d/k@2 " ] || fail "d after the sync: [$(names d)]"
out=$(ca sync -R -v p "$B:d" 2>&1) || fail "second sync -R: $out"
echo "$out" | grep -q "up to date" || fail "second sync -R is not up to date: $out"
# -R -F from a bookmark: the receiver keeps the snapshot the stream builds
# on, though the sender lists none of its guid (it has a bookmark of it);
# before, recv -F destroyed it and refused the stream, on every run
ok cb destroy -r d@2
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "sync -R -F -n from the bookmark: $out"
echo "$out" | grep -q "would destroy" && fail "sync -R -F -n would destroy the base: $out"
[ "$(names d)" = "d d@1 d/k d/k@1 " ] || fail "d changed by sync -n: [$(names d)]"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F from the bookmark: $out"
[ "$(names d)" = "d d@1 d@2 d/k d/k@1 d/k@2 " ] || fail "d after sync -R -F: [$(names d)]"
# the next run builds on neither d@1 nor d/k@1: they go (the source kept
# only bookmarks of them), and the dry run names them (t0923)
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "second sync -R -F -n: $out"
[ "$(echo "$out" | grep "would destroy" | tr '\n' ' ')" = "would destroy d@1 would destroy d/k@1 " ] ||
	fail "second sync -R -F -n does not name d@1 and d/k@1: $out"
ok ca sync -R -F p "$B:d"
[ "$(names d)" = "d d@2 d/k d/k@2 " ] || fail "d after the second sync -R -F: [$(names d)]"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "third sync -R -F: $out"
echo "$out" | grep -q "up to date" || fail "third sync -R -F is not up to date: $out"
# and the next stream
echo more >>"$S/f"
ok ca snapshot -r p@3
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F of p@3: $out"
[ "$(names d)" = "d d@2 d@3 d/k d/k@2 d/k@3 " ] || fail "d after sync -R -F of p@3: [$(names d)]"
done_test
