#!/bin/bash
# The racy rule (DESIGN.md, "Writing a snapshot") covered regular files
# only, but the unchanged shortcut also keeps a directory's (or symlink's,
# FIFO's, device's) xattrs from the previous snapshot when its size, times
# and inode match: an ACL or xattr set on a directory in the same
# timestamp tick as the backup read its xattrs left its ctime as recorded,
# and every later backup kept the old ACL.  Now any object changed in the
# backup's tick is recorded racy, and the next backup reads its xattrs
# again.  The coarse-ctime shim shows whole-second times and freezes the
# directory's ctime in the first backup's second (FREEZE_ANY), as such a
# filesystem shows an xattr change within that tick.  diff between two
# snapshots of the unchanged directory stays quiet.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
new_store
use_xattr_dir
SRC=$XDIR/src
R=$XDIR/restored
mkdir -p "$SRC/racy" "$R"
echo data >"$SRC/racy/file"
setfattr -n user.k -v one "$SRC/racy"
touch -d '@981173106' "$SRC/racy"
build_shim coarse-ctime
ok cairn create -o source="$SRC" tank
export COARSE_ROOT=$(realpath "$SRC") FREEZE_NAME=racy FREEZE_STATE=$TESTDIR/frozen FREEZE_ANY=1
shimmed tank@one "froze racy"
[ $rc = 0 ] || fail "tank@one: exit $rc: $out"

# The xattr changes within the frozen tick: size, mtime and (shown) ctime
# stay as recorded.
setfattr -n user.k -v two "$SRC/racy"
shimmed tank@two "frozen racy"
[ $rc = 0 ] || fail "tank@two: exit $rc: $out"
ok cairn restore tank@two "$R/two"
[ "$(getfattr --absolute-names --only-values -n user.k "$R/two/racy")" = two ] ||
	fail "the xattr set in the backup's tick was missed: $(getfattr --absolute-names -d "$R/two/racy" 2>&1)"

# Racy in tank@three (frozen anew), past the tick in tank@four: diff sees
# no change between the two though one carries the racy mark.
rm -f "$FREEZE_STATE"
shimmed tank@three "froze racy"
[ $rc = 0 ] || fail "tank@three: exit $rc: $out"
sleep 3
shimmed tank@four "frozen racy"
out=$(cairn diff tank@three tank@four) || fail "diff tank@three tank@four: $out"
[ -z "$out" ] || fail "diff of two snapshots of an unchanged tree: $out"
done_test
