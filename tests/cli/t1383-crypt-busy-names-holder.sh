#!/bin/bash
# Anyone who may read the store may open keyusers.lock (0644) and hold a
# read lock on any range of it: that makes every root's key busy to
# unload-key and every root busy to destroy, for every user, and the
# refusal only said "a running command uses it".  OFD locks name no
# process (F_OFD_GETLK and /proc/locks give pid -1), so the refusal now
# says that a lock on the file is held and by which process, from the
# holders' /proc/PID/fdinfo; when the user may not look at the holder
# (another user's process), it says how root finds it.  The check itself
# is as strict as before: the key stays, nothing is destroyed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
need_other_user

locked_root
readonly_for_other
mkdir "$TESTDIR/o"
chown $OTHER "$TESTDIR/o"

trap '[ -n "${HOLDER:-}" ] && kill "$HOLDER" 2>/dev/null; as_other "$CAIRN" unload-key enc >/dev/null 2>&1; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT

# a reader (OTHER, not a cairn command) holds it: root sees who
hold_lock read 600 "$TESTDIR/o/ready1" as_other
before=$(cairn list -H -o name -t all)
fails_with 1 "enc: key is busy: .*the lock on $lock (bytes [0-9]*-[0-9]*) is held by pid $HOLDER (python3)" \
	cairn unload-key enc
fails_with 1 "enc: dataset is busy: .*the lock on $lock (bytes [0-9]*-[0-9]*) is held by pid $HOLDER (python3)" \
	cairn destroy -r enc
[ "$(keystatus enc)" = available ] || fail "the refused unload-key took the key"
[ "$(cairn list -H -o name -t all)" = "$before" ] || fail "the refused destroy changed the store"
stop_holder

# root holds it: OTHER's unload-key of OTHER's own key cannot see root's
# process, and says how root finds it; that way finds it
printf '%s\n' "$PASS1" | as_other "$CAIRN" load-key -t 600 enc || fail "load-key as uid $OTHER"
hold_lock read 600 "$TESTDIR/ready2"
ino=$(stat -c %i "$lock")
fails_with 1 "enc: key is busy: .*held by no process this user may see; as root, grep -l ':$ino ' /proc/\[0-9\]\*/fdinfo/\* finds" \
	as_other "$CAIRN" unload-key enc
grep -l ":$ino " /proc/[0-9]*/fdinfo/* 2>/dev/null | grep -q "^/proc/$HOLDER/fdinfo/" ||
	fail "the grep the message gives does not find the holder $HOLDER"
[ "$(as_other "$CAIRN" get -H -o value keystatus enc)" = available ] ||
	fail "OTHER's refused unload-key took the key"
stop_holder
ok as_other "$CAIRN" unload-key enc
ok cairn unload-key enc
done_test
