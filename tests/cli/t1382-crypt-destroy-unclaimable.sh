#!/bin/bash
# destroy claims an encryption root's key (a write lock on its range of
# keyusers.lock) so that it never destroys a root a running command is
# using.  A writer of a group-writable store who could not open the lock
# file read-write (it is the owner's, 0644) skipped the claim without a
# word and destroyed the root, busy or not.  Now such a destroy is
# refused, naming the lock file and the reason, and changes nothing;
# once the owner lets the group write the lock file, the same destroy works.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
need_other_user

locked_root
ok cairn create plain
# a store root owns and OTHER's group may write; the lock file stays
# root's and 0644 (as a command of root's made it)
chmod 755 "$TESTDIR"
chgrp -R $OTHER "$CAIRN_STORE"
chmod -R g+rwX "$CAIRN_STORE"
chmod 644 "$lock"
# OTHER (gid $OTHER) writes the store, not the lock file
ok as_other "$CAIRN" destroy plain
as_other sh -c ": >>'$lock'" 2>/dev/null && fail "OTHER can write the lock file"

before=$(cairn list -H -o name -t all)
fails_with 1 "enc: cannot claim the encryption root's key.*keyusers.lock: Permission denied" \
	as_other "$CAIRN" destroy -r enc
fails_with 1 "enc: cannot claim the encryption root's key.*keyusers.lock: Permission denied" \
	as_other "$CAIRN" destroy -rn enc
[ "$(cairn list -H -o name -t all)" = "$before" ] || fail "the refused destroy changed the store"
[ "$(keystatus enc)" = available ] || fail "the refused destroy unloaded root's key"

# the owner lets the group write it: the same destroy claims and works
chmod g+w "$lock"
ok as_other "$CAIRN" destroy -r enc
cairn list enc >/dev/null 2>&1 && fail "enc still there after the destroy"
done_test
