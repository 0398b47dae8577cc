#!/bin/bash
# Earlier builds made keyusers.lock 0600.  Then a user who may only read
# the store could not open it, their commands marked no key, and their
# unload-key unloaded the key their own running restore was using, until
# someone ran chmod 644 by hand.  A command that opens the file for
# writing (its owner's) and finds 0600 widens it to what creating it now
# would give: 0644 less its umask, never more (umask 077 leaves 0600),
# and leaves any other mode alone.
# After that the reader's restore marks its key, and their unload-key
# refuses while it runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
need_other_user

new_store
big_root enc 1
# the store is root's; OTHER may read it, not write it
readonly_for_other
# the lock file as an earlier build made it
lock=$CAIRN_STORE/keyusers.lock
rm -f "$lock"
(umask 077 && : >"$lock")
[ "$(stat -c %a "$lock")" = 600 ] || fail "could not make the lock file 0600"
printf '%s\n' "$PASS1" | as_other "$CAIRN" load-key -t 600 enc || fail "load-key as uid $OTHER"
trap 'as_other "$CAIRN" unload-key enc >/dev/null 2>&1; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT

# a writer whose umask allows no more than 0600 leaves it so
(umask 077 && cairn diff enc@1 enc@1 >/dev/null) || fail "diff as root (umask 077)"
[ "$(stat -c %a "$lock")" = 600 ] || fail "umask 077: lock file is $(stat -c %a "$lock"), not 600"
# one whose umask allows group and others to read widens it, and only that
(umask 022 && cairn diff enc@1 enc@1 >/dev/null) || fail "diff as root (umask 022)"
[ "$(stat -c %a "$lock")" = 644 ] || fail "umask 022: lock file is $(stat -c %a "$lock"), not 644"
[ "$(stat -c %U "$lock")" = root ] || fail "the lock file changed owner"

# OTHER's restore now marks its key, and OTHER's unload-key sees it
mkdir "$TESTDIR/out"
chown $OTHER "$TESTDIR/out"
start_stopped_restore enc@1 "$TESTDIR/out" as_other
fails_with 1 "enc: key is busy" as_other "$CAIRN" unload-key enc
[ "$(as_other "$CAIRN" get -H -o value keystatus enc)" = available ] ||
	fail "the refused unload-key took OTHER's key"
resume_restore || fail "the restore as uid $OTHER failed"
ok as_other "$CAIRN" unload-key enc

# a mode other than 0600 was chosen (or made under another umask): it stays
chmod 640 "$lock"
(umask 022 && cairn diff enc@1 enc@1 >/dev/null) || fail "diff as root (mode 0640)"
[ "$(stat -c %a "$lock")" = 640 ] || fail "mode 0640 became $(stat -c %a "$lock")"
done_test
