#!/bin/bash
# A receive that is refused (not cut) leaves no partial state, even with
# -s: the group it refused can never commit, so a resume token for it
# would only be refused again, and it would block every other stream into
# the target until `recv -A`.  Here a -R stream's child lands on a
# dataset that has snapshots of its own (zfs: "destination has snapshots").
. "$(dirname "$0")/lib.sh"
new_store
second_store
mkdir -p "$TESTDIR/src/tank" "$TESTDIR/src/a"
echo top >"$TESTDIR/src/tank/f"
head -c 100000 /dev/urandom >"$TESTDIR/src/a/f"
ok ca create -o source="$TESTDIR/src/tank" tank
ok ca create -o source="$TESTDIR/src/a" tank/a
ok ca snapshot -r tank@1
ok cb create bk
ok cb create -o source="$TESTDIR/src/a" bk/a
ok cb snapshot bk/a@mine
ca send -R tank@1 >"$TESTDIR/s" || fail "send -R"
before=$(cb list -H -p -t all -r -o name,guid bk) || fail "list before"

fails_with 1 "destination has snapshots (eg. bk/a@mine)" cb recv -s bk <"$TESTDIR/s"
tok=$(cb get -H -o value receive_resume_token bk) || fail "get receive_resume_token"
[ "$tok" = "-" ] || fail "a refused receive left partial state: token $tok"
after=$(cb list -H -p -t all -r -o name,guid bk) || fail "list after"
[ "$before" = "$after" ] || fail "a refused receive changed the target: $before / $after"

# another stream into the same target is not blocked by the refusal
ok ca snapshot tank@2
ca send -I @1 tank@2 >"$TESTDIR/s2" || fail "send -I"
fails_with 1 "incremental source" cb recv -s bk <"$TESTDIR/s2"
done_test
