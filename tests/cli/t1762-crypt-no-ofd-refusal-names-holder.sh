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
[ -f "$lock" ] || fail "no lock file"
# (key_marked: a shared flock on keyusers.lock, here)
key_marked && fail "a shared flock on the lock file before any command runs"

# a restore stopped once it holds the key (a shared flock)
trap 'kill -CONT "$RESTORE_PID" 2>/dev/null; [ -n "${HOLDER:-}" ] && kill "$HOLDER" 2>/dev/null; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT
start_stopped_restore enc@1 "$TESTDIR/out" env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM"

held="the lock on $lock (whole file, flock) is held by pid $RESTORE_PID (cairn)"
fails_with 1 "enc: dataset is busy: .*$held" cairn destroy -r enc
fails_with 1 "enc: key is busy: .*$held" cairn unload-key enc
[ "$(keystatus enc)" = available ] || fail "a refused command took the key"
resume_restore || fail "the restore failed"

# a holder of the exclusive flock that never lets go: a command that
# needs the key waits key_lock_wait_seconds, then names it
hold_lock flock 600 "$TESTDIR/ready"
fails_with 1 "enc: key is busy: .*waited 1 s.*the lock on $lock (whole file, flock) is held by pid $HOLDER (python3)" \
	env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 20 env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" "$CAIRN" diff enc@1 enc@1
held_throughout
stop_holder
ok cairn diff enc@1 enc@1 >/dev/null
done_test
