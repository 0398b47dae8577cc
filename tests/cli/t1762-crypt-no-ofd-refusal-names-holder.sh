#!/bin/bash
# On a file system without OFD locks the key marks are flock() locks on
# the whole of keyusers.lock (t1761).  The refusals still named the
# holders from the OFD/POSIX locks over the key's bytes, of which there
# are none there: "held by no process this user may see; as root, grep
# ..." while the holder was this user's own restore.  They now name the
# processes holding a flock on the file, as they name OFD holders
# elsewhere: a destroy and an unload-key refused by a restore holding the
# key name that restore; a command that waited out key_lock_wait_seconds
# for a holder of the exclusive flock names that holder.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
build_shim ofd-shim
export OFD_SHIM=refuse OFD_SHIM_LOG=$TESTDIR/noofd.log

# (made without the shim: a snapshot registers as a writer through an
# OFD lock, which the fallback is not about)
new_store
big_root enc 1
# every cairn command from here on runs on the shim
cairn() { env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" "$CAIRN" "$@"; }
lock=$CAIRN_STORE/keyusers.lock
ok cairn diff enc@1 enc@1 >/dev/null
[ -s "$OFD_SHIM_LOG" ] || fail "the shim did not act (no OFD lock was refused)"
ino=$(stat -c %i "$lock") || fail "no lock file"
# flock_held KIND: some process holds a flock of KIND (READ/WRITE) on the file
flock_held() { grep -Eq "FLOCK +ADVISORY +$1 +[0-9]+ [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks; }
flock_held READ && fail "a shared flock on the lock file before any command runs"

# a restore stopped once it holds the key (a shared flock); env execs
# cairn, so $! is the restore itself (not a shell around it)
env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" "$CAIRN" restore enc@1 "$TESTDIR/out" \
	2>"$TESTDIR/restore.err" &
RESTORE=$!
trap 'kill -CONT "$RESTORE" 2>/dev/null; [ -n "${HOLDER:-}" ] && kill "$HOLDER" 2>/dev/null; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT
for _ in $(seq 1 2000); do
	flock_held READ && break
	kill -0 "$RESTORE" 2>/dev/null || break
done
kill -STOP "$RESTORE" 2>/dev/null || fail "the restore ended before it was stopped"
for _ in $(seq 1 2000); do
	st=$(sed 's/.*) //' "/proc/$RESTORE/stat" 2>/dev/null | cut -d' ' -f1)
	[ "$st" = T ] && break
done
[ "$st" = T ] && flock_held READ || fail "the restore was not stopped holding a shared flock"

held="the lock on $lock (whole file, flock) is held by pid $RESTORE (cairn)"
fails_with 1 "enc: dataset is busy: .*$held" cairn destroy -r enc
fails_with 1 "enc: key is busy: .*$held" cairn unload-key enc
[ "$(keystatus enc)" = available ] || fail "a refused command took the key"
kill -CONT "$RESTORE"
wait "$RESTORE" || fail "the restore failed: $(cat "$TESTDIR/restore.err")"

# a holder of the exclusive flock that never lets go: a command that
# needs the key waits key_lock_wait_seconds, then names it
ready=$TESTDIR/ready
python3 -c '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
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
[ -n "$HOLDER" ] && flock_held WRITE || fail "the holder did not take the exclusive flock"
fails_with 1 "enc: key is busy: .*waited 1 s.*the lock on $lock (whole file, flock) is held by pid $HOLDER (python3)" \
	env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 20 env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" "$CAIRN" diff enc@1 enc@1
flock_held WRITE || fail "the holder was not holding the lock throughout"
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
HOLDER=
ok cairn diff enc@1 enc@1 >/dev/null
done_test
