#!/bin/bash
# sync -R -F -n -v names every snapshot the real sync's receive destroys
# ("would destroy DEST@snap", as recv -n -v says it), not only datasets:
# snapshots the source pruned, and the destination's own snapshots the
# rollback takes.  It named none, so the dry run of a sync that destroyed
# six snapshots read "would sync ... 0B in 0 snapshots" and nothing else.
. "$(dirname "$0")/lib.sh"
new_store
second_store
T=$TESTDIR/src
mkdir -p "$T/kid"
ok ca create -o source="$T" tank
ok ca create tank/kid
for s in s1 s2 s3; do
	echo $s >"$T/f"
	echo $s >"$T/kid/g"
	ok ca snapshot -r tank@$s
done
ok cb create b
ok ca sync -R tank "$B:b/tank"

# what the real run says it destroyed ("destroyed X" from recv -v),
# against what the dry run said it would
check() {
	local what=$1 dry real
	dry=$(ca sync -R -F -n -v tank "$B:b/tank" 2>&1) || fail "$what: sync -n: $dry"
	dry=$(echo "$dry" | sed -n 's/^would destroy //p' | sort)
	real=$(ca sync -R -F -v tank "$B:b/tank" 2>&1) || fail "$what: sync: $real"
	real=$(echo "$real" | sed -n 's/^destroyed //p' | sort)
	[ -n "$real" ] || fail "$what: the real sync destroyed nothing (the test is wrong)"
	[ "$dry" = "$real" ] || fail "$what: sync -n said it would destroy [$(echo $dry)], the sync destroyed [$(echo $real)]"
}

# 1. the source pruned s1, nothing new: the sync only destroys
ok ca destroy -r tank@s1
check "pruned, no new snapshot"
# 2. the source pruned s2 and took s4: an incremental with destroys
ok ca destroy -r tank@s2
echo s4 >"$T/f"
ok ca snapshot -r tank@s4
check "pruned and a new snapshot"
# 3. a snapshot of the destination's own, newer than the common one: the
# rollback of -F takes it, and a new snapshot comes
ok cb snapshot b/tank/kid@mine
echo s5 >"$T/f"
ok ca snapshot -r tank@s5
check "rollback of the destination's own snapshot"
[ "$(cb list -H -o name -t snapshot -r b/tank | tr '\n' ' ')" = \
	"b/tank@s3 b/tank@s4 b/tank@s5 b/tank/kid@s3 b/tank/kid@s4 b/tank/kid@s5 " ] ||
	fail "destination: $(cb list -H -o name -t snapshot -r b/tank | tr '\n' ' ')"
done_test
