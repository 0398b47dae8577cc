#!/bin/bash
# A plain `send | recv -s` whose destination disk fills up partway through
# a long group: the receive fails naming the chunk and "No space left on
# device", and keeps the resume point of its last checkpoint (one every
# 1,024 chunks).  Once there is room, `send -t` with that token sends only
# what came after the checkpoint, and the copy restores with full fidelity.
. "$(dirname "$0")/lib.sh"
small_disk 80m
new_store
B=$MNT/b
ok cairn -s "$B" init >/dev/null
use_xattr_dir
S=$XDIR/src
rich_tree "$S"
# 64 KiB chunks: 1,024 of them (the checkpoint interval) in 64 MiB
for i in 1 2 3 4 5; do head -c 20000000 /dev/urandom >"$S/f$i"; done
ok ca create -o source="$S" -o compression=off -o chunksize=64K t
ok ca snapshot t@1
full=$(ca send t@1 | wc -c)

out=$(ca send t@1 2>/dev/null | cb recv -s bk 2>&1) && fail "the receive onto a full disk succeeded: $out"
echo "$out" | grep -q "chunk .*No space left on device" || fail "no full-disk error: $out"
tok=$(cb get -H -o value receive_resume_token bk) || fail "no dataset bk after the cut"
[ "$tok" != - ] || fail "the full disk left no resume point"

mount -o remount,size=256m "$MNT" || fail "remount"
rest=$(ca send -t "$tok" | wc -c)
[ "$rest" -lt $((full * 3 / 4)) ] ||
	fail "the resume sends $rest of $full bytes: the checkpoint before the full disk was lost"
ok sh -c "'$CAIRN' send -t '$tok' | '$CAIRN' -s '$B' recv -s bk"
[ "$(snaps bk)" = "bk@1 " ] || fail "after the resume: $(snaps bk)"
[ "$(cb get -H -o value receive_resume_token bk)" = - ] || fail "a token is left after the resume"
ok cb verify bk@1 >/dev/null
ok cb restore bk@1 "$XDIR/r1"
same_tree "$S" "$XDIR/r1"
done_test
