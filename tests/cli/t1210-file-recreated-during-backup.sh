#!/bin/bash
# A regular file removed and made again (rm f; write f anew) between the
# walk's stat and the backup's open of it.  On ext4 the new file usually
# gets the old one's inode number back, so the inode check at the open
# passed, and the new file's bytes were recorded under the old file's
# mode, owner and times, silently: a file that never existed.  Now the
# open also compares the birth time with the stat's
# ctime (as for directories and symlinks): the file is left out naming
# it (exit 1) and the next backup records the new one.  Small files (read
# with their bundle) and large ones (read on their own) take different
# paths to the open; both are swapped.  An LD_PRELOAD shim makes the swap
# at the open.  Run where inode numbers are reused: a disk filesystem.
. "$(dirname "$0")/lib.sh"
new_store
R=$TESTDIR/restored
mkdir -p "$R"
RD=$(mktemp -d "${CAIRN_XATTR_TMP:-/var/tmp}/cairn-file.XXXXXX") || fail "no scratch directory"
XATTR_DIRS="${XATTR_DIRS:-} $RD"
build_shim file-swap
for kind in small big; do
	mkdir "$RD/$kind"
	echo data >"$RD/$kind/other"
	echo "old small file" >"$RD/$kind/small"
	head -c 1000000 /dev/zero | tr '\0' O >"$RD/$kind/big"
	touch -d '@981173106' "$RD/$kind/small" "$RD/$kind/big"
	ok cairn create -o source="$RD/$kind" "$kind"
	shimmed "$kind@one" "recreated $kind " SWAP_FILE="$kind"
	grep -q "same-inode" "$TESTDIR/swap.log" ||
		echo "note: the new $kind file got a new inode number here; the inode check alone catches it" >&2
	reported "$kind@one" "$RD/$kind/$kind: "
	ok cairn restore "$kind@one" "$R/$kind-one"
	f=$R/$kind-one/$kind
	if [ -e "$f" ]; then
		if tr -d N <"$f" | grep -q . ; then
			fail "$kind: restored with content that was never the new file's"
		elif [ "$(stat -c %Y "$f")" = 981173106 ]; then
			fail "$kind: the new file's content was recorded under the old file's mtime"
		fi
	fi
	[ "$(cat "$R/$kind-one/other")" = data ] || fail "$kind: the rest of the tree was not recorded"
	settles "$kind@two" "$RD/$kind"
done
done_test
