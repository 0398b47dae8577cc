#!/bin/bash
# A container dataset (source=none: create -p makes them, cairn-props(7)
# suggests one as a parent) has snapshots with an empty tree, and a
# receiver takes them: the usual layout, a container pool with a dataset
# per directory, replicates with snapshot -r and sync -R / send -R.  Every
# receive of such a snapshot failed with 'stream is invalid at byte N:
# snapshot tree is empty', so that layout could not be copied at all.
. "$(dirname "$0")/lib.sh"
new_store
second_store
T=$TESTDIR/src
mkdir -p "$T/a" "$T/b"
rnd "$T/a/x"
cp "$T/a/x" "$T/b/x"
ok ca create -o source=none p
ok ca create -o source="$T/a" p/a
ok ca create -o source="$T/b" p/b
ok ca create -p p/deep/c # parents made by -p are containers too
ok ca set source="$T/a" p/deep/c
ok ca snapshot -r p@1
ok cb create b

# plain send of the container alone, and -R of the tree
out=$(ca send p@1 | cb recv b/p0 2>&1) || fail "send p@1 | recv: $out"
out=$(ca send -R p@1 | cb recv b/p1 2>&1) || fail "send -R p@1 | recv: $out"
out=$(ca sync -R p "$B:b/p2" 2>&1) || fail "sync -R: $out"
[ "$(cb list -H -o name -t snapshot -r b/p2 | tr '\n' ' ')" = "b/p2@1 b/p2/a@1 b/p2/b@1 b/p2/deep@1 b/p2/deep/c@1 " ] ||
	fail "b/p2 has: $(cb list -H -o name -t snapshot -r b/p2 | tr '\n' ' ')"
# an incremental on top, and the copies restore and verify
echo more >"$T/b/y"
ok ca snapshot -r p@2
out=$(ca sync -R p "$B:b/p2" 2>&1) || fail "incremental sync -R: $out"
ok cb verify -r b/p2
ok cb restore b/p2/b@2 "$TESTDIR/r"
cmp -s "$T/b/y" "$TESTDIR/r/y" || fail "restored b/p2/b@2/y differs"
ok cb restore b/p2@2 "$TESTDIR/r0"
[ -z "$(ls -A "$TESTDIR/r0")" ] || fail "the container's snapshot restored files: $(ls -A "$TESTDIR/r0")"
# a dry run takes them as the real receive does
out=$(ca send -R p@2 | cb recv -n b/p3 2>&1) || fail "recv -n: $out"
done_test
