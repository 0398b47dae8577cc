#!/bin/bash
# restore -f over an existing tree gives each object exactly the
# snapshot's xattrs: a directory kept with --force, and the target, lose
# the ones the snapshot does not record (ACLs were already dropped; now
# user.* and trusted.* too), and a recorded one gets its recorded value.
# Files, symlinks and nodes are made anew, so they carry none of the old
# ones either.  An existing empty target (no --force) is the snapshot's
# root just the same.  Each run checks full fidelity (same_tree).
. "$(dirname "$0")/lib.sh"
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
setfattr -n user.keep -v recorded "$SRC/d1" || fail "setfattr"
setfattr -n user.root -v recorded "$SRC" || fail "setfattr"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
R=$XDIR/r
ok cairn restore tank@1 "$R"
same_tree "$SRC" "$R"
# extras: x ATTR VALUE PATH...
x() {
	local n=$1 v=$2
	shift 2
	setfattr -h -n "$n" -v "$v" "$@" || fail "setfattr $n $*"
}
x user.extra old "$R" "$R/d1" "$R/d1/d2" "$R/big.bin"
x user.keep changed "$R/d1"
x user.root changed "$R"
root=$([ "$(id -u)" = 0 ] && echo yes)
[ -n "$root" ] && x trusted.extra old "$R" "$R/d1/d2" "$R/link" "$R/fifo"
ok cairn restore -f tank@1 "$R"
same_tree "$SRC" "$R"
left=$(cd "$R" && getfattr -h -R -d -m '^(user|trusted)\.' . 2>/dev/null | grep -E 'extra|changed')
[ -z "$left" ] || fail "restore -f kept xattrs the snapshot does not record: $left"

# an existing empty target with xattrs of its own
mkdir "$XDIR/mine"
x user.extra old "$XDIR/mine"
[ -n "$root" ] && x trusted.extra old "$XDIR/mine"
ok cairn restore tank@1 "$XDIR/mine"
same_tree "$SRC" "$XDIR/mine"
getfattr -d -m - "$XDIR/mine" 2>/dev/null | grep -q extra && fail "the target kept its own xattrs"
done_test
