#!/bin/bash
# A restore through a credential that may read the bucket but not write
# to it (faultproxy.py forbid-put).  The restore's temporary hold on its
# snapshot is committed to the local catalog, and only the catalog's copy
# in the bucket fails (HTTP 403); the hold is in effect all the same.
# The restore said "not held while restored" and, taking it for not
# held, never released it: the hold stayed in the catalog after the
# restore had ended (until another command reaped it), and a snapshot
# that destroy -d marked meanwhile outlived the restore.  Now the hold is
# released at the end and nothing is said about it; the catalog (read
# here with python's sqlite3, which reaps nothing) has no hold left.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
command -v python3 >/dev/null || fail "python3 missing"
fault_proxy
proxied_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
for i in 1 2 3; do head -c 200000 /dev/urandom >"$SRC/f$i"; done
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
holds_in_catalog() {
	python3 -c 'import sqlite3, sys
print(sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True).execute("SELECT COUNT(*) FROM hold").fetchone()[0])' \
		"$CAIRN_STORE/catalog.db"
}
echo forbid-put >"$MODE"
"$CAIRN" restore tank@1 "$TESTDIR/r" 2>"$TESTDIR/err" || fail "the restore failed: $(cat "$TESTDIR/err")"
grep -q "forbid-put PUT .*catalog" "$MODE.hits" || fail "the hold's catalog upload was not refused: $(cat "$MODE.hits" 2>/dev/null)"
grep -q "not held" "$TESTDIR/err" && fail "the restore, held, said it was not: $(cat "$TESTDIR/err")"
same_tree "$SRC" "$TESTDIR/r"
[ "$(holds_in_catalog)" = 0 ] || fail "the restore's hold was left in the catalog: $(holds_in_catalog)"
echo pass >"$MODE"
ok cairn destroy tank@1
done_test
