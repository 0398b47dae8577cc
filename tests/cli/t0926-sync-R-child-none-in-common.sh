#!/bin/bash
# sync -R (with or without -F) refuses, before it sends, a child there
# whose snapshots are none of the source child's (nor of its bookmarks):
# its stream is full, and the receiver refuses a full stream onto a
# dataset with snapshots.  sync -R -F -n said 'would destroy d/k@1' and
# 'would send p/k@2', and every real run failed in the receiver
# ('destination has snapshots (eg. d/k@1)').  Now both refuse alike,
# naming d/k@1, as sync refuses such a destination itself.
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
ok ca sync -R p "$B:d"
ok ca destroy p/k@1
echo k >>"$S/k/f"
ok ca snapshot -r p@2
for f in "-F -n" "-F" "-n" ""; do
	fails_with 1 "d/k@1.*none in common with p/k" ca sync -R $f p "$B:d"
done
[ "$(names d)" = "d d@1 d/k d/k@1 " ] || fail "d changed: [$(names d)]"
ok cb destroy d/k@1
ok ca sync -R -F p "$B:d"
[ "$(names d)" = "d d@1 d@2 d/k d/k@2 " ] || fail "d after sync -R -F: [$(names d)]"
done_test
