#!/bin/bash
# gc -n over several ranges of directories (CAIRN_TEST_RANGE_BUDGET makes a
# small store need several; a real one does past 65,536 referenced chunks).
# Every source is walked once per range, but a damaged index stream is
# warned about once and counted once, and the summary of a dry run says
# nothing was removed, not that "the rest was collected".
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
for i in 1 2 3 4; do head -c 400000 /dev/urandom >"$SRC/f$i.bin"; done
ok cairn create -o source="$SRC" -o chunksize=64K -o compression=off tank
ok cairn snapshot tank@one
ok cairn config gc_atime_cutoff=0

# Damage the index stream's root chunk: the tree is walked instead.
idxc=$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT hex(substr(idx, 1, 32)) FROM snapdata d JOIN snapshot s ON s.id = d.snapshot WHERE s.name = 'one'" | tr A-F a-f)
ipath="$CAIRN_STORE/.chunks/${idxc:0:4}/$idxc"
[ -f "$ipath" ] || fail "index chunk $idxc not found"
size=$(stat -c %s "$ipath")
b=$(od -An -tu1 -j $((size - 3)) -N1 "$ipath" | tr -d ' ')
printf "\\x$(printf %02x $((b ^ 255)))" | dd of="$ipath" bs=1 seek=$((size - 3)) conv=notrunc status=none

out=$(CAIRN_TEST_RANGE_BUDGET=4 "$CAIRN" gc -n 2>&1)
rc=$?
[ $rc = 1 ] || fail "gc -n with a damaged index: exit $rc: $out"
n=$(echo "$out" | grep -c "tank@one: index stream")
[ "$n" = 1 ] || fail "index stream warned about $n times, not once: $out"
echo "$out" | grep -q "^cairn: gc: 1 index streams could not be read" ||
	fail "damaged count not 1: $out"
echo "$out" | grep -q "the rest was collected" && fail "dry run says the rest was collected: $out"
echo "$out" | grep -q "index streams could not be read.*dry run: nothing was removed" ||
	fail "dry run summary: $out"
# The real run still says it collected.
out=$("$CAIRN" gc 2>&1)
echo "$out" | grep -q "1 index streams could not be read.*the rest was collected" ||
	fail "real run summary: $out"
ok cairn restore tank@one "$TESTDIR/r"
cmp -s "$SRC/f3.bin" "$TESTDIR/r/f3.bin" || fail "restore after gc"
done_test
