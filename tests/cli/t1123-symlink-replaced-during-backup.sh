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
SHIM=$TESTDIR/link-swap.so
cc -shared -fPIC -o "$SHIM" "$(dirname "$0")/link-swap.c" -ldl || fail "cannot build the shim"
# ASan insists on coming first among preloaded libraries; the shim only
# wraps readlinkat, so the order does not matter here.
asan_opts=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0
ok cairn create -o source="$SRC" tank

ln -s new-target-elsewhere "$SRC/l.new"
touch -h -d '@1262304000' "$SRC/l.new"
out=$(ASAN_OPTIONS=$asan_opts LD_PRELOAD=$SHIM SWAP_LINK=l SWAP_NEW=l.new SWAP_LOG=$TESTDIR/swap.log \
	"$CAIRN" snapshot tank@one 2>&1)
rc=$?
grep -q "swapped l" "$TESTDIR/swap.log" 2>/dev/null || fail "no swap happened"
[ $rc -eq 1 ] || fail "a replaced symlink exited $rc: $out"
echo "$out" | grep -q "$SRC/l: .*changed during the backup" || fail "l not reported: $out"
ok cairn restore tank@one "$R/one"
if [ -L "$R/one/l" ]; then
	case "$(readlink "$R/one/l"):$(stat -c %Y "$R/one/l")" in
	old-target:981173106 | new-target-elsewhere:1262304000) ;;
	*) fail "l restored as $(readlink "$R/one/l") with mtime $(stat -c %Y "$R/one/l")" ;;
	esac
fi
[ "$(cat "$R/one/f")" = data ] || fail "the rest of the tree was not recorded"

ok cairn snapshot tank@two
ok cairn restore tank@two "$R/two"
same_tree "$SRC" "$R/two"

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
rm -f "$TESTDIR/swap.log"
out=$(ASAN_OPTIONS=$asan_opts LD_PRELOAD=$SHIM SWAP_LINK=l SWAP_RECREATE=new-target-elsewhere \
	SWAP_LOG=$TESTDIR/swap.log "$CAIRN" snapshot relink@one 2>&1)
rc=$?
grep -q "recreated-" "$TESTDIR/swap.log" 2>/dev/null || fail "no link was made again"
grep -q "recreated-same-inode" "$TESTDIR/swap.log" ||
	echo "note: the new link got a new inode number here; the inode check alone catches it" >&2
[ $rc -eq 1 ] || fail "a link made again exited $rc: $out"
echo "$out" | grep -q "$RD/src/l: .*changed during the backup" || fail "l made again not reported: $out"
ok cairn restore relink@one "$R/re-one"
if [ -L "$R/re-one/l" ]; then
	case "$(readlink "$R/re-one/l"):$(stat -c %Y "$R/re-one/l")" in
	old-target:981173106) ;;
	*) fail "l made again restored as $(readlink "$R/re-one/l") with mtime $(stat -c %Y "$R/re-one/l")" ;;
	esac
fi
ok cairn snapshot relink@two
ok cairn restore relink@two "$R/re-two"
same_tree "$RD/src" "$R/re-two"
done_test
