#!/bin/bash
# A file written again in the same timestamp tick as the backup that read
# it (on a filesystem with 1 s or 2 s timestamps: FUSE, NFS, FAT) keeps its
# size, mtime and ctime, and the next backup's unchanged shortcut took the
# old content for good.  Now a file whose ctime is no older than the second
# before the backup started is recorded so that the next backup reads it
# again (git's racy index entries), and a file changed well before a backup
# still goes unread.  An LD_PRELOAD shim shows the source with whole-second
# timestamps and freezes the racy file's ctime at the second of the first
# backup's stat, as such a filesystem shows every change within that tick;
# its mtime is set back with touch -d.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
R=$TESTDIR/restored
mkdir -p "$SRC" "$R"
# a file changed well before the backups: read by the first one only
head -c 5000 /dev/urandom >"$SRC/old"
# its ctime must be older than the second before the backup's start
sleep 2
racy_first_snapshot

# rewritten in place within that tick: same size, mtime set back, and
# (frozen by the shim) the same ctime and inode
printf 'BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\n' >"$SRC/racy"
touch -d '@981173106' "$SRC/racy"
rm -f "$TESTDIR/swap.log"
out=$(env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" SWAP_LOG="$TESTDIR/swap.log" \
	"$CAIRN" snapshot -v -p tank@two 2>&1) || fail "tank@two: $out"
grep -q "frozen racy" "$TESTDIR/swap.log" 2>/dev/null || fail "tank@two: the shim did not act"
ok cairn restore tank@two "$R/two"
[ "$(cat "$R/two/racy")" = BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB ] ||
	fail "the write in the backup's tick was missed: racy restored as $(cat "$R/two/racy")"
cmp -s "$SRC/old" "$R/two/old" || fail "old not restored"
# the fast path stays: only the racy file was read, not the old one
read_b=$(echo "$out" | sed -n 's/^[0-9]* files, \([0-9]*\) read,.*/\1/p')
[ "$read_b" = 41 ] || fail "tank@two read $read_b bytes, expected the racy file's 41 only: $out"
done_test
