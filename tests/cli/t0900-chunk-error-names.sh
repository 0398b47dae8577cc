#!/bin/bash
# A chunk the store cannot publish is named in the error, whichever step
# reports it: a backup's final flush, a put or tree write after a failed
# background batch, or a receive's resume point (every 1024 chunks).
# Nothing is committed, and once the cause is gone the same command
# converges.  A put never deduplicates against a name that is not a
# non-empty regular file.  The fault: a directory where the chunk's file must go, so
# the rename that publishes it fails with EISDIR.
. "$(dirname "$0")/lib.sh"
new_store
second_store
chunkfile() { echo "$1/.chunks/${2:0:4}/$2"; }
block() { mkdir -p "$(chunkfile "$1" "$2")/x"; }
unblock() { rm -rf "$(chunkfile "$1" "$2")"; }
snapshots() { "$CAIRN" -s "$1" list -H -t snapshot -o name 2>/dev/null; }
HEX='[0-9a-f]\{64\}'

# 1. The backup's final flush: the only small file is the only bundle,
#    so its chunk id is the file's SHA-256.
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 10000 /dev/urandom >"$SRC/f"
h=$(sha256sum "$SRC/f" | cut -c1-64)
ok cairn create -o source="$SRC" ds
block "$CAIRN_STORE" "$h"
fails_with 1 "chunk store: publishing chunk $h: Is a directory" cairn snapshot ds@1
[ -z "$(snapshots "$CAIRN_STORE")" ] || fail "a snapshot was committed over a failed flush"
unblock "$CAIRN_STORE" "$h"
ok cairn snapshot ds@1
ok cairn restore ds@1 "$TESTDIR/r1"
cmp "$SRC/f" "$TESTDIR/r1/f" || fail "restored content differs after the retry"
# An emptied chunk file (damage) is not a chunk: a backup that makes
# that chunk writes it again instead of deduplicating against it.
: >"$(chunkfile "$CAIRN_STORE" "$h")"
ok cairn create -o source="$SRC" again
ok cairn snapshot again@1
[ -s "$(chunkfile "$CAIRN_STORE" "$h")" ] || fail "the emptied chunk $h was not written again"
rm -rf "$TESTDIR/r1"
ok cairn restore ds@1 "$TESTDIR/r1"
cmp "$SRC/f" "$TESTDIR/r1/f" || fail "ds@1 does not restore after the chunk was rewritten"
# And for sync, which sends only what the far side says it has: an emptied
# chunk there is not "had", so it is sent again.
ok cairn sync ds "$B:ds"
: >"$(chunkfile "$B" "$h")"
ok cairn create -o source="$SRC" ds1b
ok cairn snapshot ds1b@1
ok cairn sync ds1b "$B:ds1b"
[ -s "$(chunkfile "$B" "$h")" ] || fail "sync relied on the emptied chunk $h on the far side"
ok cb restore ds1b@1 "$TESTDIR/r1c"
cmp "$SRC/f" "$TESTDIR/r1c/f" || fail "the synced ds1b@1 does not restore"
# The same for an incremental backup that reuses the chunk of an
# unchanged file: the emptied chunk is read again, not reused.
: >"$(chunkfile "$CAIRN_STORE" "$h")"
ok cairn snapshot ds@2
[ -s "$(chunkfile "$CAIRN_STORE" "$h")" ] || fail "an incremental backup reused the emptied chunk $h"
ok cairn restore ds@2 "$TESTDIR/r1b"
cmp "$SRC/f" "$TESTDIR/r1b/f" || fail "ds@2 does not restore"

# 2. Batches of one chunk, published in the background: the step that
#    meets the failure (a later put, the tree, the index or the final
#    flush) still names the chunk at fault.  The chunks the backup makes
#    are learnt from the same backup into a scratch store, then every one
#    of them is blocked in B.
SRC2=$TESTDIR/src2
mkdir -p "$SRC2/d"
for i in $(seq 1 300); do head -c $((i * 97)) /dev/urandom >"$SRC2/d/f$i"; done
head -c 3000000 /dev/urandom >"$SRC2/large"
C=$TESTDIR/c
for s in "$C" "$B"; do
	"$CAIRN" -s "$s" init >/dev/null 2>&1
	ok "$CAIRN" -s "$s" config sync_batch_chunks=1 >/dev/null
	ok "$CAIRN" -s "$s" create -o source="$SRC2" ds2
done
ok "$CAIRN" -s "$C" snapshot ds2@1
made=$(ls "$C"/.chunks/*/ | grep -x "$HEX")
[ "$(echo "$made" | wc -l)" -gt 4 ] || fail "too few chunks to fail in the background: $made"
for h in $made; do block "$B" "$h"; done
err=$(cb snapshot ds2@1 2>&1)
[ $? -ne 0 ] || fail "snapshot over blocked chunks succeeded"
named=$(echo "$err" | sed -n "s/.*publishing chunk \($HEX\): Is a directory.*/\1/p")
echo "$made" | grep -qx "${named:-none}" || fail "background batch failure does not name the chunk: $err"
snapshots "$B" | grep -q "^ds2@" && fail "ds2 got a snapshot over a failed batch"
for h in $made; do unblock "$B" "$h"; done
ok cb snapshot ds2@1
ok cb restore ds2@1 "$TESTDIR/r2"
same_tree "$SRC2" "$TESTDIR/r2"
cb destroy ds2@1 >/dev/null || fail "destroy ds2@1"

# 3. A receive's resume point: more than 1024 chunks, every one blocked
#    on the receiver, so the first flush is the one at the resume point.
ok cairn config chunk_size=65536 >/dev/null
B=$TESTDIR/b3 # a fresh receiver: no chunk of this store is there yet
ok "$CAIRN" -s "$B" init >/dev/null
BIG=$TESTDIR/big
mkdir -p "$BIG"
head -c 90000000 /dev/urandom >"$BIG/data"
ok cairn create -o source="$BIG" bigds
ok cairn snapshot bigds@1
cairn send bigds@1 >"$TESTDIR/s" || fail "send"
n=0
for f in "$CAIRN_STORE"/.chunks/*/*; do
	block "$B" "${f##*/}"
	n=$((n + 1))
done
[ $n -gt 1100 ] || fail "only $n chunks: no resume point inside the stream"
fails_with 1 "saving the resume point: chunk store: publishing chunk $HEX: Is a directory" \
	cb recv -s bk <"$TESTDIR/s"
[ -z "$(snapshots "$B")" ] || fail "the receiver committed a snapshot"
for f in "$CAIRN_STORE"/.chunks/*/*; do unblock "$B" "${f##*/}"; done
ok cb recv -s bk <"$TESTDIR/s"
ok cb restore bk@1 "$TESTDIR/r3"
cmp "$BIG/data" "$TESTDIR/r3/data" || fail "received content differs after the retry"
done_test
