#!/bin/bash
# recv -F's rollback names the snapshots it destroys: "destroyed DS@S"
# with -v, "would destroy DS@S" with -n -v, before the snapshot received,
# as the destroys of an incremental -R -F stream already were.  Before,
# both said nothing of them: a dry run that would destroy the target's own
# snapshots read like a plain receive.  Also for a full -R stream sent
# again with a newer snapshot (its second snapshot builds on the first).
. "$(dirname "$0")/lib.sh"
top_and_kid
ok ca create -o source="$S" p
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@1
ok ca snapshot -r p@2

# ---- an incremental stream onto a target with snapshots of its own ----
ca send p@1 | cb recv e || fail "full send | recv"
ok cb set source="$S" e
ok cb snapshot e@mine
ok cb snapshot e@mine2
ca send -i @1 p@2 | cb recv -n -F -v e >"$TESTDIR/out" 2>&1 || fail "recv -n -F -v: $(cat "$TESTDIR/out")"
grep -qx "would destroy e@mine" "$TESTDIR/out" || fail "recv -n -F -v did not name e@mine: $(cat "$TESTDIR/out")"
grep -qx "would destroy e@mine2" "$TESTDIR/out" || fail "recv -n -F -v did not name e@mine2"
[ "$(sed -n 3p "$TESTDIR/out")" = "would receive incremental stream of p@2 into e@2" ] ||
	fail "the destroys do not come first: $(cat "$TESTDIR/out")"
[ "$(snaps e)" = "e@1 e@mine e@mine2 " ] || fail "the dry run changed e: [$(snaps e)]"
ca send -i @1 p@2 | cb recv -F -v e >"$TESTDIR/out" 2>&1 || fail "recv -F -v: $(cat "$TESTDIR/out")"
grep -qx "destroyed e@mine" "$TESTDIR/out" || fail "recv -F -v did not name e@mine: $(cat "$TESTDIR/out")"
grep -qx "destroyed e@mine2" "$TESTDIR/out" || fail "recv -F -v did not name e@mine2"
[ "$(snaps e)" = "e@1 e@2 " ] || fail "e after recv -F: [$(snaps e)]"

# ---- a full -R stream again, with a newer snapshot ----
ca send -R p@1 | cb recv r || fail "full send -R | recv"
ok cb set source="$S" r
ok cb set source="$S/k" r/k
ok cb snapshot -r r@mine
ca send -R p@2 | cb recv -F -v r >"$TESTDIR/out" 2>&1 || fail "recv -F -v of -R: $(cat "$TESTDIR/out")"
grep -qx "destroyed r@mine" "$TESTDIR/out" || fail "recv -F -v (-R) did not name r@mine: $(cat "$TESTDIR/out")"
grep -qx "destroyed r/k@mine" "$TESTDIR/out" || fail "recv -F -v (-R) did not name r/k@mine"
[ "$(snaps r)" = "r@1 r@2 r/k@1 r/k@2 " ] || fail "r after recv -F: [$(snaps r)]"

# ---- without -v nothing is said ----
ok cb snapshot e@mine3
ok ca snapshot p@3
out=$(ca send -i @2 p@3 | cb recv -F e 2>&1) || fail "recv -F: $out"
[ -z "$out" ] || fail "recv -F without -v printed: $out"
done_test
