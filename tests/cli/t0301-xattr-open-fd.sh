#!/bin/bash
# A new or changed file's xattrs are read from the fd its content is read
# with (not by path): bundle members, members carried into a new bundle,
# unchanged members of a re-packed bundle, large files, hardlinks with a
# small or large first name, empty files and the root, over three backups
# (new, changed, unchanged).  Every restore is compared in full.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
new_store
use_xattr_dir
SRC=$XDIR/src
R=$XDIR/restored
mkdir -p "$SRC/a" "$SRC/b" "$R"
for i in $(seq 1 300); do
	head -c $((1000 + i * 7)) /dev/urandom >"$SRC/a/f$i"
	setfattr -n user.n -v "a$i" "$SRC/a/f$i"
	head -c $((1500 + i * 3)) /dev/urandom >"$SRC/b/g$i"
	setfattr -n user.n -v "b$i" "$SRC/b/g$i"
done
head -c 3000000 /dev/urandom >"$SRC/big" && setfattr -n user.big -v 1 "$SRC/big"
ln "$SRC/big" "$SRC/big.link"
echo small >"$SRC/s1" && setfattr -n user.s -v 1 "$SRC/s1" && ln "$SRC/s1" "$SRC/a/s1.link"
: >"$SRC/empty" && setfattr -n user.e -v 1 "$SRC/empty" && ln "$SRC/empty" "$SRC/empty.link"
setfattr -n user.root -v r "$SRC"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@one
ok cairn restore tank@one "$R/r1"
same_tree "$SRC" "$R/r1"
[ "$(getfattr --only-values -n user.n "$R/r1/a/f7")" = a7 ] || fail "bundle member's xattr (new)"
[ "$(getfattr --only-values -n user.big "$R/r1/big")" = 1 ] || fail "large file's xattr (new)"

# One changed member (carried), an xattr-only change, a new member.
echo x >>"$SRC/a/f10"
setfattr -n user.n -v changed "$SRC/a/f20"
setfattr -n user.new -v 1 "$SRC/a/f30"
echo new >"$SRC/a/new" && setfattr -n user.n -v new "$SRC/a/new"
# Most of b's members go: the rest are re-read unchanged into a new bundle.
for i in $(seq 1 300); do [ $((i % 10)) = 0 ] || rm "$SRC/b/g$i"; done
setfattr -n user.big -v 2 "$SRC/big"
echo more >>"$SRC/s1" && setfattr -n user.s -v 2 "$SRC/s1"
setfattr -n user.e -v 2 "$SRC/empty"
ok cairn snapshot tank@two
ok cairn restore tank@two "$R/r2"
same_tree "$SRC" "$R/r2"
[ "$(getfattr --only-values -n user.n "$R/r2/a/f20")" = changed ] || fail "xattr-only change lost"
[ "$(getfattr --only-values -n user.n "$R/r2/a/new")" = new ] || fail "new member's xattr"
[ "$(getfattr --only-values -n user.big "$R/r2/big.link")" = 2 ] || fail "large hardlink's xattr"
[ "$(getfattr --only-values -n user.s "$R/r2/a/s1.link")" = 2 ] || fail "small hardlink's xattr"
[ "$(getfattr --only-values -n user.n "$R/r2/b/g100")" = b100 ] || fail "re-packed member's xattr"

# Unchanged: every xattr comes from the previous snapshot.
ok cairn snapshot tank@three
ok cairn restore tank@three "$R/r3"
same_tree "$SRC" "$R/r3"
done_test
