#!/bin/bash
# A destination whose own snapshots are none of the source's, with only a
# bookmark of a source snapshot beside them, is refused before anything
# is sent, as one without that bookmark is: a bookmark cannot start a
# receive, so only a full stream could follow, and the receiver refuses
# that onto a dataset with snapshots (with or without -F).  Before, the
# bookmark made sync take the destination for a copy: sync -n said it
# would send p@2 whole, and every sync sent the stream, which the
# receiver then refused ("destination has snapshots (eg. d@mine)").
. "$(dirname "$0")/lib.sh"
top_and_kid
refused() { fails_with 1 "d: has snapshots (eg. d@mine) but none in common with p.*refusing" "$@"; }
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
ok ca sync -R p "$B:d"
ok cb bookmark d@1 'd#1'
ok cb destroy -r d@1
ok cb snapshot d@mine
ok ca snapshot -r p@2
refused ca sync -n p "$B:d"
refused ca sync p "$B:d"
refused ca sync -F p "$B:d"
refused ca sync -R -F p "$B:d"
refused ca sync -R -n p "$B:d"
[ "$(names d)" = "d d@mine d#1 d/k " ] || fail "d changed by a refused sync: [$(names d)]"
# without the snapshot of its own, the bookmark alone: sent whole
ok cb destroy d@mine
out=$(ca sync -R p "$B:d" 2>&1) || fail "sync over the bookmark alone: $out"
[ "$(names d)" = "d d@1 d@2 d#1 d/k d/k@1 d/k@2 " ] || fail "d after the sync: [$(names d)]"
done_test
