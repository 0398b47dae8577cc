#!/bin/bash
# Damaged or missing index chunks stop neither a backup nor a destroy, as
# in zfs, which needs no data for either: they are read only for the space
# figures (used, written, what a destroy frees).  The command warns, naming
# the snapshot and the chunk, and goes ahead; gc then reclaims everything.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src"
for i in 1 2 3; do
	head -c 300000 /dev/urandom >"$TESTDIR/src/f$i"
done
ok cairn create -o source="$TESTDIR/src" tank
for s in 1 2 3 4 5; do
	head -c 200000 /dev/urandom >"$TESTDIR/src/g$s"
	ok cairn snapshot tank@$s >/dev/null
done
written() { "$CAIRN" list -Hp -o written "$1"; }
used() { "$CAIRN" list -Hp -o used "$1"; }
gone() { "$CAIRN" list -H -o name "$1" >/dev/null 2>&1 && fail "$1 still exists after destroy"; }
chunk_hex='[0-9a-f]\{64\}'

# Damage every chunk file in the middle: index chunks included.
n=0
while IFS= read -r -d '' f; do
	sz=$(stat -c %s "$f")
	printf 'XXXXXXXX' | dd of="$f" bs=1 seek=$((sz / 2)) conv=notrunc status=none
	n=$((n + 1))
done < <(find "$CAIRN_STORE/.chunks" -type f -print0)
[ "$n" -ge 5 ] || fail "only $n chunk files to damage"

# A backup goes ahead: the new snapshot's written counts all it references.
head -c 100000 /dev/urandom >"$TESTDIR/src/h"
used5=$(used tank@5)
err=$("$CAIRN" snapshot tank@6 2>&1); rc=$?
[ $rc = 0 ] || fail "snapshot after a damaged one exit $rc: $err"
echo "$err" | grep -q "tank@6: space accounting: index chunk $chunk_hex: data is corrupt (skipped)" ||
	fail "snapshot did not name the snapshot, chunk and reason: $err"
[ "$(written tank@6)" = "$("$CAIRN" list -Hp -o referenced tank@6)" ] ||
	fail "tank@6 written $(written tank@6), not all it references"
[ "$(used tank@5)" = "$used5" ] || fail "tank@5 used changed from $used5 to $(used tank@5)"

# A dry run reports, warns and keeps the snapshot.
out=$("$CAIRN" destroy -nv tank@2 2>"$TESTDIR/err"); rc=$?
[ $rc = 0 ] || fail "destroy -n of a damaged snapshot exit $rc: $(cat "$TESTDIR/err")"
echo "$out" | grep -q "would destroy tank@2" || fail "dry run did not list tank@2: $out"
grep -q "tank@2: space accounting: index chunk $chunk_hex: data is corrupt" "$TESTDIR/err" ||
	fail "dry run did not warn: $(cat "$TESTDIR/err")"
ok cairn list -H -o name tank@2 >/dev/null

# One snapshot in the middle: it goes, the neighbours keep their figures.
w3=$(written tank@3) u1=$(used tank@1)
err=$("$CAIRN" destroy tank@2 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy of a damaged snapshot exit $rc: $err"
echo "$err" | grep -q "tank@2: space accounting: index chunk $chunk_hex: data is corrupt (skipped)" ||
	fail "destroy did not name the snapshot, chunk and reason: $err"
echo "$err" | grep -q "tank@3: space accounting" || fail "no warning for neighbour tank@3: $err"
gone tank@2
[ "$(written tank@3)" = "$w3" ] || fail "tank@3 written changed from $w3 to $(written tank@3)"
[ "$(used tank@1)" = "$u1" ] || fail "tank@1 used changed from $u1 to $(used tank@1)"

# verify sees the damage and moves the damaged chunks aside (.bad); to
# destroy they are missing now, and a range still goes.
"$CAIRN" verify >/dev/null 2>&1 && fail "verify passed over $n damaged chunks"
err=$("$CAIRN" destroy tank@3%4 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy of a range with missing chunks exit $rc: $err"
echo "$err" | grep -q "tank@3: space accounting: index chunk $chunk_hex: No such file" ||
	fail "destroy of a range did not warn: $err"
gone tank@3
gone tank@4

# The last snapshots and the dataset go too.
err=$("$CAIRN" destroy -r tank 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy -r of a dataset with missing chunks exit $rc: $err"
echo "$err" | grep -q "tank@[156]: space accounting" || fail "no warning for missing chunks: $err"
left=$("$CAIRN" list -H -o name -t all 2>/dev/null)
[ -z "$left" ] || fail "left after destroy -r: $left"

# Nothing references the chunks now: gc collects every one but the
# damaged ones verify set aside.
ok cairn config gc_atime_cutoff=0
ok cairn gc >/dev/null
left=$(find "$CAIRN_STORE/.chunks" -type f ! -name '*.bad' | wc -l)
[ "$left" = 0 ] || fail "gc left $left chunk files"
[ "$(find "$CAIRN_STORE/.chunks" -type f -name '*.bad' | wc -l)" -ge 1 ] ||
	fail "verify set no damaged chunk aside"
done_test
