#!/bin/bash
# cairn mount: a read-only FUSE view of snapshots (.zfs/snapshot/NAME) with
# full fidelity, random-offset and concurrent reads, sparse files, and
# temporary holds that keep destroy away while mounted.
. "$(dirname "$0")/lib.sh"
need_fuse
M=$TESTDIR/mnt
M2=$TESTDIR/mnt2
mkdir -p "$M" "$M2"
# Unmount whatever happens, before lib.sh removes the directory.
cleanup() {
	fusermount3 -u -z "$M" 2>/dev/null
	fusermount3 -u -z "$M2" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"
}
trap cleanup EXIT

new_store
S=$TESTDIR/src
mkdir -p "$S/dir/sub" "$S/private"
echo hello >"$S/a"
head -c 5000000 /dev/urandom >"$S/big"
truncate -s 20M "$S/sparse"
printf 'data in the middle' | dd of="$S/sparse" bs=1 seek=9000000 conv=notrunc status=none
ln "$S/a" "$S/dir/alink"
ln -s a "$S/sym"
ln -s /nonexistent/target "$S/dir/dangling"
mkfifo "$S/fifo"
ln -P "$S/sym" "$S/dir/symlink2" && ln "$S/fifo" "$S/fifo2" || fail "cannot hardlink a symlink or FIFO"
setfattr -n user.note -v "a note" "$S/a"
chmod 0750 "$S/private"
chmod 0604 "$S/dir/sub"
touch -d '2001-02-03 04:05:06.123456789' "$S/dir/sub" "$S/sym" 2>/dev/null
touch -h -d '2001-02-03 04:05:06.123456789' "$S/sym"
if [ "$(id -u)" = 0 ]; then
	chown 1234:5678 "$S/a" "$S/private"
	chown -h 4321:8765 "$S/sym"
	mknod "$S/null" c 1 3
	ln "$S/null" "$S/null2"
	setfacl -m u:1234:r "$S/big"
fi
ok cairn create -o source="$S" ds
ok cairn snapshot ds@one
echo changed >>"$S/a"
ok cairn snapshot ds@two
ok cairn create -p -o source="$S/dir" ds/child
ok cairn snapshot ds/child@c1
ok cairn restore ds@two "$TESTDIR/restored"

ok cairn mount "$M" ds
mountpoint -q "$M" || fail "not mounted"
ls "$M/.zfs/snapshot" | tr '\n' ' ' | grep -qx 'one two ' || fail "snapshot list: $(ls "$M/.zfs/snapshot")"
[ -d "$M/child/.zfs/snapshot/c1/sub" ] || fail "child dataset's snapshot not under child/"
T=$M/.zfs/snapshot/two

# Full fidelity against the source and against a restore.
# (diff -r exits 1 on fifos and devices; every other line is a real difference)
d=$(diff -r --no-dereference "$T" "$TESTDIR/restored" 2>&1 | grep -v ' while file .* is a \(fifo\|character special file\)$')
[ -z "$d" ] || fail "diff -r mount vs restore: $d"
same_tree "$S" "$T"
[ "$(cat "$M/.zfs/snapshot/one/a")" = hello ] || fail "older snapshot content"
[ "$(stat -c %h "$T/a")" = 2 ] || fail "hardlink count"
[ "$(stat -c %i "$T/a")" = "$(stat -c %i "$T/dir/alink")" ] || fail "hardlinks not one inode"
[ "$(readlink "$T/dir/symlink2")" = a ] || fail "hardlinked symlink: $(stat -c %F "$T/dir/symlink2")"
[ "$(stat -c %i "$T/sym")" = "$(stat -c %i "$T/dir/symlink2")" ] || fail "hardlinked symlink not one inode"
[ -p "$T/fifo2" ] || fail "hardlinked FIFO: $(stat -c %F "$T/fifo2")"
[ "$(getfattr --only-values -n user.note "$T/a")" = "a note" ] || fail "xattr"

# Random-offset reads match the source byte for byte.
python3 - "$S/big" "$T/big" <<'EOF' || fail "random-offset reads"
import os, random, sys
a, b = (os.open(p, os.O_RDONLY) for p in sys.argv[1:3])
size = os.fstat(a).st_size
rnd = random.Random(7)
for _ in range(300):
    off = rnd.randrange(0, size + 10)
    n = rnd.choice([1, 17, 4096, 65536, 1 << 20, 3 << 20])
    if os.pread(a, n, off) != os.pread(b, n, off):
        sys.exit("differs at %d+%d" % (off, n))
