#!/bin/bash
# recv -R -F destroys what the sender no longer has only for an
# incremental replication stream, as zfs does (zfs-receive(8) -F: "If
# receiving an incremental replication stream ..."; libzfs reconciles
# renames and destroys only for a stream with a fromsnap).  A FULL -R
# stream lists the sender's subtree, not the target's: datasets under the
# target that it lacks, and snapshots of its datasets that it lacks, are
# unrelated to it and must stay, with -F too, in a dry run as in a real
# receive.  An incremental -R -F stream still destroys both.
. "$(dirname "$0")/lib.sh"
new_store
second_store
S=$TESTDIR/src
mkdir -p "$S/a" "$S/mine"
echo top >"$S/f"; echo a >"$S/a/f"; echo mine >"$S/mine/f"

ok ca create -o source="$S" pool
ok ca create -o source="$S/a" pool/a
ok ca snapshot -r pool@0
ok ca snapshot -r pool@1

# ---- a full -R -F stream into a target with unrelated children ----
# bk exists without snapshots (a full stream may go into it with -F);
# bk/mine is the receiver's own dataset, with a snapshot of its own.
ok cb create bk
ok cb create -o source="$S/mine" bk/mine
ok cb snapshot bk/mine@own
before=$(names bk/mine)
cb recv -F -n -v bk < <(ca send -R pool@1) >"$TESTDIR/out" 2>&1 ||
	fail "recv -F -n of a full -R stream refused: $(cat "$TESTDIR/out")"
grep -q "destroy" "$TESTDIR/out" &&
	fail "BUG: recv -F -n of a full -R stream would destroy: $(cat "$TESTDIR/out")"
ca send -R pool@1 | cb recv -F -v bk >"$TESTDIR/out" 2>&1 ||
	fail "recv -F of a full -R stream refused: $(cat "$TESTDIR/out")"
grep -q "destroyed" "$TESTDIR/out" &&
	fail "BUG: recv -F of a full -R stream destroyed: $(cat "$TESTDIR/out")"
[ "$(names bk/mine)" = "$before" ] ||
	fail "BUG: a full -R -F stream destroyed the target's own bk/mine: [$(names bk/mine)]"
[ "$(names bk)" = "bk bk@0 bk@1 bk/a bk/a@0 bk/a@1 bk/mine bk/mine@own " ] ||
	fail "after a full -R -F stream: [$(names bk)]"

# ---- the same stream's later full -R -F: snapshots the stream lacks stay ----
# The sender lost @0; the full stream from @1 on skips @1 (already there)
# and adds @2.  bk@0 is not the stream's business.
ok ca destroy -r pool@0
ok ca snapshot -r pool@2
cb recv -F -n -v bk < <(ca send -R pool@2) >"$TESTDIR/out" 2>&1 ||
	fail "recv -F -n of the later full -R stream refused: $(cat "$TESTDIR/out")"
grep -q "destroy" "$TESTDIR/out" &&
	fail "BUG: recv -F -n of a full -R stream would destroy snapshots: $(cat "$TESTDIR/out")"
ca send -R pool@2 | cb recv -F -v bk >"$TESTDIR/out" 2>&1 ||
	fail "recv -F of the later full -R stream refused: $(cat "$TESTDIR/out")"
grep -q "destroyed" "$TESTDIR/out" &&
	fail "BUG: recv -F of a full -R stream destroyed snapshots: $(cat "$TESTDIR/out")"
[ "$(names bk)" = "bk bk@0 bk@1 bk@2 bk/a bk/a@0 bk/a@1 bk/a@2 bk/mine bk/mine@own " ] ||
	fail "after the later full -R -F stream: [$(names bk)]"
out=$(cb verify -r bk 2>&1) || fail "verify after full -R -F streams: $out"

# ---- an incremental -R -F stream still destroys what the sender lost ----
ok ca snapshot -r pool@3
ca send -R -i @2 pool@3 | cb recv -F -v bk >"$TESTDIR/out" 2>&1 ||
	fail "recv -F of send -R -i @2 pool@3: $(cat "$TESTDIR/out")"
grep -q "^destroyed bk/mine$" "$TESTDIR/out" ||
	fail "incremental -R -F: bk/mine, not on the sender, not destroyed: $(cat "$TESTDIR/out")"
[ "$(names bk)" = "bk bk@1 bk@2 bk@3 bk/a bk/a@1 bk/a@2 bk/a@3 " ] ||
	fail "after an incremental -R -F stream: [$(names bk)]"

# ---- sync -R -F: the same rule, made explicit by the sender ----
# A destination top that holds the source top's newest snapshot gets an
# incremental stream (even one with no snapshot), which reconciles.  A top
# with no snapshot of its own (its child synced alone before) would get the
# top's full stream, and the next sync -R -F would destroy ct/mine, which
# is not the source's: sync -R -F refuses that, naming it, and changes
# nothing; sync -R without -F goes ahead and keeps it.
ok cb create ct
ok ca sync pool/a "$B:ct/a"
ok cb create ct/mine
ok cb snapshot ct/mine@own
fails_with 1 "would destroy ct/mine" ca sync -R -F pool "$B:ct"
[ "$(cb list -H -o name -r ct | tr '\n' ' ')" = "ct ct/a ct/mine " ] ||
	fail "a refused sync -R -F changed ct: [$(cb list -H -o name -r ct | tr '\n' ' ')]"
out=$(ca sync -R pool "$B:ct" 2>&1) || fail "sync -R into a top without snapshots: $out"
[ "$(cb list -H -o name -r ct | tr '\n' ' ')" = "ct ct/a ct/mine " ] ||
	fail "sync -R without -F destroyed: [$(cb list -H -o name -r ct | tr '\n' ' ')]"
out=$(ca sync -R -F -v pool "$B:ct" 2>&1) || fail "sync -R -F with the top in common: $out"
[ "$(cb list -H -o name -r ct | tr '\n' ' ')" = "ct ct/a " ] ||
	fail "sync -R -F with the top in common kept ct/mine: [$(cb list -H -o name -r ct | tr '\n' ' ')] ($out)"
# ct/a was synced alone (not -R): its dataset guid is its own, but the
# stream receives into it by name, so -F must not take it for destroyed.
out=$(ca sync -R -F -v pool "$B:ct" 2>&1) || fail "sync -R -F a third time: $out"
[ "$(cb list -H -o name -r ct | tr '\n' ' ')" = "ct ct/a " ] ||
	fail "sync -R -F a third time changed ct: [$(cb list -H -o name -r ct | tr '\n' ' ')] ($out)"
echo "$out" | grep -q "destroyed" && fail "BUG: sync -R -F destroyed ct/a, a copy by name: $out"
done_test
