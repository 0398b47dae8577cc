#!/bin/bash
# The other verbs that destroy or add snapshots warn about the space
# figures a damaged index chunk left uncounted, as destroy and snapshot do
# (t0331): release of a deferred destroy, rollback -r, prune, and a receive
# whose new snapshot follows one with a damaged index.  Each goes ahead and
# exits 0; the warning names whose figures were skipped, whose index could
# not be read, the chunk and the reason.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src"
head -c 300000 /dev/urandom >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" other
for s in 1 2 3 4 5; do
	head -c 200000 /dev/urandom >"$TESTDIR/src/g$s"
	ok cairn snapshot other@$s >/dev/null
done
sql() { sqlite3 "$1/catalog.db" "$2"; }
gone() { "$CAIRN" list -H -o name "$1" >/dev/null 2>&1 && fail "$1 still exists"; }
# damage STORE SNAP: garbles the first index chunk of SNAP; prints its id.
damage() {
	local idx f
	idx=$(sql "$1" "SELECT lower(hex(substr(d.idx, 1, 32))) FROM snapdata d JOIN snapshot s
		ON s.id = d.snapshot WHERE s.name = '$2'")
	f=$1/.chunks/${idx:0:4}/$idx
	[ -f "$f" ] || fail "index chunk $f of @$2 not found"
	printf 'XXXXXXXX' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") / 2)) conv=notrunc status=none
	echo "$idx"
}
# warned WHAT OUT RC WHO WHOSE CHUNK: WHAT exited 0 and warned as described.
warned() {
	[ "$3" = 0 ] || fail "$1 next to a damaged index exit $3: $2"
	echo "$2" | grep -q "space accounting of $4: index of $5, chunk $6: data is corrupt (skipped)" ||
		fail "$1 did not warn about $4's figures and $5's index: $2"
}
idx1=$(damage "$CAIRN_STORE" 1)

# release: the last hold of a snapshot marked for destroy goes, and so does
# the snapshot; its run needs its predecessor's (damaged) index.
ok cairn hold keep other@2
ok cairn destroy -d other@2
out=$("$CAIRN" release keep other@2 2>&1)
warned release "$out" $? other@2 other@1 "$idx1"
gone other@2

# rollback -r to the damaged snapshot destroys the later ones.
out=$("$CAIRN" rollback -r other@1 2>&1)
warned "rollback -r" "$out" $? other@3 other@1 "$idx1"
echo "$out" | grep -q "space accounting of other@1: index of other@1" ||
	fail "rollback -r did not warn about other@1's own figures: $out"
gone other@5

# prune removes the damaged snapshot itself.
ok cairn snapshot other@6 2>/dev/null
ok cairn snapshot other@7
out=$("$CAIRN" prune --keep-last 1 other 2>&1)
warned prune "$out" $? other@1 other@1 "$idx1"
gone other@1
gone other@6
ok cairn list -H -o name other@7 >/dev/null

# recv: the receiving side's copy of @a has a damaged index; @b's
# incremental receive still commits, and says @a's used was not recounted.
B=$TESTDIR/b
"$CAIRN" -s "$B" init >/dev/null || fail "init B"
ok cairn snapshot other@a
"$CAIRN" send other@a | "$CAIRN" -s "$B" recv copy || fail "full receive"
idxa=$(damage "$B" a)
echo more >"$TESTDIR/src/h"
ok cairn snapshot other@b
out=$("$CAIRN" send -i other@a other@b | "$CAIRN" -s "$B" recv copy 2>&1)
warned recv "$out" $? copy@b copy@a "$idxa"
"$CAIRN" -s "$B" list -H -o name copy@b >/dev/null || fail "copy@b not received"
done_test
