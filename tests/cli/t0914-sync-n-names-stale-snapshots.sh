#!/bin/bash
# sync -n -R -F names the snapshots the stream would destroy there (those
# the source no longer has, of the destination datasets it receives
# into): "would destroy d@2", as it names the datasets it would destroy
# and as recv -n -F -v does, before what it would send.  Before, a sync
# whose only change was such a snapshot said "would sync p@3 @3 -> d: 0B
# in 0 snapshots", naming nothing, and one with new snapshots too named
# only those.  Bookmarks are not named (they stay), nor anything without -F.
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
ok ca snapshot -r p@2
ok ca snapshot -r p@3
ok ca sync -R -F p "$B:d"
ok cb bookmark d@2 d#b2
ok ca destroy -r p@2
named() { # OUT: names d@2 and d/k@2, not d#b2, before the sync line
	echo "$1" | grep -qx "would destroy d@2" || fail "sync -n did not name d@2: $1"
	echo "$1" | grep -qx "would destroy d/k@2" || fail "sync -n did not name d/k@2: $1"
	echo "$1" | grep -q "d#b2" && fail "sync -n named the bookmark: $1"
	[ "$(echo "$1" | grep -n "would destroy d/k@2" | cut -d: -f1)" -lt \
		"$(echo "$1" | grep -n "would sync" | cut -d: -f1)" ] 2>/dev/null ||
		fail "the destroys do not come first: $1"
}
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "sync -R -F -n: $out"
named "$out"
out=$(ca sync -R -n p "$B:d" 2>&1) || fail "sync -R -n: $out"
echo "$out" | grep -q "would destroy" && fail "sync -R -n (no -F) names destroys: $out"
# with a new snapshot too
ok ca snapshot -r p@4
out=$(ca sync -R -F -n p "$B:d" 2>&1) || fail "sync -R -F -n with p@4: $out"
named "$out"
[ "$(snaps d)" = "d@1 d@2 d@3 d/k@1 d/k@2 d/k@3 " ] || fail "sync -n changed d: $(snaps d)"
out=$(ca sync -R -F -v p "$B:d" 2>&1) || fail "sync -R -F: $out"
echo "$out" | grep -qx "destroyed d@2" || fail "sync -R -F -v did not name d@2: $out"
[ "$(snaps d)" = "d@1 d@3 d@4 d/k@1 d/k@3 d/k@4 " ] || fail "d after the sync: $(snaps d)"
done_test
