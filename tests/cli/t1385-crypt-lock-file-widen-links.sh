#!/bin/bash
# A command that opens keyusers.lock for writing and finds it 0600 (as
# earlier builds made it) widens it to 0644 less its umask (t1379).  The
# name keyusers.lock may be another name of some other file: a hard link
# made by whoever may write the store's directory (O_NOFOLLOW stops only
# symlinks), to a 0600 file of the same filesystem, a private key say.
# Root's next command then made that file readable by everyone.  A file
# with more than one name is not the store's own lock file to change:
# it is left as it is (locking it still works).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"

new_store
big_root enc 1
lock=$CAIRN_STORE/keyusers.lock
secret=$CAIRN_STORE/../secret
rm -f "$lock"
(umask 077 && echo private >"$secret")
ln "$secret" "$lock" || fail "could not link the lock file"
[ "$(stat -c %a "$secret")" = 600 ] || fail "could not make the file 0600"

# root's command under umask 022 uses a key: the other name stays 0600
(umask 022 && cairn diff enc@1 enc@1 >/dev/null) || fail "diff as root (umask 022)"
[ "$(stat -c %a "$secret")" = 600 ] ||
	fail "a hard link named keyusers.lock: $secret became $(stat -c %a "$secret")"
# and a busy key is still seen through it
start_stopped_restore enc@1 "$TESTDIR/out"
fails_with 1 "enc: key is busy" cairn unload-key enc
resume_restore || fail "the restore failed"

# the lock file of its own (one name) is still widened
rm -f "$lock" "$secret"
(umask 077 && : >"$lock")
(umask 022 && cairn diff enc@1 enc@1 >/dev/null) || fail "diff as root (one name)"
[ "$(stat -c %a "$lock")" = 644 ] || fail "one name: the lock file is $(stat -c %a "$lock"), not 644"
done_test
