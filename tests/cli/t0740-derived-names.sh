#!/bin/bash
# Names an operation makes for objects other than its operand (a
# descendant's snapshot under -r, the snapshots and bookmarks of a renamed
# dataset) must be valid too, as zfs checks each: a name over 255 bytes or
# a tree deeper than 50 components is refused and nothing changes.  With
# -r, the named snapshot itself must exist; descendants without it are
# skipped, even when their name could not be valid.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src"
echo x >"$TESTDIR/src/f"
K=$(printf 'k%.0s' {1..200})
X=$(printf 'x%.0s' {1..60})
Y=$(printf 'y%.0s' {1..240})
ok cairn create -o source="$TESTDIR/src" tank
ok cairn create -o source="$TESTDIR/src" "tank/$K"
state() { cairn list -H -o name -t all -r tank | sort | md5sum; }

# 1. snapshot -r: tank/K@X would be 266 bytes
before=$(state)
fails_with 1 "tank/$K@$X: name is 266 bytes long" cairn snapshot -r "tank@$X"
[ "$(state)" = "$before" ] || fail "a refused snapshot -r left snapshots"

# 2. rename -r of a snapshot to a name too long for a descendant
ok cairn snapshot -r tank@a
before=$(state)
fails_with 1 "tank/$K@$X: name is 266 bytes long" cairn rename -r tank@a "tank@$X"
[ "$(state)" = "$before" ] || fail "a refused rename -r renamed something"

# 3. rename -r of a snapshot the operand lacks (only a descendant has it)
ok cairn snapshot "tank/$K@only"
fails_with 1 "tank@only: snapshot does not exist" cairn rename -r tank@only tank@new
cairn list -H -o name "tank/$K@only" >/dev/null 2>&1 || fail "refused rename -r renamed a descendant"
fails_with 1 "tank@only: snapshot does not exist" cairn inherit -r user:x tank@only

# 4. destroy -r skips a descendant whose name could not exist
ok cairn snapshot "tank@$X.b"
ok cairn destroy -r "tank@$X.b"
cairn list -H -o name "tank@$X.b" >/dev/null 2>&1 && fail "destroy -r left tank@$X.b"

# 5. renaming a dataset: its snapshots' and bookmarks' names count
ok cairn create -o source="$TESTDIR/src" t2
ok cairn snapshot "t2@$Y"
before=$(state; cairn list -H -o name -t all -r t2 | md5sum)
fails_with 1 "t2zzzzzzzzzzzzzzzz@$Y: name is 259 bytes long" cairn rename t2 t2zzzzzzzzzzzzzzzz
ok cairn snapshot t2@s
ok cairn bookmark t2@s "t2#${Y}"
ok cairn destroy "t2@$Y"
fails_with 1 "t2zzzzzzzzzzzzzzzz#$Y: name is 259 bytes long" cairn rename t2 t2zzzzzzzzzzzzzzzz
cairn list -H -o name t2 >/dev/null || fail "refused rename moved t2"

# 6. nesting: at most 50 components, on create and on rename
N=tank
for i in $(seq 48); do N=$N/a; done
ok cairn create -p "$N"
fails_with 1 "maximum name nesting depth exceeded" cairn create "$N/a/b"
ok cairn create "$N/a"
ok cairn create -o source="$TESTDIR/src" deep
ok cairn create deep/c
fails_with 1 "maximum name nesting depth exceeded" cairn rename deep "$N/d"
cairn list -H -o name deep/c >/dev/null || fail "refused rename moved deep"

# 7. messages that name the real reason
fails_with 1 "only user properties" cairn inherit compression tank@a
fails_with 1 "invalid character '#'" cairn destroy 'tank@a#x'
ok cairn snapshot tank@later
ok cairn hold keep tank@later
err=$(cairn rollback -r tank@a 2>&1)
echo "$err" | grep -q "snapshot is held" || fail "rollback past a held snapshot: $err"
echo "$err" | grep -q "destroy -d" && fail "rollback suggests destroy -d: $err"
done_test
