#!/bin/bash
# verify: every chunk of the targets is re-read and checked.  A flipped
# bit, a truncated file, a file holding another chunk's data (wrong name)
# and a directory where a chunk should be are each reported with the
# chunk's path, the snapshot and the file that use it; damaged chunks are
# renamed <digest>.bad, verify exits 1, and lastverified is set only on
# the snapshots that verified clean.  GC then reports the missing chunk
# (exit 1) but still sweeps; its dry run reports them the same way.  A later backup of the same data writes the
# chunk anew, after which the old snapshot verifies and restores again.
# A damaged index stream chunk: verify and GC fall back to the tree.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/sub"
head -c 1500000 /dev/urandom >"$SRC/big.bin"
head -c 900000 /dev/urandom >"$SRC/other.bin"
head -c 700000 /dev/urandom >"$SRC/sub/third.bin"
echo small >"$SRC/small.txt"
ok cairn create -o source="$SRC" -o chunksize=64K -o compression=off tank
ok cairn create tank/sub
ok cairn snapshot -r tank@one
cp -a "$SRC" "$TESTDIR/orig"

lastv() { cairn list -H -p -o lastverified -t snapshot "$1"; }
[ "$(lastv tank@one)" = 0 ] || [ "$(lastv tank@one)" = - ] || fail "lastverified before any verify: $(lastv tank@one)"
out=$(cairn verify -v 2>&1) || fail "clean verify: $out"
echo "$out" | grep -q 'verified [0-9]* chunks .*: 0 bad' || fail "verify -v summary: $out"
v1=$(lastv tank@one)
[ "$v1" -gt 1000000000 ] 2>/dev/null || fail "lastverified not set: $v1"
cairn list -H -o name,lastverified -t snapshot | grep -q '^tank@one	[A-Z]' || fail "list -o lastverified"

