#!/bin/bash
# A user who may read the store but not write it could not open
# keyusers.lock for the write lock unload-key takes, and then unloaded
# without looking: their own running restore went on decrypting with the
# key "unload-key" had just reported gone.  They cannot take the write
# lock, but they can see whether it could be taken: their unload-key
# refuses while their restore holds the key, and works once it ended.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
need_other_user

new_store
big_root enc 1
# the store is root's; OTHER may read it, not write it
readonly_for_other
printf '%s\n' "$PASS1" | as_other "$CAIRN" load-key -t 600 enc || fail "load-key as uid $OTHER"
trap 'as_other "$CAIRN" unload-key enc >/dev/null 2>&1; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT
mkdir "$TESTDIR/out"
chown $OTHER "$TESTDIR/out"
start_stopped_restore enc@1 "$TESTDIR/out" as_other

fails_with 1 "enc: key is busy" as_other "$CAIRN" unload-key enc
[ "$(as_other "$CAIRN" get -H -o value keystatus enc)" = available ] ||
	fail "the refused unload-key took OTHER's key"

resume_restore || fail "the restore as uid $OTHER failed"
ok as_other "$CAIRN" unload-key enc
[ "$(as_other "$CAIRN" get -H -o value keystatus enc)" = unavailable ] ||
	fail "OTHER's unload-key after the restore"
done_test
