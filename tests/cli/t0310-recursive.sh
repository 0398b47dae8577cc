#!/bin/bash
# snapshot -r and several names: one transaction, one createtxg.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src/a" "$TESTDIR/src/b"
echo a >"$TESTDIR/src/a/f"; echo b >"$TESTDIR/src/b/f"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn create tank/a
ok cairn create tank/b
ok cairn snapshot -r tank@r1
[ "$(cairn list -H -o name -t snapshot | grep -c '@r1$')" = 3 ] || fail "not 3 snapshots"
txgs=$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT COUNT(DISTINCT createtxg) FROM snapshot WHERE name='r1'")
[ "$txgs" = 1 ] || fail "recursive snapshots have $txgs createtxgs"
ok cairn snapshot tank/a@m tank/b@m
txgs=$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT COUNT(DISTINCT createtxg) FROM snapshot WHERE name='m'")
[ "$txgs" = 1 ] || fail "multi-name snapshots have $txgs createtxgs"
# all or nothing: one existing name aborts the whole command
fails_with 1 "already exists" "$CAIRN" snapshot tank/a@n tank/b@m
cairn list -H -o name -t snapshot | grep -q 'tank/a@n' && fail "partial snapshot committed"
fails_with 1 "two snapshots" "$CAIRN" snapshot tank/a@x tank/a@y
ok cairn restore tank/b@r1 "$TESTDIR/rb"
[ "$(cat "$TESTDIR/rb/f")" = b ] || fail "child source inherited wrongly"
done_test
