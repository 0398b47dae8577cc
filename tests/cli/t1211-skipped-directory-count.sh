#!/bin/bash
# The summary of a partial backup counted a directory it could not read
# as one file skipped ("snapshot taken, but 1 files could not be read"),
# though nothing below it is in the snapshot, and counted every object left
# out among the files recorded too.  Now files and directories are counted
# apart, the directory's line says that nothing below it was recorded, and
# the files count is of objects recorded.  Needs root (to run the backup as
# an unprivileged user, for whom a directory can be unreadable).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root: the backup runs as user nobody"; exit 77; }
command -v setpriv >/dev/null || { echo "needs setpriv (util-linux)"; exit 77; }
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/locked-dir" "$SRC/open-dir"
echo one >"$SRC/a"
echo two >"$SRC/open-dir/b"
for i in 1 2 3; do echo "hidden $i" >"$SRC/locked-dir/f$i"; done
chmod 000 "$SRC/locked-dir"
chmod 755 "$TESTDIR" "$SRC" "$SRC/open-dir"
chmod 644 "$SRC/a" "$SRC/open-dir/b"
ok cairn create -o source="$SRC" tank
chown -R nobody "$CAIRN_STORE"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" "$@"; }

# one unreadable directory, no unreadable file: no file is said skipped
out=$(as_nobody snapshot -v tank@dir 2>&1); rc=$?
[ $rc = 1 ] || fail "partial backup exit $rc: $out"
echo "$out" | grep -q "locked-dir: Permission denied" || fail "the directory is not named: $out"
echo "$out" | grep -q "^cairn: snapshot: snapshot taken, but 1 directory could not be read (nothing below the directory is in the snapshot)$" ||
	fail "the directory is not counted as one: $out"
echo "$out" | grep -q "^1 directory skipped (nothing below the directory is in the snapshot)$" ||
	fail "summary: $out"
echo "$out" | grep -q "files skipped\|1 file " && fail "a directory counted as a file: $out"
# recorded: a, locked-dir (its entry, empty), open-dir, open-dir/b
echo "$out" | grep -q "^4 files, " || fail "files recorded miscounted: $out"

# and an unreadable file besides: each counted as what it is
echo secret >"$SRC/z-locked" && chmod 000 "$SRC/z-locked"
out=$(as_nobody snapshot -v tank@both 2>&1); rc=$?
[ $rc = 1 ] || fail "partial backup exit $rc: $out"
echo "$out" | grep -q "^cairn: snapshot: snapshot taken, but 1 file and 1 directory could not be read (nothing below the directory is in the snapshot)$" ||
	fail "not counted apart: $out"
echo "$out" | grep -q "^1 file and 1 directory skipped (nothing below the directory is in the snapshot)$" ||
	fail "summary: $out"
echo "$out" | grep -q "^4 files, " || fail "the file left out was counted as recorded: $out"
chown -R root "$CAIRN_STORE"
ok cairn restore tank@both "$TESTDIR/r"
[ -d "$TESTDIR/r/locked-dir" ] || fail "the unreadable directory's own entry was not recorded"
[ -n "$(ls -A "$TESTDIR/r/locked-dir")" ] && fail "entries below the unreadable directory restored"
[ -e "$TESTDIR/r/z-locked" ] && fail "the unreadable file was restored"
[ "$(cat "$TESTDIR/r/open-dir/b")" = two ] || fail "readable files not stored"
done_test
