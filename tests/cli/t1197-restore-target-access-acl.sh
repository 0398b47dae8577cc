#!/bin/bash
# A restored directory that was not made fresh by restore carries no ACL
# the snapshot does not record.  The target made under a directory with a
# default ACL inherits an access ACL as well as a default one; an
# existing target, or a directory kept with --force, may have one of its
# own.  Restore removed only the default ACL, so the access ACL stayed,
# granting users access the snapshot never gave them (and same_tree
# failed): restoring into a directory "makes it the snapshot's root", and
# a --force run over an earlier restore must give the snapshot's tree.
. "$(dirname "$0")/lib.sh"
command -v setfacl >/dev/null || fail "setfacl missing"
new_store
use_xattr_dir
SRC=$XDIR/src
mkdir -p "$SRC/plain" "$SRC/withacl"
echo f >"$SRC/plain/f"
chmod 0775 "$SRC" "$SRC/plain"
setfacl -m u:1234:rx "$SRC/withacl"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
# a target that restore makes below a directory with a default ACL
P=$XDIR/shared
mkdir -p "$P"
setfacl -d -m u:99:rwx "$P"
ok cairn restore tank@1 "$P/r"
same_tree "$SRC" "$P/r"
getfacl -c -n -p "$P/r" | grep -q '^user:99:' && fail "the target kept the ACL it inherited"
# --force over that restore, where someone gave access to directories
setfacl -m u:98:rwx "$P/r" "$P/r/plain"
setfacl -m u:97:rwx "$P/r/withacl"
ok cairn restore -f tank@1 "$P/r"
same_tree "$SRC" "$P/r"
# an existing empty target with an access ACL of its own
mkdir "$XDIR/mine"
setfacl -m u:96:rwx "$XDIR/mine"
ok cairn restore tank@1 "$XDIR/mine"
same_tree "$SRC" "$XDIR/mine"
done_test
