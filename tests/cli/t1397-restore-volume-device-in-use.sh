#!/bin/bash
# A volume restored onto a block device that is in use (a mounted
# filesystem, or a device another program holds open exclusively) would
# corrupt it under its user, --force or not: the device is opened
# exclusively (O_EXCL, as mkfs does), so the restore refuses it, naming
# the device and the reason, and writes nothing.  Once it is free, the
# same command restores it with full fidelity.  A holder keeps the loop
# device open with O_EXCL (the claim a mount takes) and is seen holding it.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root for a loop device"; exit 77; }
new_store
random_volume 3000000 a
loop_target
[ -n "$loop" ] || { done_test; exit; }
trap 'losetup -d "$loop" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT
mkfifo "$TESTDIR/go"
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
print("held", flush=True)
open(sys.argv[2]).read()
' "$loop" "$TESTDIR/go" >"$TESTDIR/holder.out" &
holder=$!
for _ in $(seq 200); do grep -q held "$TESTDIR/holder.out" 2>/dev/null && break; sleep 0.05; done
grep -q held "$TESTDIR/holder.out" || fail "the holder did not claim the device"
python3 -c 'import os, sys; os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)' "$loop" 2>/dev/null &&
	fail "the device is not held exclusively"
fails_with 1 "$loop: target is a block device in use (mounted, say); not written" \
	cairn restore -f vol@a "$loop"
cmp "$TESTDIR/tgt.orig" "$loop" || fail "a restore wrote to the device in use"
echo >"$TESTDIR/go"
wait "$holder"
ok cairn restore -f vol@a "$loop"
cmp -n 3000000 "$TESTDIR/vol.img" "$loop" || fail "the block device holds other bytes"
done_test
