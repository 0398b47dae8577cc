#!/bin/bash
# A destination whose disk fills up during a sync: the sync fails naming
# the chunk and "No space left on device", leaves no half-written chunk
# file and no dataset or snapshot behind (a full copy), or the copy as it
# was (an incremental: the earlier snapshot still verifies); once there is
# room, the same sync converges without sending again the chunks already
# made durable, and the copy restores with full fidelity.
. "$(dirname "$0")/lib.sh"
small_disk 6m
new_store
B=$MNT/b
ok cairn -s "$B" init >/dev/null
# small batches: the chunks of the batches made durable before the disk
# filled up stay, and the retry, asking which chunks are there, skips them
ok cairn -s "$B" config sync_batch_chunks=2
use_xattr_dir
S=$XDIR/src
rich_tree "$S"
mkdir -p "$S/d"
for i in 1 2 3 4 5; do head -c 2000000 /dev/urandom >"$S/d/f$i"; done
ok ca create -o source="$S" -o compression=off t
ok ca snapshot t@1
cp -a "$S" "$XDIR/at1"
halfwritten() { find "$B/.chunks" -name '*.tmp*' | head -n 3; }
size() { mount -o remount,size="$1" "$MNT" || fail "remount size=$1"; }

# 1. a full copy that does not fit
fails_with 1 "chunk.*No space left on device" ca sync t "$B:bk"
[ -z "$(halfwritten)" ] || fail "half-written chunk files left: $(halfwritten)"
[ -z "$(cb list -H -o name -t all bk 2>/dev/null)" ] || fail "the failed full copy left bk behind"
size 64m
out=$(ca sync -v t "$B:bk" 2>&1) || fail "sync after the full disk: $out"
echo "$out" | grep -Eq ' [1-9][0-9]* chunks already there' ||
	fail "the retry sent again the chunks stored before the disk filled up: $out"
ok cb restore bk@1 "$XDIR/r1"
same_tree "$XDIR/at1" "$XDIR/r1"

# 2. an incremental that does not fit: the copy stays as it was
for i in 6 7 8 9; do head -c 2000000 /dev/urandom >"$S/d/f$i"; done
ok ca snapshot t@2
used=$(df --output=used -k "$MNT" | tail -n 1)
size "$((used + 3000))k"
fails_with 1 "No space left on device" ca sync t "$B:bk"
[ -z "$(halfwritten)" ] || fail "half-written chunk files left: $(halfwritten)"
[ "$(snaps bk)" = "bk@1 " ] || fail "the failed incremental changed the copy: $(snaps bk)"
size 64m
ok cb verify bk@1 >/dev/null
ok ca sync t "$B:bk" >/dev/null
[ "$(snaps bk)" = "bk@1 bk@2 " ] || fail "the retried incremental: $(snaps bk)"
rm -rf "$XDIR/r1" && ok cb restore bk@1 "$XDIR/r1"
same_tree "$XDIR/at1" "$XDIR/r1"
ok cb restore bk@2 "$XDIR/r2"
same_tree "$S" "$XDIR/r2"
done_test
