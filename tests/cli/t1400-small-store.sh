#!/bin/bash
# A small empty store: chunk directories are made on first use.  An empty
# store is under 1 MiB; directories appear as chunks land; concurrent
# writers racing on new directories and a GC sweeping over missing ones
# lose nothing; a store with all 65536 directories made in advance (older
# versions) keeps working.
. "$(dirname "$0")/lib.sh"
new_store
kib=$(du -sk "$CAIRN_STORE" | cut -f1)
[ "$kib" -lt 1024 ] || fail "empty store takes ${kib} KiB"
n=$(find "$CAIRN_STORE/.chunks" -mindepth 1 -type d | wc -l)
[ "$n" -eq 0 ] || fail "empty store has $n chunk directories"

# gc and verify on a store without any chunk directory
ok cairn gc >/dev/null
ok cairn verify >/dev/null

# Writers racing: four datasets snapshotted at once, each with its own
# files, while GC runs; every snapshot restores exactly.
for i in 1 2 3 4; do
	mkdir -p "$TESTDIR/src$i"
	for f in $(seq 40); do head -c $((RANDOM * 3 + 1)) /dev/urandom >"$TESTDIR/src$i/f$f"; done
	ok cairn create -o source="$TESTDIR/src$i" -o chunksize=64K "d$i"
done
ok cairn config gc_atime_cutoff=0
pids=()
for i in 1 2 3 4; do
	cairn snapshot "d$i@a" >/dev/null 2>&1 &
	pids+=($!)
done
cairn gc >/dev/null 2>&1 &
gcpid=$!
for p in "${pids[@]}"; do wait "$p" || fail "concurrent snapshot failed"; done
wait $gcpid || fail "gc beside writers failed"
ok cairn gc >/dev/null
for i in 1 2 3 4; do
	rm -rf "$TESTDIR/r$i"
	ok cairn restore "d$i@a" "$TESTDIR/r$i" >/dev/null
	same_tree "$TESTDIR/src$i" "$TESTDIR/r$i"
done
ok cairn verify >/dev/null
n=$(find "$CAIRN_STORE/.chunks" -mindepth 1 -type d | wc -l)
[ "$n" -gt 0 ] && [ "$n" -lt 65536 ] || fail "expected some chunk directories, got $n"
# every chunk directory mode 0700
bad=$(find "$CAIRN_STORE/.chunks" -mindepth 1 -type d ! -perm 700 | head -1)
[ -z "$bad" ] || fail "chunk directory $bad is not 0700"

# An old-layout store: all 65536 directories present before the first chunk.
OLD=$TESTDIR/old
ok "$CAIRN" -s "$OLD" init >/dev/null
(cd "$OLD/.chunks" && printf '%04x\n' $(seq 0 65535) | xargs mkdir -p -m 0700)
[ "$(find "$OLD/.chunks" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 65536 ] || fail "old layout not made"
ok "$CAIRN" -s "$OLD" create -o source="$TESTDIR/src1" d
ok "$CAIRN" -s "$OLD" snapshot d@a >/dev/null
ok "$CAIRN" -s "$OLD" config gc_atime_cutoff=0
ok "$CAIRN" -s "$OLD" destroy d@a
ok "$CAIRN" -s "$OLD" gc >/dev/null
left=$(find "$OLD/.chunks" -type f | wc -l)
[ "$left" -eq 0 ] || fail "old-layout gc left $left chunk files"
ok "$CAIRN" -s "$OLD" snapshot d@b >/dev/null
rm -rf "$TESTDIR/rold"
ok "$CAIRN" -s "$OLD" restore d@b "$TESTDIR/rold" >/dev/null
same_tree "$TESTDIR/src1" "$TESTDIR/rold"
ok "$CAIRN" -s "$OLD" verify >/dev/null
done_test
