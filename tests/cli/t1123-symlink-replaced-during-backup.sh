#!/bin/bash
# A symlink replaced by another (renamed over its name, as `ln -sfn` via a
# temporary name does) between the walk's stat and its readlink: the entry
# holds the old link's owner and times, and the new link's target was
# recorded under them, silently: a symlink that never existed.  Now the
# name must still be the inode the walk stat'ed once its target is read:
# if not, the link is left out naming it (exit 1), and the next backup
# records the new one.  An LD_PRELOAD shim makes the swap at the readlink.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
R=$TESTDIR/restored
mkdir -p "$SRC" "$R"
echo data >"$SRC/f"
ln -s old-target "$SRC/l"
touch -h -d '@981173106' "$SRC/l"
build_shim link-swap
ok cairn create -o source="$SRC" tank

ln -s new-target-elsewhere "$SRC/l.new"
touch -h -d '@1262304000' "$SRC/l.new"
shimmed tank@one "swapped l" SWAP_LINK=l SWAP_NEW=l.new
reported tank@one "$SRC/l: "
ok cairn restore tank@one "$R/one"
if [ -L "$R/one/l" ]; then
	case "$(readlink "$R/one/l"):$(stat -c %Y "$R/one/l")" in
	old-target:981173106 | new-target-elsewhere:1262304000) ;;
	*) fail "l restored as $(readlink "$R/one/l") with mtime $(stat -c %Y "$R/one/l")" ;;
	esac
fi
[ "$(cat "$R/one/f")" = data ] || fail "the rest of the tree was not recorded"

settles tank@two "$SRC"

# A link removed and made again (rm; ln -s) between the stat and the
# readlink: on ext4 the new link usually gets the old one's inode number
# back, so the inode alone does not tell it apart; its ctime and mtime do
# (the same test that lets an unchanged link keep its previous target).
# Run where inode numbers are reused: a disk filesystem, not tmpfs.
RD=$(mktemp -d "${CAIRN_XATTR_TMP:-/var/tmp}/cairn-link.XXXXXX") || fail "no scratch directory"
XATTR_DIRS="${XATTR_DIRS:-} $RD"
mkdir "$RD/src"
echo data >"$RD/src/f"
ln -s old-target "$RD/src/l"
touch -h -d '@981173106' "$RD/src/l"
ok cairn create -o source="$RD/src" relink
shimmed relink@one "recreated-" SWAP_LINK=l SWAP_RECREATE=new-target-elsewhere
grep -q "recreated-same-inode" "$TESTDIR/swap.log" ||
	echo "note: the new link got a new inode number here; the inode check alone catches it" >&2
reported relink@one "$RD/src/l: "
ok cairn restore relink@one "$R/re-one"
if [ -L "$R/re-one/l" ]; then
	case "$(readlink "$R/re-one/l"):$(stat -c %Y "$R/re-one/l")" in
	old-target:981173106) ;;
	*) fail "l made again restored as $(readlink "$R/re-one/l") with mtime $(stat -c %Y "$R/re-one/l")" ;;
	esac
fi
settles relink@two "$RD/src"
done_test
