#!/bin/bash
# The atime probe of `cairn init` on real filesystems (root: loop mounts).
# GC marks chunks with explicit utimensat() and sweeps by atime, so what
# matters is that explicitly set atimes stick, not whether reads update
# them:
# - ext4 mounted noatime keeps explicitly set atimes: init accepts it, and
#   GC there removes exactly the garbage (cutoff 0) and keeps what
#   snapshots use;
# - vfat keeps access dates only (no time of day): init refuses it, naming
#   the reason, and leaves no store behind.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root for loop mounts"; exit 77; }
for t in mkfs.ext4 mkfs.vfat; do
	command -v $t >/dev/null || { echo "needs $t (scripts/deps.sh installs it)"; exit 77; }
done
MNTS=()
cleanup() {
	local m
	for m in "${MNTS[@]}"; do umount -l "$m" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$TESTDIR" $XATTR_DIRS
}
trap cleanup EXIT
# mount_img TYPE OPTS NAME: a fresh image of TYPE mounted at $TESTDIR/NAME
# (inodes for a store's 65,536 chunk directories).
mount_img() {
	local img=$TESTDIR/$3.img mnt=$TESTDIR/$3
	truncate -s 160M "$img" && mkdir -p "$mnt" || return 1
	case $1 in
	ext4) mkfs.ext4 -q -F -b 1024 -N 90000 -m 0 -O ^has_journal "$img" >/dev/null 2>&1 ;;
	vfat) mkfs.vfat "$img" >/dev/null 2>&1 ;;
	esac || { fail "mkfs.$1"; return 1; }
	if [ "$1" = vfat ] && [ "$vfat_driver" = fusefat ]; then
		fusefat -o rw+ "$img" "$mnt" >/dev/null 2>&1 || { fail "fusefat $img"; return 1; }
	else
		mount -o "loop,$2" "$img" "$mnt" || { fail "mount $1 -o $2"; return 1; }
	fi
	MNTS+=("$mnt")
}

# ---- ext4, noatime: accepted, and GC works there ----
mount_img ext4 noatime noatime || done_test
findmnt -n -o OPTIONS "$TESTDIR/noatime" | grep -qw noatime || fail "not mounted noatime"
export CAIRN_STORE=$TESTDIR/noatime/store
ok cairn init >/dev/null
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 600000 /dev/urandom >"$SRC/keep.bin"
head -c 600000 /dev/urandom >"$SRC/drop.bin"
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn snapshot tank@1
rm "$SRC/drop.bin"
ok cairn snapshot tank@2
ok cairn destroy tank@1
ok cairn config gc_atime_cutoff=0
would=$(cairn gc -n | sed -n 's/^would remove \([0-9]*\) chunks.*/\1/p')
[ "${would:-0}" -ge 5 ] || fail "too little garbage on the noatime mount: ${would:-?} chunks"
ok cairn gc >/dev/null
out=$(cairn gc -n)
echo "$out" | grep -q 'would remove 0 chunks' || fail "garbage left on the noatime mount: $out"
ok cairn verify >/dev/null
ok cairn restore tank@2 "$TESTDIR/r"
cmp -s "$SRC/keep.bin" "$TESTDIR/r/keep.bin" || fail "keep.bin after GC on the noatime mount"

# ---- vfat: access dates only, refused ----
# The kernel's vfat driver where there is one; otherwise (VM kernels built
# without it) Debian's fusefat, a userspace FAT driver with the same
# on-disk format and so the same date-only access times.
vfat_driver=kernel
if ! grep -qw vfat /proc/filesystems && ! modprobe vfat 2>/dev/null; then
	command -v fusefat >/dev/null || { echo "needs vfat or fusefat (scripts/deps.sh installs fusefat)"; exit 77; }
	vfat_driver=fusefat
fi
# In the first minute of a (UTC) day a date-only atime still reads as
# "now"; wait that minute out rather than depend on it.
while [ "$(date -u +%H%M)" = 0000 ]; do sleep 5; done
mount_img vfat rw vfat || done_test
fails_with 1 "access times" "$CAIRN" -s "$TESTDIR/vfat/store" init
[ -e "$TESTDIR/vfat/store/catalog.db" ] && fail "refused init left a catalog"
[ -e "$TESTDIR/vfat/store/.chunks" ] && fail "refused init left chunk directories"
done_test
