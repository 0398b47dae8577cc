#!/bin/bash
# recv -F of a -R stream refuses the whole receive, changing nothing, when
# a snapshot it would destroy is held, also when that dataset's destroys
# wait for a later group (its first snapshot comes after the top's,
# 6beafdc): the hold was found only at that group's commit, after the
# first group was received (sync -R -F left d@2 behind and failed).  The
# snapshot the dataset's stream builds on may be held: it stays.
# The refusal names both held snapshots: either may be the one that stays.
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
echo x >>"$S/k/f"
ok ca snapshot p/k@0
ok ca sync -R p "$B:d"
ok cb hold keep d/k@0
ok cb hold base d/k@1
ok ca destroy p/k@0
ok ca bookmark p/k@1 'p/k#1'
ok ca destroy p/k@1
echo more >"$S/f2"
ok ca snapshot p@2
echo more >"$S/k/f2"
ok ca snapshot p/k@3
fails_with 1 "d/k@1, d/k@0: snapshots held" ca sync -R -F p "$B:d"
[ "$(names d)" = "d d@1 d/k d/k@1 d/k@0 " ] || fail "d changed by the refused sync: [$(names d)]"
ok cb release keep d/k@0
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F after the release: $out"
[ "$(names d)" = "d d@1 d@2 d/k d/k@1 d/k@3 " ] || fail "d after sync -R -F: [$(names d)]"
done_test
