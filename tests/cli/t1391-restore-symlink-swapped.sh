#!/bin/bash
# A restored symlink gets its owner, xattrs and times through an O_PATH
# descriptor that pins it, checked first to be the symlink just made (a
# symlink, pointing where the recorded one does).
# A shim swaps the new symlink, right after symlinkat, for another file
# (as someone who can write the target's directory could): that file keeps
# its owner, times and xattrs, and the restore names the symlink as
# replaced and exits 1.  A swap for another symlink (another target) is
# caught the same way.  Undisturbed, the tree restores with full fidelity.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root to give the symlink another owner"; exit 77; }
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC" # link: a symlink to d1/s1, owned by 1234:5678
touch -h -d @1500000000 "$SRC/link"
setfattr -h -n trusted.mark -v snapshot "$SRC/link" || fail "setfattr on the symlink"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
ok cairn restore tank@1 "$XDIR/plain"
same_tree "$SRC" "$XDIR/plain"
build_shim symlink-swap

# swapped_restore NAME DECOY: restores into $XDIR/NAME with the symlink
# "link" swapped for DECOY just after it is made.
swapped_restore() {
	rm -f "$TESTDIR/swap.log"
	out=$(env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" SWAP_LOG="$TESTDIR/swap.log" \
		SWAP_LINK=link SWAP_NEW="$2" "$CAIRN" restore tank@1 "$XDIR/$1" 2>&1)
	rc=$?
	grep -q "swapped link" "$TESTDIR/swap.log" 2>/dev/null || fail "$1: the shim did not swap"
	[ $rc = 1 ] || fail "$1: a restore whose symlink was swapped exited $rc: $out"
	echo "$out" | grep -q "link: replaced by another file while being restored" ||
		fail "$1: the swap was not reported: $out"
}
# untouched NAME FILE: FILE (the decoy, now at the link's name) is as made
untouched() {
	local got
	got=$(stat -c '%u:%g %Y' "$2")
	[ "$got" = "0:0 1000000000" ] || fail "$1: the swapped-in file was changed: $got"
	getfattr -h -d -m - "$2" 2>/dev/null | grep -q "trusted.mark" &&
		fail "$1: the swapped-in file got the symlink's xattr"
}

echo decoy >"$XDIR/decoy-file"
touch -d @1000000000 "$XDIR/decoy-file"
swapped_restore file "$XDIR/decoy-file"
[ -f "$XDIR/file/link" ] && [ ! -L "$XDIR/file/link" ] || fail "file: the decoy is not in place"
untouched file "$XDIR/file/link"
[ "$(cat "$XDIR/file/link")" = decoy ] || fail "file: the decoy's content changed"

ln -s elsewhere "$XDIR/decoy-link"
touch -h -d @1000000000 "$XDIR/decoy-link"
swapped_restore link "$XDIR/decoy-link"
[ "$(readlink "$XDIR/link/link")" = elsewhere ] || fail "link: the decoy is not in place"
untouched link "$XDIR/link/link"

# the same command with --force converges
ok cairn restore -f tank@1 "$XDIR/file"
same_tree "$SRC" "$XDIR/file"
done_test
