#!/bin/bash
# A set-id bit grants its file's owner's (setuid) or group's (setgid)
# rights.  A restore that does not give a file its recorded owner
# (--no-same-owner as root) clears each bit whose owner is not the
# recorded one, as cp -p does when it cannot keep an owner: otherwise a
# setuid binary of user 1234 would come back setuid root.  A bit whose
# owner did come back as recorded stays, and so does a directory's setgid
# bit (it grants nothing; new children get its group).  A restore that
# keeps owners keeps every bit (same_tree: full fidelity).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root to own files as others"; exit 77; }
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
mk() { # NAME UID:GID MODE
	cp /bin/true "$SRC/$1" && chown "$2" "$SRC/$1" && chmod "$3" "$SRC/$1" || fail "making $1"
}
mk suid-other 1234:5678 4755
mk sgid-other 0:5678 2755
mk both-other 1234:5678 6755
mk suid-root 0:0 4755
mk sgid-root 0:0 2711
mk suid-root-sgid-other 0:5678 6755
mkdir "$SRC/sgid-dir" && chown 1234:5678 "$SRC/sgid-dir" && chmod 2775 "$SRC/sgid-dir"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1

ok cairn restore tank@1 "$XDIR/kept"
same_tree "$SRC" "$XDIR/kept"

ok cairn restore --no-same-owner tank@1 "$XDIR/mine"
want() { # NAME MODE
	local got
	got=$(stat -c %a "$XDIR/mine/$1")
	[ "$got" = "$2" ] || fail "--no-same-owner: $1 has mode $got, not $2"
}
want suid-other 755
want sgid-other 755
want both-other 755
want suid-root 4755
want sgid-root 2711
want suid-root-sgid-other 4755
want sgid-dir 2775
want empty 4751 # rich_tree's setuid file: the tester's (root's), as restored
[ "$(stat -c %u:%g "$XDIR/mine/suid-other")" = 0:0 ] || fail "--no-same-owner set an owner"
done_test
