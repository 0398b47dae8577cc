#!/bin/bash
# Keys are loaded per user (the user keyring): unload-key removes the
# caller's own key, so only the caller's own running commands make it
# "busy".  It used to refuse as soon as any user's command held a key of
# that root: another user's restore (decrypting with that user's own key)
# kept root from unloading root's key.  The other user's own unload-key,
# and a destroy (which takes the root from every user), still refuse.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
need_other_user

new_store
big_root enc 1
# the store is OTHER's (root may do anything in it)
chmod 755 "$TESTDIR"
chown -R $OTHER:$OTHER "$CAIRN_STORE"
# OTHER loads the key into its own keyring (for 10 minutes at most, should
# the test end early)
printf '%s\n' "$PASS1" | as_other "$CAIRN" load-key -t 600 enc || fail "load-key as uid $OTHER"
trap 'as_other "$CAIRN" unload-key enc >/dev/null 2>&1; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT
mkdir "$TESTDIR/out"
chown $OTHER "$TESTDIR/out"
RESTORE_HELD=1 start_stopped_restore enc@1 "$TESTDIR/out" as_other
# as a restore without its snapshot hold: the key alone is busy
unhold_restore enc@1

# root's key is not the one the restore uses: it unloads
[ "$(keystatus enc)" = available ] || fail "root's key not loaded"
ok cairn unload-key enc
[ "$(keystatus enc)" = unavailable ] || fail "root's unload-key left the key"
[ "$(as_other "$CAIRN" get -H -o value keystatus enc)" = available ] ||
	fail "root's unload-key took OTHER's key"
# OTHER's own key is busy, and the root itself is, for a destroy
fails_with 1 "enc: key is busy" as_other "$CAIRN" unload-key enc
fails_with 1 "enc: dataset is busy" cairn destroy -r enc

resume_restore || fail "the restore as uid $OTHER failed"
ok as_other "$CAIRN" unload-key enc
[ "$(as_other "$CAIRN" get -H -o value keystatus enc)" = unavailable ] ||
	fail "OTHER's unload-key after the restore"
done_test
