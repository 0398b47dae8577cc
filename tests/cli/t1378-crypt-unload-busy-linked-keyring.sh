#!/bin/bash
# unload-key refuses while a command uses that very key.  ec36586 marked a
# key in use on a byte of the root and the caller's keyring (its serial):
# a command that found the key through another keyring linking it (a
# session keyring that links the user keyring, as a login's does, with
# CAIRN_KEYRING=session) marked its session keyring's byte, and the
# user's unload-key (user keyring) found its own byte free and took the
# key out from under the running restore.  The byte is now the key's own
# serial: the same key is the same byte, whichever keyring found it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
need_other_user

new_store
big_root enc 1
PREFIX=$(key_prefix)
ok cairn unload-key enc
chmod 755 "$TESTDIR"
chown -R $OTHER:$OTHER "$CAIRN_STORE"
# OTHER loads the key into its user keyring (10 minutes at most)
printf '%s\n' "$PASS1" | as_other "$CAIRN" load-key -t 600 enc || fail "load-key as uid $OTHER"
trap '[ -z "$PREFIX" ] || as_other keyctl purge -p user "$PREFIX" >/dev/null 2>&1; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT
[ "$(as_other session "$CAIRN" get -H -o value keystatus enc)" = available ] ||
	fail "a session-keyring command of OTHER does not find the user keyring's key"
mkdir "$TESTDIR/out"
chown $OTHER "$TESTDIR/out"
# a restore that finds the key through its session keyring, stopped holding it
start_stopped_restore enc@1 "$TESTDIR/out" as_other session

fails_with 1 "enc: key is busy" as_other "$CAIRN" unload-key enc
[ "$(as_other "$CAIRN" get -H -o value keystatus enc)" = available ] ||
	fail "the refused unload-key took the key the restore uses"

resume_restore || fail "the restore as uid $OTHER failed"
ok as_other "$CAIRN" unload-key enc
[ "$(as_other "$CAIRN" get -H -o value keystatus enc)" = unavailable ] ||
	fail "OTHER's unload-key after the restore"
done_test
