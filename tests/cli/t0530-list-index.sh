#!/bin/bash
# The snapshot listing index (snapshot_list, a covering index): a new store
# has it; SQLite keeps it in step with the table through holds, destroys,
# verify and renames; a store made before it lists the same rows without it
# when it cannot be written, and gets it on its first writable open.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C TZ=UTC
new_store
DB=$CAIRN_STORE/catalog.db
SRC=$TESTDIR/src
mkdir -p "$SRC/a"
echo top >"$SRC/f"

has_index() {
	sqlite3 "file:$1/catalog.db?immutable=1" \
		"SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name='snapshot_list'"
}
COLS=name,guid,createtxg,creation,userrefs,defer_destroy,used,referenced,logicalreferenced,written,lastverified
listing() {
	cairn -s "$1" list -H -p -t snapshot -r -o $COLS &&
		cairn -s "$1" list -H -p -t snapshot -r -o name,used -S createtxg tank &&
		cairn -s "$1" list -H -p -o $COLS tank/a@s3 tank@s7
}

[ "$(has_index "$CAIRN_STORE")" = 1 ] || fail "a new store has no listing index"
# It covers what a listing reads (lib/catalog/list.c), so no row is looked
# up in the table.
plan=$(sqlite3 "$DB" "EXPLAIN QUERY PLAN SELECT id, name, guid, createtxg, creation, userrefs,
	defer_destroy, used, referenced, logicalreferenced, written, lastverified FROM snapshot
	WHERE dataset = 1 AND createtxg > 0 ORDER BY createtxg LIMIT 10")
case $plan in
*"COVERING INDEX snapshot_list"*) ;;
*) fail "the listing query does not read snapshot_list alone: $plan" ;;
esac

# ---- rows that change after they are written ----
ok cairn create -o source="$SRC" tank
ok cairn create -o source="$SRC/a" tank/a
for i in 1 2 3 4 5 6 7 8 9; do
	echo "$i" >"$SRC/a/f$i"
	head -c $((i * 3000)) /dev/urandom >"$SRC/r$i"
	ok cairn snapshot -r tank@s$i
done
ok cairn hold keep tank@s2 tank/a@s3
ok cairn destroy -d tank@s2           # held: defer_destroy
ok cairn destroy tank@s4              # its neighbours' used changes
ok cairn destroy -r tank@s8
ok cairn rename tank@s9 tank@last
ok cairn verify >/dev/null            # lastverified
ok cairn release keep tank/a@s3
[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "catalog integrity"
want=$(listing "$CAIRN_STORE") || fail "listing failed"
echo "$want" | grep -q "^tank@s2	.*	1	on	" || fail "held, deferred tank@s2 not listed as such: $want"
echo "$want" | grep -q "^tank@last	" || fail "renamed snapshot not listed: $want"
echo "$want" | grep -q "^tank@s4	" && fail "destroyed snapshot listed: $want"

# The same rows through the table (no index): the index was dropped, so
# SQLite has nothing else to read them from.
OLD=$TESTDIR/ro/old
mkdir -p "$TESTDIR/ro"
if [ "$(id -u)" = 0 ]; then
	mount -t tmpfs -o size=64m tmpfs "$TESTDIR/ro" || fail "cannot mount a tmpfs"
	trap 'umount "$TESTDIR/ro" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT
fi
cp -a "$CAIRN_STORE" "$OLD"
sqlite3 "$OLD/catalog.db" "DROP INDEX snapshot_list; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null ||
	fail "dropping the index"
[ "$(has_index "$OLD")" = 0 ] || fail "index not dropped"

# ---- an old store that cannot be written: listed as is, not changed ----
if [ "$(id -u)" = 0 ]; then
	mount -o remount,ro "$TESTDIR/ro" || fail "remount,ro"
else
	chmod a-w "$OLD/catalog.db" "$OLD"
fi
got=$(listing "$OLD") || fail "listing a read-only old store failed"
[ "$got" = "$want" ] || fail "read-only old store lists differently: $(diff <(echo "$want") <(echo "$got"))"
[ "$(has_index "$OLD")" = 0 ] || fail "a read-only store was changed"

# ---- writable: the first open adds the index, the rows stay the same ----
if [ "$(id -u)" = 0 ]; then
	mount -o remount,rw "$TESTDIR/ro" || fail "remount,rw"
else
	chmod u+w "$OLD/catalog.db" "$OLD"
fi
got=$(listing "$OLD") || fail "listing an old store failed"
[ "$got" = "$want" ] || fail "old store lists differently: $(diff <(echo "$want") <(echo "$got"))"
[ "$(has_index "$OLD")" = 1 ] || fail "an old store did not get the listing index"
[ "$(sqlite3 "$OLD/catalog.db" 'PRAGMA integrity_check')" = ok ] || fail "migrated catalog integrity"
# A writer holding the catalog: the open neither waits nor migrates, the
# next one does.
sqlite3 "$OLD/catalog.db" "DROP INDEX snapshot_list; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null ||
	fail "dropping the index again"
fifo=$TESTDIR/hold
mkfifo "$fifo"
{ echo "BEGIN IMMEDIATE; SELECT 'locked';"; cat "$fifo"; echo "ROLLBACK;"; } |
	sqlite3 "$OLD/catalog.db" >"$TESTDIR/locked" &
holder=$!
exec 7>"$fifo"
for _ in $(seq 100); do [ -s "$TESTDIR/locked" ] && break; sleep 0.05; done
[ -s "$TESTDIR/locked" ] || fail "the catalog was never locked"
got=$(timeout 10 "$CAIRN" -s "$OLD" list -H -p -t snapshot -r -o $COLS) || fail "listing beside a writer failed"
[ "$got" = "$(echo "$want" | head -n "$(echo "$got" | wc -l)")" ] || fail "listing beside a writer differs"
[ "$(sqlite3 "file:$OLD/catalog.db?immutable=1" "SELECT COUNT(*) FROM sqlite_master WHERE name='snapshot_list'")" = 0 ] ||
	fail "migrated while another writer held the catalog"
exec 7>&-
wait $holder
got=$(listing "$OLD") || fail "listing after the writer failed"
[ "$(has_index "$OLD")" = 1 ] || fail "not migrated once the writer was gone"
ok cairn -s "$OLD" snapshot -r tank@after
cairn -s "$OLD" list -H -o name -t snapshot tank/a@after >/dev/null || fail "snapshot after migration"
done_test
