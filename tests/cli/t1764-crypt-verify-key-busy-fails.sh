#!/bin/bash
# verify judges each encrypted blob by the loaded key whose tag opens it;
# without a root's key it can only check a blob's structure, which a
# forged checksum passes (SECURITY.md).  A root whose key verify could not
# take within key_lock_wait_seconds (its lock held: anyone who may write
# the store can hold it for ever) was checked as if its key were not
# loaded, and verify passed, exit 0, saying nothing: whoever could forge
# a blob could also keep verify from using the key that catches it.  Such
# a verify now fails like any command whose key is busy: exit 1, "R: key
# is busy", naming the holder, and judging no chunk.  Once the holder is
# gone the same verify passes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
locked_root
[ "$(keystatus enc)" = available ] || fail "the key is not loaded"
ino=$(stat -c %i "$lock")
write_locked() {
	grep -Eq "OFDLCK +ADVISORY +WRITE +-?[0-9]+ [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks
}
ready=$TESTDIR/ready
python3 -c '
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37),
	    struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
with open(sys.argv[2] + ".tmp", "w") as f:
	f.write(str(os.getpid()))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
time.sleep(600)
' "$lock" "$ready" &
HOLDER=
for _ in $(seq 1 500); do
	[ -s "$ready" ] && break
	sleep 0.01
done
HOLDER=$(cat "$ready" 2>/dev/null)
trap '[ -n "${HOLDER:-}" ] && kill "$HOLDER" 2>/dev/null; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT
[ -n "$HOLDER" ] && write_locked || fail "the lock holder did not start holding the lock"

before=$(cd "$CAIRN_STORE" && find .chunks -type f | LC_ALL=C sort; "$CAIRN" get -H -o value lastverified enc@1)
fails_with 1 "enc: key is busy: .*waited 1 s.*held by pid $HOLDER (python3)" \
	env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 60 "$CAIRN" verify
after=$(cd "$CAIRN_STORE" && find .chunks -type f | LC_ALL=C sort; "$CAIRN" get -H -o value lastverified enc@1)
[ "$before" = "$after" ] || fail "the refused verify changed the store"
write_locked || fail "the holder $HOLDER was not holding the lock throughout"
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
HOLDER=
ok cairn verify >/dev/null
done_test
