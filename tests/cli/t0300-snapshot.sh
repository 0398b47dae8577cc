#!/bin/bash
# Back up a real tree with every kind of object, change it, back it up
# again, and restore both snapshots with full fidelity.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
cp -a /usr/include/linux "$SRC/linux"          # thousands of small files
head -c 3000000 /dev/urandom >"$SRC/big.bin"    # chunked on its own
cat "$SRC/big.bin" "$SRC/big.bin" >"$SRC/big2.bin" # dedups against big.bin
: >"$SRC/empty"
ln -s linux/types.h "$SRC/link"
ln -s /nonexistent "$SRC/dangling"
ln "$SRC/big.bin" "$SRC/hardlink"
mkfifo "$SRC/fifo"
truncate -s 50M "$SRC/sparse"
printf 'middle' | dd of="$SRC/sparse" bs=1 seek=20000000 conv=notrunc status=none
chmod 4751 "$SRC/empty"
mkdir -p "$SRC/d1/d2/d3" && echo deep >"$SRC/d1/d2/d3/f"
chmod 500 "$SRC/d1/d2"
touch -d '2001-02-03 04:05:06.123456789' "$SRC/linux/types.h"
setfattr -n user.cairn -v hello "$SRC/big.bin" 2>/dev/null && xattrs=1 || xattrs=0
[ "$(id -u)" = 0 ] && mknod "$SRC/null" c 1 3
chown -h 1234:5678 "$SRC/link" 2>/dev/null

ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@one
cp -a "$SRC" "$TESTDIR/copy1"

# an unchanged re-backup reads nothing and writes nothing
out=$(cairn snapshot -v tank@same 2>&1)
echo "$out" | grep -q ' 0B read' || fail "unchanged backup read data: $out"
echo "$out" | grep -q ' 0 new chunks' || fail "unchanged backup wrote chunks: $out"

# change one small file, add one, remove one, grow the big one
echo changed >>"$SRC/linux/kernel.h"
echo new >"$SRC/linux/zzz-new.h"
rm "$SRC/linux/types.h"
head -c 100000 /dev/urandom >>"$SRC/big2.bin"
out=$(cairn snapshot -v tank@two 2>&1)
read_bytes=$(echo "$out" | sed -n 's/.* files, \([^ ]*\) read.*/\1/p')
case "$read_bytes" in *M) [ "${read_bytes%%.*}" -lt 10 ] || fail "incremental read $read_bytes";; esac

ok cairn restore tank@one "$TESTDIR/r1"
same_tree "$TESTDIR/copy1" "$TESTDIR/r1"
ok cairn restore tank@two "$TESTDIR/r2"
same_tree "$SRC" "$TESTDIR/r2"
[ "$(stat -c %i "$TESTDIR/r2/big.bin")" = "$(stat -c %i "$TESTDIR/r2/hardlink")" ] || fail "hardlink lost"
[ "$(stat -c %b "$TESTDIR/r2/sparse")" -lt 1000 ] || fail "sparse file not sparse"
[ $xattrs = 1 ] && { [ "$(getfattr --only-values -n user.cairn "$TESTDIR/r2/big.bin")" = hello ] || fail "xattr lost"; }
[ "$(stat -c %y "$TESTDIR/r1/linux/types.h")" = "2001-02-03 04:05:06.123456789 +0000" ] || fail "ns mtime lost"
[ "$(id -u)" = 0 ] && { [ "$(stat -c %u:%g "$TESTDIR/r2/link")" = 1234:5678 ] || fail "symlink owner"; }
[ -p "$TESTDIR/r2/fifo" ] || fail "fifo"

# named paths only
ok cairn restore tank@two "$TESTDIR/r3" linux/kernel.h /d1/d2/
[ -f "$TESTDIR/r3/linux/kernel.h" ] && [ -f "$TESTDIR/r3/d1/d2/d3/f" ] || fail "paths not restored"
[ -e "$TESTDIR/r3/big.bin" ] && fail "unrequested file restored"
cmp -s "$SRC/linux/kernel.h" "$TESTDIR/r3/linux/kernel.h" || fail "path content"

# refusals
fails_with 1 "not empty" "$CAIRN" restore tank@one "$TESTDIR/r1"
ok cairn restore --force tank@one "$TESTDIR/r1"
fails_with 1 "no such path" "$CAIRN" restore tank@one "$TESTDIR/r4" nosuch/file
fails_with 1 "does not exist" "$CAIRN" restore tank@nosuch "$TESTDIR/r5"
fails_with 1 "already exists" "$CAIRN" snapshot tank@one
fails_with 1 "does not exist" "$CAIRN" snapshot nosuch@x
fails_with 1 "invalid character" "$CAIRN" snapshot 'tank@a b'
ok cairn create -o source="$TESTDIR/missing" gone
fails_with 1 "source" "$CAIRN" snapshot gone@x
cairn list -H -o name -t snapshot | grep -q '^gone@' && fail "failed snapshot visible"
chmod -R u+w "$SRC" "$TESTDIR"/copy1 "$TESTDIR"/r* 2>/dev/null
done_test
