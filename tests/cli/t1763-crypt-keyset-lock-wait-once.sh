#!/bin/bash
# verify loads every encryption root's key (a key set).  Each root waited
# key_lock_wait_seconds of its own for its key's lock, and a root whose
# wait ran out was checked as if its key were not loaded: with the whole
# lock file held by a process that never lets go, a verify of N roots
# waited N times the setting (20 roots at the default 30 s: ten minutes),
# and then passed without using any key (t1764).  The set now has one
# wait for all its roots, and the first root still busy at its end fails
# the verify: the file held costs one wait.
#  With two roots, the lock file write-locked whole, and
#  CAIRN_KEY_LOCK_WAIT_SECONDS=1, every read-lock attempt logged
#  (tests/cli/ofd-shim.c): verify fails, key busy; the wait was spent on one
#  root (several attempts) and the other root was not waited for.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
build_shim ofd-shim
export OFD_SHIM=log OFD_SHIM_LOG=$TESTDIR/ofd.log

locked_root
ok mkroot enc2 "$PASS1" -o source="$SRC"
ok cairn snapshot enc2@1
hold_lock write 600 "$TESTDIR/ready"

rm -f "$OFD_SHIM_LOG"
fails_with 1 "key is busy: .*waited 1 s.*held by pid $HOLDER (python3)" \
	env CAIRN_KEY_LOCK_WAIT_SECONDS=1 ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" timeout 60 \
	"$CAIRN" verify
held_throughout
grep -q -- "-11$" "$OFD_SHIM_LOG" || fail "no read lock attempt was refused: $(cat "$OFD_SHIM_LOG")"
grep -q " 0$" "$OFD_SHIM_LOG" && fail "a read lock was taken under the holder: $(cat "$OFD_SHIM_LOG")"
# attempts per root (its range: the row id is the offset's bits above 31)
awk '{print int($1 / 2147483648)}' "$OFD_SHIM_LOG" | sort | uniq -c | sort -n >"$TESTDIR/per-root"
[ "$(wc -l <"$TESTDIR/per-root")" = 1 ] ||
	fail "more than one root was waited for: $(cat "$TESTDIR/per-root") (attempts, root)"
[ "$(awk '{print $1}' "$TESTDIR/per-root")" -gt 1 ] ||
	fail "the root was not waited for: $(cat "$TESTDIR/per-root")"
stop_holder
ok cairn verify >/dev/null
done_test
