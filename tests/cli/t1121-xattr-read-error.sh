#!/bin/bash
# An xattr whose value cannot be read (EIO from the source's disk, while
# its name still lists) must not be dropped silently: the object would be
# recorded without it and restored so, and the snapshot would look
# complete.  The object is reported and left out, as an unreadable file
# is; --strict refuses the snapshot.  Once the error is gone, the next
# snapshot records everything.
. "$(dirname "$0")/lib.sh"
new_store
use_xattr_dir
SRC=$XDIR/src
R=$XDIR/restored
mkdir -p "$SRC/dir/sub" "$R"
echo inside >"$SRC/dir/f"
echo deeper >"$SRC/dir/sub/g"
head -c 300000 /dev/urandom >"$SRC/big"
echo small >"$SRC/small"
echo other >"$SRC/other"
setfattr -n user.bad -v 1 "$SRC/big"
setfattr -n user.bad -v 2 "$SRC/small"
setfattr -n user.bad -v 3 "$SRC/dir"
setfattr -n user.good -v 4 "$SRC/other"
build_shim xattr-eio
LOG=$TESTDIR/eio.log
ok cairn create -o source="$SRC" tank

out=$(ASAN_OPTIONS=$SHIM_ASAN LD_PRELOAD=$SHIM XATTR_EIO_NAME=user.bad XATTR_EIO_LOG=$LOG cairn snapshot tank@one 2>&1)
rc=$?
[ -s "$LOG" ] || fail "the shim failed no xattr read"
[ $rc -ne 0 ] || fail "a snapshot with unreadable xattrs exited 0: $out"
for f in big small; do
	echo "$out" | grep -q "$SRC/$f: Input/output error" || fail "$f not reported: $out"
done
# The directory goes with all below it, and the report says so.
echo "$out" | grep -q "$SRC/dir (a directory, left out with everything below it): Input/output error" ||
	fail "dir not reported as left out with its subtree: $out"
ok cairn restore tank@one "$R/one"
for f in big small dir; do
	[ ! -e "$R/one/$f" ] || fail "$f recorded without its xattr"
done
[ "$(getfattr --absolute-names --only-values -n user.good "$R/one/other")" = 4 ] || fail "a readable xattr was lost"
# A directory left out is not entered: entries without their parent
# could not be restored.
[ ! -e "$R/one/dir/f" ] && [ ! -e "$R/one/dir/sub" ] || fail "entries of a left-out directory recorded"

: >"$LOG"
fails_with 1 "Input/output error" env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" XATTR_EIO_NAME=user.bad XATTR_EIO_LOG="$LOG" \
	"$CAIRN" snapshot --strict tank@strict
[ -s "$LOG" ] || fail "the shim failed no xattr read under --strict"
cairn list -H -o name -t snapshot tank@strict >/dev/null 2>&1 && fail "--strict recorded a snapshot"

# The root cannot be left out: the snapshot fails, naming the source.
setfattr -n user.bad -v 5 "$SRC"
: >"$LOG"
fails_with 1 "source $SRC: reading its xattrs: Input/output error" env ASAN_OPTIONS="$SHIM_ASAN" \
	LD_PRELOAD="$SHIM" XATTR_EIO_NAME=user.bad XATTR_EIO_LOG="$LOG" "$CAIRN" snapshot tank@root
[ -s "$LOG" ] || fail "the shim failed no xattr read of the root"
cairn list -H -o name -t snapshot tank@root >/dev/null 2>&1 && fail "a snapshot without the root's xattr"

ok cairn snapshot tank@two
ok cairn restore tank@two "$R/two"
same_tree "$SRC" "$R/two"
done_test
