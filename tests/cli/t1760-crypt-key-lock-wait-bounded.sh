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
ino=$(stat -c %i "$lock")

# write_locked: some process write-locks keyusers.lock (OFD), as
# /proc/locks lists it.
write_locked() {
	grep -Eq "OFDLCK +ADVISORY +WRITE +-?[0-9]+ [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks
}

# hold_write READY SECONDS: a process that write-locks all of the lock
# file (length 0: to its end), writes its pid to READY and keeps the lock
# for SECONDS; HOLDER is its pid, once it holds the lock for certain.
hold_write() {
	local ready=$1
	rm -f "$ready"
	python3 -c '
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37),
	    struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
with open(sys.argv[2] + ".tmp", "w") as f:
	f.write(str(os.getpid()))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
time.sleep(float(sys.argv[3]))
' "$lock" "$ready" "$2" &
	HOLDER=
	for _ in $(seq 1 500); do
		[ -s "$ready" ] && break
		sleep 0.01
	done
	HOLDER=$(cat "$ready" 2>/dev/null)
	[ -n "$HOLDER" ] && write_locked || fail "the lock holder did not start holding the lock"
}
trap '[ -n "${HOLDER:-}" ] && kill "$HOLDER" 2>/dev/null; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT

# a holder that never lets go: each command gives up after the wait
# (timeout only stops a hang from hanging the test suite)
hold_write "$TESTDIR/ready1" 600
before=$(cairn list -H -o name -t all)
busy="enc: key is busy: .*waited 1 s.*the lock on $lock (bytes [0-9]*-[0-9]*) is held by pid $HOLDER (python3)"
fails_with 1 "$busy" env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 20 "$CAIRN" diff enc@1 enc@1
fails_with 1 "$busy" env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 20 "$CAIRN" snapshot enc@2
fails_with 1 "$busy" env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 20 "$CAIRN" restore enc@1 "$TESTDIR/out"
[ "$(cairn list -H -o name -t all)" = "$before" ] || fail "a refused command changed the store"
[ -e "$TESTDIR/out" ] && fail "a refused restore wrote its target"
[ "$(keystatus enc)" = available ] || fail "a refused command took the key"
write_locked || fail "the holder $HOLDER was not holding the lock throughout"
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
HOLDER=

# a holder that lets go within the wait: the command waits for it
hold_write "$TESTDIR/ready2" 2
env CAIRN_KEY_LOCK_WAIT_SECONDS=120 timeout 60 "$CAIRN" snapshot enc@2 ||
	fail "a snapshot waiting for a holder that lets go failed"
wait "$HOLDER"
HOLDER=

# once the holder is gone the refused commands work
ok cairn diff enc@1 enc@2 >/dev/null
ok cairn restore enc@1 "$TESTDIR/out"
same_tree "$SRC" "$TESTDIR/out"
done_test
