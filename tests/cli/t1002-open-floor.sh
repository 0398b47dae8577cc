#!/bin/bash
# What opening a store still does after the process floor was cut (issue 16):
#
# A. A command that changed the catalog moves its WAL into the database
#    when it closes, so the next process has no WAL index to rebuild.
# B. Opening skips the reap query when no temporary hold exists, and still
#    reaps when one does: a dead owner's hold (here a row in the format of
#    older versions, pid + start time) is gone from `holds` and from the
#    listing's userrefs, and a snapshot whose destroy was deferred on it
#    goes too.
# C. After a listing that found no temporary hold, a dead owner's hold
#    added by another process is still reaped by the next command.
. "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing"; exit 77; }
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
echo data >"$SRC/f"
ok cairn create -o source="$SRC" fl
ok cairn snapshot fl@1
ok cairn snapshot fl@2
ok cairn snapshot fl@3

# A.
wal=$CAIRN_STORE/catalog.db-wal
[ ! -s "$wal" ] || fail "WAL not checkpointed after snapshot: $(stat -c %s "$wal") bytes"
ok cairn hold keep fl@1
[ ! -s "$wal" ] || fail "WAL not checkpointed after hold: $(stat -c %s "$wal") bytes"

# B. A pid that is not running (pid_max is below 2^22 unless raised).
dead=4194303
[ -e /proc/$dead ] && { echo "pid $dead is running"; exit 77; }
sqlite3 "$CAIRN_STORE/catalog.db" \
	"INSERT INTO hold SELECT id, '.send-old', 0, $dead, 12345 FROM snapshot WHERE name IN ('2', '3');
	 UPDATE snapshot SET userrefs = userrefs + 1 WHERE name IN ('2', '3');
	 UPDATE snapshot SET defer_destroy = 1 WHERE name = '3';" || fail "sqlite3"
out=$(cairn list -H -p -t snapshot -o name,userrefs) || fail "list"
[ "$out" = "$(printf 'fl@1\t1\nfl@2\t0')" ] || fail "dead owner's holds still counted, or deferred destroy not done: $out"
out=$(cairn holds fl@2) || fail "holds"
echo "$out" | grep -q 'send-old' && fail "dead owner's hold listed: $out"
[ "$(sqlite3 "$CAIRN_STORE/catalog.db" 'SELECT count(*) FROM hold')" = 1 ] || fail "hold rows left"
out=$(cairn holds fl@1) || fail "holds fl@1"
echo "$out" | grep -q keep || fail "user hold lost: $out"

# No temporary hold left: listings still work and change nothing.
before=$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT value FROM meta WHERE key = 'txg'")
out=$(cairn list -H -p -t snapshot -o name,userrefs) || fail "list without temporary holds"
[ "$out" = "$(printf 'fl@1\t1\nfl@2\t0')" ] || fail "listing without temporary holds: $out"
after=$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT value FROM meta WHERE key = 'txg'")
[ "$before" = "$after" ] || fail "a listing wrote to the catalog (txg $before -> $after)"

# C.
sqlite3 "$CAIRN_STORE/catalog.db" \
	"INSERT INTO hold SELECT id, '.send-later', 0, $dead, 12345 FROM snapshot WHERE name = '2';
	 UPDATE snapshot SET userrefs = userrefs + 1 WHERE name = '2';" || fail "sqlite3"
out=$(cairn list -H -p -t snapshot -o name,userrefs fl@2) || fail "list fl@2"
[ "$out" = "$(printf 'fl@2\t0')" ] || fail "hold of a dead owner counted after a later insert: $out"
done_test