EOF

# Sparse: holes are reported (SEEK_HOLE/SEEK_DATA, st_blocks), cp keeps them.
blocks=$(stat -c %b "$T/sparse")
[ "$blocks" -lt 1000 ] || fail "sparse file reports $blocks blocks"
ok cp --sparse=always "$T/sparse" "$TESTDIR/sparse.copy"
cmp -s "$S/sparse" "$TESTDIR/sparse.copy" || fail "sparse copy content"
[ "$(stat -c %b "$TESTDIR/sparse.copy")" -lt 1000 ] || fail "cp --sparse=always copy is not sparse"
python3 - "$T/sparse" <<'EOF' || fail "SEEK_DATA/SEEK_HOLE"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
d = os.lseek(fd, 0, os.SEEK_DATA)
h = os.lseek(fd, d, os.SEEK_HOLE)
assert 0 < d <= 9000000 < 9000018 <= h < 20 * 2**20, (d, h)
EOF

# Concurrent readers.
pids=()
for i in 1 2 3 4 5 6; do
	cmp -s "$S/big" "$T/big" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "concurrent reader $p"; done

# Read-only.
(echo x >"$T/newfile") 2>/dev/null && fail "wrote into the snapshot"
(echo x >>"$T/a") 2>/dev/null && fail "appended to a snapshot file"

# Held while mounted: destroy is refused, gc keeps the chunks.
cairn holds ds@two | grep -q "mount\." || fail "no temporary hold while mounted"
fails_with 1 "ds@two: snapshot is held" cairn destroy ds@two
ok cairn gc >/dev/null
cmp -s "$S/big" "$T/big" || fail "content after gc"

# A second mount of everything (no DATASET): datasets by name.
ok cairn mount "$M2"
[ -f "$M2/ds/.zfs/snapshot/one/a" ] || fail "mount without a dataset"
fusermount3 -u "$M2" || fail "unmount 2"

# Unmount releases the holds.
fusermount3 -u "$M" || fail "unmount"
for _ in $(seq 50); do cairn holds ds@two | grep -q "mount\." || break; sleep 0.1; done
cairn holds ds@two | grep -q "mount\." && fail "hold left after unmount"
ok cairn destroy ds@two

# An encrypted dataset reads with its key loaded, and is refused without it.
mkdir -p "$TESTDIR/esrc"
echo secret >"$TESTDIR/esrc/a"
printf 'correct horse battery staple\n' >"$TESTDIR/key"
ok cairn create -o encryption=aes-256-gcm -o keyformat=passphrase -o keylocation="file://$TESTDIR/key" -o source="$TESTDIR/esrc" enc
ok cairn snapshot enc@1
ok cairn mount "$M" enc
[ "$(cat "$M/.zfs/snapshot/1/a")" = secret ] || fail "encrypted snapshot content through mount"
fusermount3 -u "$M" || fail "unmount enc"
ok cairn unload-key enc
mv "$TESTDIR/key" "$TESTDIR/key.away"
ok cairn mount "$M" enc
err=$(cat "$M/.zfs/snapshot/1/a" 2>&1) && fail "read an encrypted snapshot without its key"
echo "$err" | grep -q 'Permission denied' || fail "no key: expected permission denied, got: $err"
fusermount3 -u "$M" || fail "unmount enc 2"

# Errors.
fails_with 1 "nosuch: dataset does not exist" cairn mount "$M" nosuch
truncate -s 1M "$TESTDIR/vol.img"
ok cairn create -V -o source="$TESTDIR/vol.img" vol
fails_with 1 "vol: a volume has no files to mount" cairn mount "$M" vol
# A container (source=none) snapshot shows as an empty directory.
ok cairn create -o source=none box
ok cairn snapshot box@empty
ok cairn mount "$M" box
[ -d "$M/.zfs/snapshot/empty" ] && [ -z "$(ls -A "$M/.zfs/snapshot/empty")" ] || fail "container snapshot not an empty dir"
fusermount3 -u "$M" || fail "unmount box"
fails_with 1 "not a directory" cairn mount "$TESTDIR/nodir" ds
fails_with 2 "unsupported mount option 'rw'" cairn mount -o rw "$M" ds
mountpoint -q "$M" && fail "mounted after an error"
cairn mount --help | grep -q 'usage: cairn mount' || fail "mount --help"

done_test
