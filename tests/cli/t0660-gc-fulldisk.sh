#!/bin/bash
# GC on a full filesystem loses nothing.  The store lives on a small ext4
# image (loop mount: root only, else skipped) that is filled to the last
# block and the last inode.  A backup that fails for lack of space leaves
# temporaries behind; GC then runs with no free space at all: whatever it
# manages (its renames may fail, its status may not be saved), every
# snapshot still verifies and restores.  With space back, GC finishes the
# job: the garbage and the dead backup's temporaries are gone.  (The
# catalog cannot commit on a full disk, so GC's status, destroy and
# lastverified wait for space; GC itself still frees what it can.)
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root for a loop mount"; exit 77; }
command -v mkfs.ext4 >/dev/null || { echo "needs mkfs.ext4"; exit 77; }
IMG=$TESTDIR/fs.img
MNT=$TESTDIR/mnt
mkdir -p "$MNT"
truncate -s 160M "$IMG"
mkfs.ext4 -q -F -b 1024 -N 90000 -m 0 -O ^has_journal "$IMG" >/dev/null 2>&1 || { echo "mkfs failed"; exit 77; }
mount -o loop "$IMG" "$MNT" 2>/dev/null || { echo "loop mount not permitted"; exit 77; }
trap 'umount -l "$MNT" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT
export CAIRN_STORE=$MNT/store
"$CAIRN" init >/dev/null || { fail "init on the small filesystem"; done_test; }
SRC=$TESTDIR/src
mkdir -p "$SRC"
cp -a /usr/include/linux/[a-c]*.h "$SRC/"
head -c 8000000 /dev/urandom >"$SRC/big.bin"
ok cairn create -o source="$SRC" -o chunksize=64K -o compression=off tank
ok cairn snapshot tank@1
head -c 8000000 /dev/urandom >"$SRC/big.bin"
ok cairn snapshot tank@2
ok cairn config gc_atime_cutoff=0
ok cairn gc # its lock file exists from now on
manifest "$SRC" >"$TESTDIR/man2"

# Garbage to collect (the catalog needs space to say so).
ok cairn destroy tank@1
# Fill every block and then every inode.
dd if=/dev/zero of="$MNT/fill" bs=64k 2>/dev/null
mkdir -p "$MNT/inodes"
i=0
while { : >"$MNT/inodes/$i"; } 2>/dev/null; do i=$((i + 1)); done
# A backup now fails and leaves temporaries.
head -c 3000000 /dev/urandom >"$SRC/new.bin"
"$CAIRN" snapshot tank@3 >/dev/null 2>&1 && fail "backup on a full disk succeeded"
df -h "$MNT" | tail -1
# Collect with no space left at all.
out=$("$CAIRN" gc -v 2>&1)
echo "gc on a full disk: exit $?: $(echo "$out" | grep -E '^(removed|cairn)' | head -3)"
echo "$out" | grep -q "access times\|atime probe" && fail "GC refused on a full disk: $out"
# Restore writes nothing into the store: check tank@2 while still full.
rm -rf "$TESTDIR/r"
ok cairn restore tank@2 "$TESTDIR/r"
[ "$(manifest "$TESTDIR/r")" = "$(cat "$TESTDIR/man2")" ] || fail "tank@2 after GC on a full disk"

# Space back: every chunk is there; the next GC completes and leaves only
# what tank@2 needs.
rm -rf "$MNT/fill" "$MNT/inodes"
ok cairn verify
ok cairn gc
ok cairn verify
left=$(find "$CAIRN_STORE/.chunks" -name '*.tmp.*' -o -name '*.gc' | wc -l)
[ "$left" = 0 ] || fail "$left temporaries or quarantined chunks left"
out=$(cairn gc -n)
echo "$out" | grep -q 'would remove 0 chunks' || fail "garbage left: $out"
ok cairn snapshot tank@3
rm -rf "$TESTDIR/r"
ok cairn restore tank@3 "$TESTDIR/r"
cmp -s "$SRC/new.bin" "$TESTDIR/r/new.bin" || fail "backup after space came back"
done_test
