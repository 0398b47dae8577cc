#!/bin/bash
# destroy refuses an encryption root whose key a running command holds, as
# zfs refuses to destroy a busy dataset ("dataset is busy"): it destroyed
# the root and unloaded its key while a restore was still decrypting with
# it.  (A send, mount or restore is refused anyway: it holds its
# snapshot; a restore that could not take its hold is not, so the
# restore's hold is released here.)  Refused
# means nothing changed: the datasets, their snapshots and the loaded key
# stay.  Once the restore has ended the same destroy works and unloads
# the key.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
ok cairn create top
big_root top/enc 1

# cairn keys in this test's session keyring
nkeys() { keyctl show @s | grep -c ' user: cairn:'; }
[ "$(nkeys)" = 1 ] || fail "the new root's key is not in the keyring"

# a restore of top/enc@1, stopped while it holds the key
RESTORE_HELD=1 start_stopped_restore top/enc@1 "$TESTDIR/out"
# as a restore without its snapshot hold: the key alone is busy
unhold_restore top/enc@1

before=$(cairn list -H -o name -t all -r top)
fails_with 1 "top/enc: dataset is busy" cairn destroy -r top/enc
fails_with 1 "top/enc: dataset is busy" cairn destroy -r top
fails_with 1 "top/enc: dataset is busy" cairn destroy -rn top
[ "$(cairn list -H -o name -t all -r top)" = "$before" ] || fail "refused destroy changed the store"
[ "$(keystatus top/enc)" = available ] || fail "refused destroy unloaded the key"
[ "$(nkeys)" = 1 ] || fail "refused destroy took the key out of the keyring"

# the restore finishes with the key, and then the same destroy works
resume_restore || fail "the restore failed"
ok cairn destroy -r top/enc
cairn list top/enc >/dev/null 2>&1 && fail "top/enc still there after destroy"
[ "$(nkeys)" = 0 ] || fail "destroy left the root's key in the keyring"
done_test
