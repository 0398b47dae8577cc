#!/bin/bash
# A restore takes a temporary hold on its snapshot, which is a catalog
# write: it must not wait the usual 600 s behind another command's long
# transaction (a dry-run receive reading a slow stream keeps one open the
# whole time) before it even starts.  It tries for a few seconds, says
# the snapshot is not held and why, and restores.  A writer that holds
# the catalog's lock is simulated by a transaction left open (python's
# sqlite3), for longer than the test allows the restore; that it was
# still holding the lock when the restore ended is checked.  The same
# for the release at the end: a restore that holds its snapshot (stopped
# by strace, checked) and meets the lock as it ends exits without the
# 600 s wait; its hold goes with it, reaped by the next command, which
# also destroys the snapshot destroy -d marked meanwhile.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || fail "python3 missing"
command -v strace >/dev/null || fail "strace missing"
# lock_catalog: another writer's transaction, open for 90 s (its pid in
# $blocker), once this returns.
lock_catalog() {
	rm -f "$TESTDIR/locked"
	python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
time.sleep(90)
' "$CAIRN_STORE/catalog.db" "$TESTDIR/locked" &
	blocker=$!
	for _ in $(seq 1 200); do [ -e "$TESTDIR/locked" ] && break; sleep 0.05; done
	[ -e "$TESTDIR/locked" ] || fail "the catalog's write lock was not taken"
}
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
for i in 1 2 3 4 5 6 7 8; do head -c 100000 /dev/urandom >"$SRC/f$i"; done
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
lock_catalog
start=$(date +%s)
"$CAIRN" restore tank@1 "$TESTDIR/r" 2>"$TESTDIR/err"
rc=$?
took=$(($(date +%s) - start))
kill -0 $blocker 2>/dev/null || fail "the catalog's lock was given up before the restore ended"
kill $blocker
wait $blocker 2>/dev/null
[ $rc = 0 ] || fail "the restore beside a busy catalog: exit $rc: $(cat "$TESTDIR/err")"
[ "$took" -le 40 ] || fail "the restore waited ${took} s for another command's catalog transaction"
grep -q "^cairn: restore: tank@1: not held while restored.*another command is writing the catalog" "$TESTDIR/err" ||
	fail "the restore without its hold does not say why: $(cat "$TESTDIR/err")"
same_tree "$SRC" "$TESTDIR/r"
[ -z "$(cairn holds -H tank@1)" ] || fail "a hold was left on tank@1: $(cairn holds -H tank@1)"

# the release: a restore stopped while it holds its snapshot
ok cairn snapshot tank@2
CAIRN_RESTORE_THREADS=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o /dev/null \
	-e trace=openat -e inject=openat:delay_exit=200000 "$CAIRN" restore tank@2 "$TESTDIR/r2" 2>"$TESTDIR/err" &
pid=$!
for _ in $(seq 1 600); do
	[ "$(find "$TESTDIR/r2" -type f 2>/dev/null | wc -l)" -ge 1 ] && break
	sleep 0.05
done
rpid=$(pgrep -P $pid)
[ -n "$rpid" ] && kill -STOP "$rpid" || fail "the restore could not be stopped"
[ "$(find "$TESTDIR/r2" -type f | wc -l)" -lt 8 ] || fail "the restore was not stopped under way"
cairn holds -H tank@2 | grep -q '\.restore-' || fail "no hold on tank@2 being restored"
ok cairn destroy -d tank@2
lock_catalog
start=$(date +%s)
kill -CONT "$rpid"
wait $pid
rc=$?
took=$(($(date +%s) - start))
kill -0 $blocker 2>/dev/null || fail "the catalog's lock was given up before the restore ended"
kill $blocker
wait $blocker 2>/dev/null
[ $rc = 0 ] || fail "the restore ending beside a busy catalog: exit $rc: $(cat "$TESTDIR/err")"
[ "$took" -le 40 ] || fail "the restore's release waited ${took} s for another command's transaction"
same_tree "$SRC" "$TESTDIR/r2"
cairn list -H -o name -t snapshot tank@2 >/dev/null 2>&1 &&
	fail "tank@2, marked by destroy -d, outlived the restore"
ok cairn destroy tank@1
done_test
