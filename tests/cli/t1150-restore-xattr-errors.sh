#!/bin/bash
# A restore that cannot set an extended attribute says so: the data is
# restored, the failure names the file and the attribute, and the exit
# status is non-zero (it does not claim full fidelity).  The target is a
# FAT filesystem (fusefat, a userspace driver), which has no xattrs.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root for the fuse mount"; exit 77; }
for t in mkfs.vfat fusefat setfattr; do
	command -v $t >/dev/null || { echo "needs $t (scripts/deps.sh installs it)"; exit 77; }
done
MNT=$TESTDIR/fat
cleanup() {
	umount -l "$MNT" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$TESTDIR" $XATTR_DIRS
}
trap cleanup EXIT
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
echo "plain" >"$SRC/a.txt"
echo "tagged" >"$SRC/b.txt"
setfattr -n user.colour -v blue "$SRC/b.txt" || fail "setfattr on the source"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
truncate -s 32M "$TESTDIR/fat.img"
mkfs.vfat "$TESTDIR/fat.img" >/dev/null 2>&1 || fail "mkfs.vfat"
mkdir -p "$MNT"
fusefat -o rw+ "$TESTDIR/fat.img" "$MNT" >/dev/null 2>&1 || fail "fusefat"
fails_with 1 "b.txt.*user.colour" cairn restore tank@1 "$MNT/r"
[ "$(cat "$MNT/r/a.txt" 2>/dev/null)" = plain ] || fail "a.txt not restored"
[ "$(cat "$MNT/r/b.txt" 2>/dev/null)" = tagged ] || fail "b.txt's data not restored"
# the same restore where xattrs work: exit 0, attribute back
ok cairn restore tank@1 "$TESTDIR/ok"
[ "$(getfattr --only-values -n user.colour "$TESTDIR/ok/b.txt" 2>/dev/null)" = blue ] || fail "user.colour not restored"
done_test
