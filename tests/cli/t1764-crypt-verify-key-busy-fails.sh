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
hold_lock write 600 "$TESTDIR/ready"

before=$(cd "$CAIRN_STORE" && find .chunks -type f | LC_ALL=C sort; "$CAIRN" get -H -o value lastverified enc@1)
fails_with 1 "enc: key is busy: .*waited 1 s.*held by pid $HOLDER (python3)" \
	env CAIRN_KEY_LOCK_WAIT_SECONDS=1 timeout 60 "$CAIRN" verify
after=$(cd "$CAIRN_STORE" && find .chunks -type f | LC_ALL=C sort; "$CAIRN" get -H -o value lastverified enc@1)
[ "$before" = "$after" ] || fail "the refused verify changed the store"
held_throughout
stop_holder
ok cairn verify >/dev/null
done_test
