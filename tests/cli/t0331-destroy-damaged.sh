#!/bin/bash
# A snapshot whose chunks are damaged or missing can still be destroyed, as
# in zfs: destroy reads index chunks only for its space figures, so it warns
# that they are short, names the snapshot, and goes ahead.  gc then reclaims
# everything.
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

# Damage every chunk file in the middle: index chunks included.
n=0
while IFS= read -r -d '' f; do
	sz=$(stat -c %s "$f")
	printf 'XXXXXXXX' | dd of="$f" bs=1 seek=$((sz / 2)) conv=notrunc status=none
	n=$((n + 1))
done < <(find "$CAIRN_STORE/.chunks" -type f -print0)
[ "$n" -ge 5 ] || fail "only $n chunk files to damage"
# A dry run reports, warns and keeps the snapshot.
out=$("$CAIRN" destroy -nv tank@2 2>"$TESTDIR/err"); rc=$?
[ $rc = 0 ] || fail "destroy -n of a damaged snapshot exit $rc: $(cat "$TESTDIR/err")"
echo "$out" | grep -q "would destroy tank@2" || fail "dry run did not list tank@2: $out"
grep -q "tank@2: .*not counted" "$TESTDIR/err" || fail "dry run did not warn: $(cat "$TESTDIR/err")"
ok cairn list -H -o name tank@2 >/dev/null

# One snapshot in the middle, then a range.
err=$("$CAIRN" destroy tank@2 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy of a damaged snapshot exit $rc: $err"
echo "$err" | grep -q "tank@2: data is corrupt: its space was not counted" ||
	fail "destroy did not name the snapshot and the reason: $err"

# verify sees the damage and moves the damaged chunks aside (.bad); to
# destroy they are missing now, and the range still goes.
"$CAIRN" verify >/dev/null 2>&1 && fail "verify passed over $n damaged chunks"
err=$("$CAIRN" destroy tank@3%4 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy of a range with missing chunks exit $rc: $err"
echo "$err" | grep -q "tank@3: an index chunk is missing: its space was not counted" ||
	fail "destroy of a range did not warn: $err"

# The last snapshots and the dataset go too.
err=$("$CAIRN" destroy -r tank 2>&1); rc=$?
[ $rc = 0 ] || fail "destroy -r of a dataset with missing chunks exit $rc: $err"
echo "$err" | grep -q "tank@[15]: .*not counted" || fail "no warning for missing chunks: $err"
left=$("$CAIRN" list -H -o name -t all 2>/dev/null)
[ -z "$left" ] || fail "left after destroy -r: $left"

# Nothing references the chunks now: gc collects every one but the
# damaged ones verify set aside.
ok cairn config gc_atime_cutoff=0
ok cairn gc >/dev/null
left=$(find "$CAIRN_STORE/.chunks" -type f ! -name '*.bad' | wc -l)
[ "$left" = 0 ] || fail "gc left $left chunk files"
done_test
