#!/bin/bash
# sync never picks a bookmark on the destination as the incremental
# source: a receive needs its source's data, which a bookmark does not
# have (zfs recv refuses such a stream as cairn's receiver does).  Before,
# sync counted the destination's bookmarks with its snapshots: with only a
# bookmark of the source's snapshot left there (its snapshot destroyed,
# say by a prune), every sync failed with "the stream's incremental source
# ... is not on the target", and sync -n said it would work.  A bookmark
# still tells that the destination is a copy of the source (no "none in
# common" refusal), and an unrelated one still refuses.
. "$(dirname "$0")/lib.sh"
top_and_kid
syncs() { # ARGS...: sync must succeed, and a second one find nothing to do
	local out
	out=$(ca sync -v "$@" 2>&1) || fail "sync $*: $out"
	out=$(ca sync -v "$@" 2>&1) || fail "second sync $*: $out"
	echo "$out" | grep -q "up to date" || fail "second sync $* not up to date: $out"
}

# ---- only a bookmark of the source's snapshot left there ----
ok ca create -o source="$S" p
ok ca snapshot p@1
ok ca sync p "$B:d"
ok cb bookmark d@1 'd#1'
ok cb destroy d@1
ok ca snapshot p@2
out=$(ca sync -n p "$B:d" 2>&1) || fail "sync -n: $out"
echo "$out" | grep -q "would sync p@2 (full)" || fail "sync -n did not plan a full stream: $out"
syncs p "$B:d"
[ "$(names d)" = "d d@1 d@2 d#1 " ] || fail "d after the sync: [$(names d)]"

# ---- a snapshot there, and a newer bookmark: the snapshot is the source ----
ok ca snapshot p@3
ok ca sync p "$B:d"
ok cb bookmark d@3 'd#3'
ok cb destroy d@3
ok ca snapshot p@4
out=$(ca sync -v p "$B:d" 2>&1) || fail "sync over d#3: $out"
echo "$out" | grep -q "synced p@4 @2 -> d" || fail "sync did not go from d@2: $out"
# (-I from d@2: d@3, destroyed there, comes back with d@4)
[ "$(names d)" = "d d@1 d@2 d@3 d@4 d#1 d#3 " ] || fail "d after the second sync: [$(names d)]"

# ---- -R: a child with only a bookmark there ----
ok ca create -o source="$S/k" p/k
ok ca snapshot -r p@5
ok ca sync -R p "$B:e"
ok cb bookmark e/k@5 'e/k#5'
ok cb destroy e/k@5
ok ca snapshot -r p@6
syncs -R p "$B:e"
cb list -H -o name e/k@6 >/dev/null 2>&1 || fail "e/k@6 not synced: [$(names e)]"

# ---- an unrelated bookmark alone is still refused ----
ok ca create -o source="$S" q
ok ca snapshot q@1
ok cb create -o source="$S" f
ok cb snapshot f@x
ok cb bookmark f@x 'f#x'
ok cb destroy f@x
fails_with 1 "has bookmarks (eg. f#x) but none in common with q" ca sync q "$B:f"
[ "$(names f)" = "f f#x " ] || fail "f changed by a refused sync: [$(names f)]"
done_test