# chunk_of FILE: a chunk holding FILE's first bytes (compression is off,
# so the blob payload starts with the plain data after a 24-byte header).
chunk_of() {
	local f=$1 want
	want=$(head -c 64 "$f" | od -An -tx1 | tr -d ' \n')
	for c in $(find "$CAIRN_STORE/.chunks" -type f -size +4k); do
		[ "$(tail -c +25 "$c" | head -c 64 | od -An -tx1 | tr -d ' \n')" = "$want" ] && { echo "$c"; return; }
	done
}
# flipbyte FILE OFFSET: inverts one byte in place.
flipbyte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\x$(printf %02x $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
flip=$(chunk_of "$SRC/big.bin")
trunc=$(chunk_of "$SRC/other.bin")
wrong=$(chunk_of "$SRC/sub/third.bin")
[ -n "$flip" ] && [ -n "$trunc" ] && [ -n "$wrong" ] || fail "chunks not found"
flipbyte "$flip" 5000
truncate -s 1000 "$trunc"
cp "$flip" "$wrong.tmpcopy" && mv "$wrong.tmpcopy" "$wrong" # another chunk's bytes
sleep 1
out=$("$CAIRN" verify 2>&1)
rc=$?
[ $rc = 1 ] || fail "verify of damaged chunks: exit $rc"
for c in "$flip" "$trunc" "$wrong"; do
	h=$(basename "$c")
	echo "$out" | grep -q "chunk $h (snapshot tank" || fail "chunk $h not reported: $out"
	echo "$out" | grep "chunk $h" | grep -q "$c" || fail "path of $h not given: $out"
	[ -e "$c" ] && fail "$h not renamed"
	[ -e "$c.bad" ] || fail "$h.bad missing"
done
echo "$out" | grep "$(basename "$flip")" | grep -q "snapshot tank@one, file big.bin" || fail "file not named: $out"
echo "$out" | grep "$(basename "$wrong")" | grep -q "snapshot tank/sub@one, file third.bin" || fail "child file: $out"
[ "$(lastv tank@one)" = "$v1" ] || fail "lastverified moved on a damaged snapshot"

# GC: the referenced chunks are missing now: reported, exit 1, sweep ran.
ok cairn config gc_atime_cutoff=0
# The dry run finds them too, as the real run will (it said nothing and
# exited 0), and still removes nothing.
out=$("$CAIRN" gc -n -j 2>&1)
rc=$?
[ $rc = 1 ] || fail "gc -n with missing chunks: exit $rc"
echo "$out" | grep -q "chunk $(basename "$flip") .*needed by tank@one" || fail "gc -n missing warning: $out"
echo "$out" | grep -q '"missing":3,' || fail "gc -n missing count: $out"
echo "$out" | grep -q 'dry run: nothing was removed' || fail "gc -n missing summary: $out"
out=$("$CAIRN" gc -v 2>&1)
rc=$?
[ $rc = 1 ] || fail "gc with missing chunks: exit $rc"
echo "$out" | grep -q "chunk $(basename "$flip") .*needed by tank@one" || fail "gc missing warning: $out"
echo "$out" | grep -q 'MISSING  *3 ' || fail "gc missing count: $out"
echo "$out" | grep -q '^sweep ' || fail "sweep did not run: $out"
[ -e "$flip.bad" ] || fail "gc removed a .bad file"

# A new backup of the same data heals: the missing chunks are written anew.
ok cairn snapshot -r tank@two
for c in "$flip" "$trunc" "$wrong"; do
	[ -f "$c" ] || fail "$(basename "$c") not written anew"
done
ok cairn verify tank@one
ok cairn verify -r tank
ok cairn restore tank@one "$TESTDIR/r1"
cmp -s "$TESTDIR/orig/big.bin" "$TESTDIR/r1/big.bin" || fail "healed restore"
[ "$(lastv tank@one)" -ge "$v1" ] || fail "lastverified after heal"
ok cairn gc

# A directory where a chunk should be: reported, never a crash.
dirc=$(chunk_of "$SRC/other.bin")
rm -f "$dirc" && mkdir "$dirc"
out=$("$CAIRN" verify tank 2>&1) && fail "verify with a directory for a chunk"
echo "$out" | grep -q "chunk $(basename "$dirc")" || fail "directory chunk not reported: $out"
rm -rf "$dirc.bad" "$dirc"
ok cairn snapshot tank@three # heals it

# A damaged index stream chunk: the tree still lists the snapshot's chunks.
idxc=$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT hex(substr(idx, 1, 32)) FROM snapdata d JOIN snapshot s ON s.id = d.snapshot WHERE s.name = 'three'" | tr A-F a-f)
ipath="$CAIRN_STORE/.chunks/${idxc:0:4}/$idxc"
[ -f "$ipath" ] || fail "index chunk $idxc not found"
size=$(stat -c %s "$ipath")
flipbyte "$ipath" $((size - 3))
out=$("$CAIRN" verify --order digest tank@three 2>&1) && fail "verify with a damaged index"
echo "$out" | grep -q "chunk $idxc (snapshot tank@three, index stream)" || fail "index chunk report: $out"
# GC: the index is unreadable, the tree is not: nothing of tank@three goes.
out=$("$CAIRN" gc -v 2>&1)
echo "$out" | grep -q "tank@three: index stream" || fail "gc index warning: $out"
ok cairn restore tank@three "$TESTDIR/r3"
cmp -s "$SRC/big.bin" "$TESTDIR/r3/big.bin" || fail "restore after index damage + gc"

# Targets.
fails_with 1 "does not exist" "$CAIRN" verify tank@nosuch
fails_with 1 "does not exist" "$CAIRN" verify nosuch
fails_with 2 "invalid order" "$CAIRN" verify --order none
# A bookmark holds no chunks: said plainly, naming it (not "invalid '#'").
ok cairn bookmark tank@one tank#bm
fails_with 1 "tank#bm: is a bookmark, which holds no data to verify" "$CAIRN" verify tank#bm
fails_with 1 "tank#bm: is a bookmark" "$CAIRN" verify tank@one tank#bm
ok cairn verify tank/sub
ok cairn verify -r tank/sub@one
done_test
