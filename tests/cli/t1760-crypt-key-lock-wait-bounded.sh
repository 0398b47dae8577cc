#!/bin/bash
# A command that uses a root's key first read-locks the key's byte of
# keyusers.lock, waiting while an unload-key or a destroy holds the write
# lock.  That wait had no end: anyone who may write the store can
# write-lock the file and hold it, and then every command on every
# encrypted dataset hung for ever.  The wait now ends after
# key_lock_wait_seconds (default 30; CAIRN_KEY_LOCK_WAIT_SECONDS): the
# command fails, exit 1, saying the key is busy and who holds the lock,
# and changes nothing.  A holder that lets go within the wait is waited
# for, and once the holder is gone the same command works.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"

locked_root

# a holder that never lets go: each command gives up after the wait
# (timeout only stops a hang from hanging the test suite)
hold_lock write 600 "$TESTDIR/ready1"
before=$(cairn list -H -o name -t all)
busy="enc: key is busy: .*waited 1 s.*the lock on $lock (bytes [0-9]*-[0-9]*) is held by pid $HOLDER (python3)"
fails_with 1 "$busy" env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 20 "$CAIRN" diff enc@1 enc@1
fails_with 1 "$busy" env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 20 "$CAIRN" snapshot enc@2
fails_with 1 "$busy" env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 20 "$CAIRN" restore enc@1 "$TESTDIR/out"
[ "$(cairn list -H -o name -t all)" = "$before" ] || fail "a refused command changed the store"
[ -e "$TESTDIR/out" ] && fail "a refused restore wrote its target"
[ "$(keystatus enc)" = available ] || fail "a refused command took the key"
held_throughout
stop_holder

# a holder that lets go within the wait: the command waits for it
hold_lock write 2 "$TESTDIR/ready2"
env CAIRN_KEY_LOCK_WAIT_SECONDS=120 timeout 60 "$CAIRN" snapshot enc@2 ||
	fail "a snapshot waiting for a holder that lets go failed"
wait "$HOLDER_JOB"
HOLDER=

# once the holder is gone the refused commands work
ok cairn diff enc@1 enc@2 >/dev/null
ok cairn restore enc@1 "$TESTDIR/out"
same_tree "$SRC" "$TESTDIR/out"
done_test
