#!/bin/bash
# On a file system without OFD locks (F_OFD_* fail with EINVAL; here
# tests/cli/ofd-shim.c makes them so) destroy of an encryption root was
# refused for ever: "cannot claim the encryption root's key for the
# destroy: locking .../keyusers.lock: Invalid argument", and commands
# marked no key in use.  Now the key marks fall back to flock() on the
# whole file: a command holding a key there (a restore) holds a shared
# flock, which a destroy (and unload-key) cannot get past (busy, exit 1,
# nothing changed); once it ends, the same destroy works.  (A snapshot
# still cannot be taken there: it registers as a writer with an OFD lock.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
build_shim ofd-shim
export OFD_SHIM=refuse OFD_SHIM_LOG=$TESTDIR/noofd.log
# every cairn command of this test runs on the shim
cairn() { env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" "$CAIRN" "$@"; }

# (made without the shim: a snapshot registers as a writer through an
# OFD lock too, which this fallback is not about)
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 64000000 /dev/urandom >"$SRC/big"
ok mkroot enc "$PASS1" -o compression=off -o source="$SRC"
ok "$CAIRN" snapshot enc@1
ok cairn diff enc@1 enc@1 >/dev/null
[ -s "$OFD_SHIM_LOG" ] || fail "the shim did not act (no OFD lock was refused)"
[ -f "$CAIRN_STORE/keyusers.lock" ] || fail "no lock file"
# (key_marked: a shared flock on keyusers.lock, here)
key_marked && fail "a shared flock on the lock file before any command runs"

# a restore (it decrypts, so it holds the key; its snapshot hold fails
# here, which it only warns about), stopped once it holds the key: a
# shared flock, or the fallback did not mark its key
start_stopped_restore enc@1 "$TESTDIR/out" env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM"

before=$(cairn list -H -o name -t all)
fails_with 1 "enc: dataset is busy" cairn destroy -r enc
fails_with 1 "enc: key is busy" cairn unload-key enc
[ "$(cairn list -H -o name -t all)" = "$before" ] || fail "the refused destroy changed the store"
[ "$(keystatus enc)" = available ] || fail "a refused command took the key"

# the restore finishes, and then the same destroy works
resume_restore || fail "the restore failed"
cmp -s "$SRC/big" "$TESTDIR/out/big" || fail "the restore under the shim differs"
ok cairn destroy -r enc
cairn list enc >/dev/null 2>&1 && fail "enc still there after destroy"
done_test
