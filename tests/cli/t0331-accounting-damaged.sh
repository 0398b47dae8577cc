#!/bin/bash
# Damaged or missing index chunks stop neither a backup nor a destroy, as
# in zfs, which needs no data for either: they are read only for the space
# figures (used, written, what a destroy frees).  The command warns, naming
# whose figures it skipped, whose index it could not read and the chunk,
# and goes ahead; every figure it could compute is still updated.  Other
# errors (here a malformed index list in the catalog) still fail it.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src"
for i in 1 2 3; do
	head -c 300000 /dev/urandom >"$TESTDIR/src/f$i"
done
ok cairn create -o source="$TESTDIR/src" tank
for s in 1 2 3 4 5; do
	head -c 200000 /dev/urandom >"$TESTDIR/src/g$s"
	past_racy_tick
	ok cairn snapshot tank@$s >/dev/null
done
written() { "$CAIRN" list -Hp -o written "$1"; }
used() { "$CAIRN" list -Hp -o used "$1"; }
gone() { "$CAIRN" list -H -o name "$1" >/dev/null 2>&1 && fail "$1 still exists after destroy"; }
sql() { sqlite3 "$CAIRN_STORE/catalog.db" "$@"; }
chunk_hex='[0-9a-f]\{64\}'

# 1. Only tank@1's index is damaged.  Destroying tank@3 counts what it
# frees, recomputes tank@4 (its neighbours tank@2 and tank@5 are sound) and
# skips only tank@2, whose used needs tank@1's index.
idx1=$(sql "SELECT lower(hex(substr(d.idx, 1, 32))) FROM snapdata d JOIN snapshot s
	ON s.id = d.snapshot WHERE s.name = '1'")
f1=$CAIRN_STORE/.chunks/${idx1:0:4}/$idx1
[ -f "$f1" ] || fail "tank@1's index chunk $f1 not found"
printf 'XXXXXXXX' | dd of="$f1" bs=1 seek=$(($(stat -c %s "$f1") / 2)) conv=notrunc status=none
w4=$(written tank@4) u2=$(used tank@2)
out=$("$CAIRN" destroy -v tank@3 2>"$TESTDIR/err"); rc=$?
[ $rc = 0 ] || fail "destroy next to a damaged index exit $rc: $(cat "$TESTDIR/err")"
grep -q "space accounting of tank@2: index of tank@1, chunk $idx1: data is corrupt (skipped)" \
	"$TESTDIR/err" || fail "warning does not name tank@2, tank@1 and the chunk: $(cat "$TESTDIR/err")"
[ "$(wc -l <"$TESTDIR/err")" = 1 ] || fail "more than tank@2 skipped: $(cat "$TESTDIR/err")"
echo "$out" | grep -q "will reclaim" || fail "no reclaim figure: $out"
gone tank@3
[ "$(used tank@2)" = "$u2" ] || fail "tank@2 used changed from $u2 to $(used tank@2)"
[ "$(written tank@4)" != "$w4" ] || fail "tank@4 written not recomputed ($w4): it needs no damaged index"

# 2. Not a chunk: a malformed index list in the catalog fails the destroy,
# which changes nothing.
idx5=$(sql "SELECT hex(d.idx) FROM snapdata d JOIN snapshot s ON s.id = d.snapshot WHERE s.name = '5'")
sql "UPDATE snapdata SET idx = x'00' WHERE snapshot = (SELECT id FROM snapshot WHERE name = '5')"
"$CAIRN" destroy tank@4 >/dev/null 2>&1 && fail "destroy went ahead over a malformed catalog row"
ok cairn list -H -o name tank@4 >/dev/null
sql "UPDATE snapdata SET idx = x'$idx5' WHERE snapshot = (SELECT id FROM snapshot WHERE name = '5')"

# 3. Every chunk damaged, index chunks included.
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
echo "$err" | grep -q "space accounting of tank@6: index of tank@5, chunk $chunk_hex: data is corrupt (skipped)" ||
	fail "snapshot did not name the snapshots, the chunk and the reason: $err"
[ "$(written tank@6)" = "$("$CAIRN" list -Hp -o referenced tank@6)" ] ||
	fail "tank@6 written $(written tank@6), not all it references"
[ "$(used tank@5)" = "$used5" ] || fail "tank@5 used changed from $used5 to $(used tank@5)"

# A dry run reports, warns and keeps the snapshot.
out=$("$CAIRN" destroy -nv tank@2 2>"$TESTDIR/err"); rc=$?
[ $rc = 0 ] || fail "destroy -n of a damaged snapshot exit $rc: $(cat "$TESTDIR/err")"
echo "$out" | grep -q "would destroy tank@2" || fail "dry run did not list tank@2: $out"
grep -q "space accounting of tank@2: index of tank@2, chunk $chunk_hex: data is corrupt" "$TESTDIR/err" ||
	fail "dry run did not warn: $(cat "$TESTDIR/err")"
ok cairn list -H -o name tank@2 >/dev/null

# One snapshot in the middle: it goes, the neighbours keep their figures.
w4=$(written tank@4) u1=$(used tank@1)
err=$("$CAIRN" destroy tank@2 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy of a damaged snapshot exit $rc: $err"
echo "$err" | grep -q "space accounting of tank@2: index of tank@2, chunk $chunk_hex: data is corrupt (skipped)" ||
	fail "destroy did not name the snapshot, chunk and reason: $err"
echo "$err" | grep -q "space accounting of tank@4: index of tank@4" || fail "no warning for neighbour tank@4: $err"
gone tank@2
[ "$(written tank@4)" = "$w4" ] || fail "tank@4 written changed from $w4 to $(written tank@4)"
[ "$(used tank@1)" = "$u1" ] || fail "tank@1 used changed from $u1 to $(used tank@1)"

# verify sees the damage and moves the damaged chunks aside (.bad); to
# destroy they are missing now, and a range still goes.
"$CAIRN" verify >/dev/null 2>&1 && fail "verify passed over $n damaged chunks"
err=$("$CAIRN" destroy tank@4%5 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy of a range with missing chunks exit $rc: $err"
echo "$err" | grep -q "space accounting of tank@4: index of tank@4, chunk $chunk_hex: No such file" ||
	fail "destroy of a range did not warn: $err"
gone tank@4
gone tank@5

# The last snapshots and the dataset go too.
err=$("$CAIRN" destroy -r tank 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy -r of a dataset with missing chunks exit $rc: $err"
echo "$err" | grep -q "space accounting of tank@[16]" || fail "no warning for missing chunks: $err"
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
