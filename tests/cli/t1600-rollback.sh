#!/bin/bash
# rollback: refuses while later snapshots or bookmarks exist (naming them),
# -r/-R destroy them in one transaction, a held later snapshot stops it all.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src"
echo one >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" pool
ok cairn snapshot pool@a
echo two >"$TESTDIR/src/f"
ok cairn snapshot pool@b
ok cairn bookmark pool@b pool#bb
echo three >"$TESTDIR/src/f"
ok cairn snapshot pool@c
ok cairn bookmark pool@a pool#aa

snaps() { cairn list -H -o name -t snapshot,bookmark -d 1 pool | tr '\n' ' '; }
before=$(snaps)

# Without -r: zfs's refusal, listing what -r would destroy; nothing changes.
err=$(cairn rollback pool@a 2>&1 >/dev/null)
rc=$?
[ $rc = 1 ] || fail "rollback with later snapshots: exit $rc"
echo "$err" | grep -q 'more recent snapshots or bookmarks exist' || fail "refusal text: $err"
echo "$err" | grep -qx 'pool@b' || fail "later snapshot not named: $err"
echo "$err" | grep -qx 'pool#bb' || fail "later bookmark not named: $err"
echo "$err" | grep -q 'pool#aa' && fail "bookmark of the target itself named: $err"
[ "$(snaps)" = "$before" ] || fail "refused rollback changed something"

# Rolling back to the newest is a no-op without -r.
ok cairn rollback pool@c

# A held later snapshot: refused, nothing destroyed.
ok cairn hold keep pool@c
fails_with 1 "held" cairn rollback -r pool@a
[ "$(snaps)" = "$before" ] || fail "rollback with a held snapshot changed something"
ok cairn release keep pool@c

# -R (syncoid's) destroys later snapshots and bookmarks, keeps earlier ones.
ok cairn rollback -R pool@a
[ "$(cairn list -H -o name -t snapshot,bookmark -d 1 pool | sort | tr '\n' ' ')" = "pool#aa pool@a " ] ||
	fail "after rollback -R: $(snaps)"
ok cairn restore pool@a "$TESTDIR/r"
[ "$(cat "$TESTDIR/r/f")" = one ] || fail "pool@a content after rollback"

# A retry converges; bad names are refused.
ok cairn rollback -r pool@a
fails_with 1 "does not exist" cairn rollback -r pool@nosuch
fails_with 2 "not a snapshot" cairn rollback pool
fails_with 2 "usage" cairn rollback -x pool@a
out=$(cairn rollback --help) || fail "rollback --help exit"
echo "$out" | grep -q 'usage: cairn rollback' || fail "rollback --help: $out"

# The space of destroyed snapshots is accounted: used drops back.
echo four >"$TESTDIR/src/g"
ok cairn snapshot pool@d
u1=$(cairn get -H -p -o value used pool)
ok cairn rollback -r pool@a
u2=$(cairn get -H -p -o value used pool)
[ "$u2" -lt "$u1" ] || fail "used did not drop after rollback: $u1 -> $u2"
done_test
