#!/bin/bash
# New chunks of 64 KiB or more are written with O_DIRECT: on ext4 their
# blocks are not left in the page cache (only the tail block, written
# through it).  A file system that refuses O_DIRECT at open, or takes it at
# open and then refuses a write, gets every chunk through the page cache
# instead, as it does with the store setting direct_io=0.  Every way the
# backup restores with full fidelity and verifies.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root for a loop mount"; exit 77; }
command -v mkfs.ext4 >/dev/null || { echo "needs mkfs.ext4"; exit 77; }
command -v fincore >/dev/null || { echo "needs fincore (util-linux)"; exit 77; }
IMG=$TESTDIR/fs.img
MNT=$TESTDIR/mnt
mkdir -p "$MNT"
truncate -s 256M "$IMG"
mkfs.ext4 -q -F "$IMG" >/dev/null 2>&1 || fail "mkfs"
mount -o loop "$IMG" "$MNT" || { echo "loop mount not permitted"; exit 77; }
trap 'umount -l "$MNT" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR" ${XATTR_DIRS:-}' EXIT
SHIM=$TESTDIR/no-direct.so
cc -shared -fPIC -o "$SHIM" "$(dirname "$0")/no-direct.c" -ldl || fail "cannot build the shim"
asan_opts=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0
use_xattr_dir
S=$XDIR/src
rich_tree "$S"
for i in 1 2 3; do head -c 3000000 /dev/urandom >"$S/r$i"; done

# cached_share STORE: the percentage of the bytes of its chunk files of
# 64 KiB or more that the page cache holds, and how many such files
# there are ("PERCENT FILES").
cached_share() {
	find "$1/.chunks" -type f -size +64k -print0 | xargs -0 -r fincore -b -n -o RES,SIZE |
		awk '{res += $1; size += $2; n++} END {printf "%d %d\n", size ? 100 * res / size : 0, n}'
}

# backup_into NAME [ENV...]: a store on the ext4 image, and one backup of
# $S into it, run with the environment given.
backup_into() {
	local st=$MNT/$1
	shift
	ok cairn -s "$st" init >/dev/null
	ok cairn -s "$st" create -o source="$S" -o compression=off t
	env "$@" ASAN_OPTIONS="$asan_opts" "$CAIRN" -s "$st" snapshot t@1 ||
		fail "backup into $st ($*)"
}

# restores STORE: the snapshot verifies and restores with full fidelity.
restores() {
	ok cairn -s "$1" verify t@1 >/dev/null
	rm -rf "$XDIR/r"
	ok cairn -s "$1" restore t@1 "$XDIR/r"
	same_tree "$S" "$XDIR/r"
}

# 1. ext4 takes O_DIRECT: the chunks' blocks bypass the page cache.
backup_into direct
read -r pct n < <(cached_share "$MNT/direct")
[ "$n" -ge 9 ] || fail "only $n chunk files of 64 KiB or more"
[ "$pct" -le 10 ] || fail "the page cache holds $pct% of the new chunks: not written with O_DIRECT"
restores "$MNT/direct"

# 2. direct_io=0 (here from the environment): through the page cache.
backup_into off CAIRN_DIRECT_IO=0
read -r pct n < <(cached_share "$MNT/off")
[ "$n" -ge 9 ] && [ "$pct" -ge 90 ] ||
	fail "direct_io=0: $pct% of $n chunk files cached, not written through the page cache"
restores "$MNT/off"

# 3. O_DIRECT refused at open, then 4. refused by a write: the page cache
# takes every chunk, and the fallback really ran.
for call in open write; do
	: >"$TESTDIR/log.$call"
	backup_into "no-$call" NODIRECT=$call NODIRECT_LOG="$TESTDIR/log.$call" LD_PRELOAD="$SHIM"
	[ -s "$TESTDIR/log.$call" ] || fail "the shim refused no O_DIRECT $call"
	read -r pct n < <(cached_share "$MNT/no-$call")
	[ "$n" -ge 9 ] && [ "$pct" -ge 90 ] ||
		fail "O_DIRECT refused at $call: $pct% of $n chunk files cached, not written through the page cache"
	restores "$MNT/no-$call"
done
done_test
