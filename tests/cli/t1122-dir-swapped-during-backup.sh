#!/bin/bash
# A directory swapped with another (an atomic rename exchange) between the
# walk's stat and its open: the entry holds the first directory's mode,
# owner and times, and the walk read the other one's entries below it,
# silently: a directory that never existed.  (A file system mounted on the
# name in that window was read too, though the walk stays on one.)  Now
# the opened directory must be the inode the walk stat'ed: if not, its
# contents are left out naming it (exit 1), and the next backup records
# the tree as it is.  An LD_PRELOAD shim makes the swap at the open, in a
# first backup (the walk stats, then opens) and in an incremental one
# (the statahead helper stats and opens ahead).
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
R=$TESTDIR/restored
mkdir -p "$SRC/a" "$SRC/b" "$R"
echo from-a >"$SRC/a/fa"
echo from-b >"$SRC/b/fb"
chmod 750 "$SRC/a"
chmod 705 "$SRC/b"
build_shim dir-swap
ok cairn create -o source="$SRC" tank

# swapped SNAP: tank@SNAP with a and b exchanged at a's open.
swapped() {
	shimmed "tank@$1" "swapped a b" SWAP_A=a SWAP_B=b
}

# no_mix SNAP: in the restore of tank@SNAP, a directory holds only the
# entries of the directory whose mode it has (750 held fa, 705 held fb).
no_mix() {
	ok cairn restore "tank@$1" "$R/$1"
	local d m
	for d in a b; do
		[ -d "$R/$1/$d" ] || continue
		m=$(stat -c %a "$R/$1/$d")
		case "$m:$(ls "$R/$1/$d" | tr '\n' ' ')" in
		750:fa\ | 750: | 705:fb\ | 705:) ;;
		*) fail "@$1: $d has mode $m and entries $(ls "$R/$1/$d")" ;;
		esac
	done
}

swapped one
reported tank@one "$SRC/a: "
no_mix one
settles tank@two "$SRC"

# Incremental: the helper may stat and open a ahead of the walk.  Whoever
# opens a does it after a's stat (the helper makes only directories whose
# stat it has), so the swap always falls inside the window: reported.
swapped three
reported tank@three "$SRC/a: "
no_mix three
settles tank@four "$SRC"

# A directory removed and made again (rm -r; mkdir) between the stat and
# the open: on ext4 the new one usually gets the old inode number back, so
# the inode alone does not tell it apart; its birth after the stat's ctime
# does.  Run where inode numbers are reused: a disk filesystem, not tmpfs.
RD=$(mktemp -d "${CAIRN_XATTR_TMP:-/var/tmp}/cairn-dir.XXXXXX") || fail "no scratch directory"
XATTR_DIRS="${XATTR_DIRS:-} $RD"
mkdir -p "$RD/src/a"
echo other >"$RD/src/other"
chmod 750 "$RD/src/a"
# The new directory's birth must come after a's ctime by more than the
# filesystem's timestamp granularity (a tick).
sleep 0.1
ok cairn create -o source="$RD/src" redo
shimmed redo@one "recreated a" SWAP_A=a SWAP_RECREATE=1
grep -q "same-inode" "$TESTDIR/swap.log" ||
	echo "note: the new directory got a new inode number here; the inode check alone catches it" >&2
reported redo@one "$RD/src/a: "
ok cairn restore redo@one "$R/redo-one"
if [ -d "$R/redo-one/a" ]; then
	case "$(stat -c %a "$R/redo-one/a"):$(ls "$R/redo-one/a" | tr '\n' ' ')" in
	750: | 705:fresh\ ) ;;
	*) fail "redo@one: a has mode $(stat -c %a "$R/redo-one/a") and entries $(ls "$R/redo-one/a")" ;;
	esac
fi
settles redo@two "$RD/src"

# Incremental: the statahead helper stats and opens a ahead of the walk.
rm "$RD/src/a/fresh"
chmod 750 "$RD/src/a"
sleep 0.1
shimmed redo@three "recreated a" SWAP_A=a SWAP_RECREATE=1
reported redo@three "$RD/src/a: "
ok cairn restore redo@three "$R/redo-three"
if [ -d "$R/redo-three/a" ]; then
	case "$(stat -c %a "$R/redo-three/a"):$(ls "$R/redo-three/a" | tr '\n' ' ')" in
	750: | 705:fresh\ ) ;;
	*) fail "redo@three: a has mode $(stat -c %a "$R/redo-three/a") and entries $(ls "$R/redo-three/a")" ;;
	esac
fi
settles redo@four "$RD/src"

# Exchanged between the stat and the reading of a's xattrs (by path): the
# entry would get b's xattrs (its ACL) under a's mode, owner and times.
# a is left out, with what is below it.
use_xattr_dir
XS=$XDIR/xsrc
mkdir -p "$XS/a" "$XS/b"
echo from-a >"$XS/a/fa"
echo from-b >"$XS/b/fb"
chmod 750 "$XS/a"
chmod 705 "$XS/b"
setfattr -n user.who -v a "$XS/a"
setfattr -n user.who -v b "$XS/b"
ok cairn create -o source="$XS" xswap
shimmed xswap@one "swapped a b at xattrs" SWAP_A=a SWAP_B=b SWAP_AT_XATTR=1
reported xswap@one "$XS/a "
ok cairn restore xswap@one "$R/xswap-one"
for d in a b; do
	[ -d "$R/xswap-one/$d" ] || continue
	case "$(stat -c %a "$R/xswap-one/$d"):$(getfattr --absolute-names --only-values -n user.who "$R/xswap-one/$d" 2>/dev/null)" in
	750:a | 705:b) ;;
	*) fail "xswap@one: $d has mode $(stat -c %a "$R/xswap-one/$d") and the xattr of $(getfattr --absolute-names --only-values -n user.who "$R/xswap-one/$d")" ;;
	esac
done
settles xswap@two "$XS"
done_test
