#!/bin/bash
# bookmark from a snapshot and from a bookmark, -r, list -t bookmark and
# -t all order, destroy ds#bm, the refusals, and a bookmark outliving its
# snapshot with the snapshot's identity and chunk index.
. "$(dirname "$0")/lib.sh"
new_store
DB=$CAIRN_STORE/catalog.db
SRC=$TESTDIR/src
mkdir -p "$SRC/a" "$SRC/b"
echo top >"$SRC/f"; echo a >"$SRC/a/f"; echo b >"$SRC/b/f"
ok cairn create -o source="$SRC" tank
ok cairn create tank/a
ok cairn create tank/b
ok cairn snapshot -r tank@s1
echo more >>"$SRC/f"
ok cairn snapshot -r tank@s2
ok cairn snapshot tank@s3 tank/a@s3   # not in tank/b

txg() { sqlite3 "$DB" "SELECT value FROM meta WHERE key='txg'"; }
ident() { cairn list -H -p -o guid,createtxg,creation "$1"; }
state() {
	cairn list -t all -H -p -o name,guid,createtxg
	sqlite3 "$DB" "SELECT dataset, name, guid, createtxg, length(idx) FROM bookmark ORDER BY 1, 2;
		       SELECT value FROM meta WHERE key='txg'"
}
refused() {
	local before after
	before=$(state)
	fails_with "$@"
	after=$(state)
	[ "$before" = "$after" ] || {
		fail "refused command changed the store: ${*:3}"
		diff <(echo "$before") <(echo "$after") | head -5 >&2
	}
}
# same_index BM SNAP: the bookmark kept the snapshot's chunk index
same_index() {
	local r
	r=$(sqlite3 "$DB" "SELECT b.idx = d.idx FROM bookmark b, snapshot s, snapdata d, dataset bd, dataset sd
		WHERE bd.id = b.dataset AND bd.name || '#' || b.name = '$1'
		AND sd.id = s.dataset AND sd.name || '@' || s.name = '$2' AND d.snapshot = s.id")
	[ "$r" = 1 ] || fail "$1 does not carry the chunk index of $2 ($r)"
}

# ---- from a snapshot; from a bookmark; the short forms ----
t0=$(txg)
ok cairn bookmark tank@s1 tank#b1
[ "$(txg)" = $((t0 + 1)) ] || fail "bookmark is not one transaction"
[ "$(ident tank#b1)" = "$(ident tank@s1)" ] || fail "b1 identity $(ident tank#b1) vs $(ident tank@s1)"
same_index tank#b1 tank@s1
ok cairn bookmark tank#b1 tank#b2
[ "$(ident tank#b2)" = "$(ident tank@s1)" ] || fail "bookmark of a bookmark has another identity"
same_index tank#b2 tank@s1
ok cairn bookmark tank@s2 b3
ok cairn bookmark tank@s2 '#b4'
[ "$(ident tank#b3)" = "$(ident tank@s2)" ] && [ "$(ident tank#b4)" = "$(ident tank@s2)" ] ||
	fail "short bookmark names"
ok cairn bookmark tank/a@s2 tank/a#a2
[ "$(cairn list -H -o type tank#b1)" = bookmark ] || fail "type of a bookmark"

# ---- listing ----
out=$(cairn list -t bookmark -H -o name)
[ "$out" = "tank#b1
tank#b2
tank#b3
tank#b4
tank/a#a2" ] || fail "list -t bookmark: $out"
# datasets, then each one's snapshots by createtxg, then its bookmarks
out=$(cairn list -t all -H -o name)
[ "$out" = "tank
tank@s1
tank@s2
tank@s3
tank#b1
tank#b2
tank#b3
tank#b4
tank/a
tank/a@s1
tank/a@s2
tank/a@s3
tank/a#a2
tank/b
tank/b@s1
tank/b@s2" ] || fail "list -t all order: $out"
[ "$(cairn list -t all -H -o name -r tank/a)" = "tank/a
tank/a@s1
tank/a@s2
tank/a@s3
tank/a#a2" ] || fail "list -t all -r tank/a: $(cairn list -t all -H -o name -r tank/a)"
[ "$(cairn list -H -o name tank#b3)" = "tank#b3" ] || fail "list of one bookmark"
fails_with 1 "tank#nosuch.*does not exist" cairn list tank#nosuch
# like list -t snapshot DATASET (its snapshots), list -t bookmark DATASET
# lists that dataset's bookmarks
[ "$(cairn list -t snapshot -H -o name tank/a)" = "tank/a@s1
tank/a@s2
tank/a@s3" ] || fail "list -t snapshot tank/a: $(cairn list -t snapshot -H -o name tank/a)"
[ "$(cairn list -t bookmark -H -o name tank/a)" = "tank/a#a2" ] ||
	fail "list -t bookmark tank/a lists '$(cairn list -t bookmark -H -o name tank/a)', not tank/a#a2"

# ---- -r ----
t0=$(txg)
ok cairn bookmark -r tank@s1 rb
for d in tank tank/a tank/b; do
	[ "$(ident "$d#rb")" = "$(ident "$d@s1")" ] || fail "bookmark -r: $d#rb"
done
[ "$(txg)" = $((t0 + 1)) ] || fail "bookmark -r of 3 took $(($(txg) - t0)) transactions"
ok cairn bookmark -r tank@s3 'tank#r3'   # tank/b has no s3: skipped
[ "$(cairn list -t bookmark -H -o name | grep -c '#r3$')" = 2 ] || fail "bookmark -r over a partial name"
cairn list -H tank/b#r3 >/dev/null 2>&1 && fail "bookmark -r made tank/b#r3 without tank/b@s3"
# one of them exists already: nothing is created
ok cairn bookmark tank/b@s2 tank/b#rb2
refused 1 "tank/b#rb2.*already exists" cairn bookmark -r tank@s1 rb2
for d in tank tank/a; do
	cairn list -H "$d#rb2" >/dev/null 2>&1 && fail "bookmark -r left $d#rb2 behind after failing"
done
refused 1 "tank@nosuch" cairn bookmark -r tank@nosuch rx
refused 1 "must be in its snapshot's dataset\|tank/a#rx" cairn bookmark -r tank@s1 tank/a#rx

# ---- refusals ----
refused 1 "tank#b1.*already exists" cairn bookmark tank@s2 tank#b1
refused 1 "tank#b1.*already exists" cairn bookmark tank#b3 b1
refused 1 "invalid character ' '" cairn bookmark tank@s1 'tank#b a'
refused 1 "invalid character '@'" cairn bookmark tank@s1 'tank#b@c'
refused 1 "empty" cairn bookmark tank@s1 'tank#'
refused 1 "at most 255" cairn bookmark tank@s1 "tank#$(printf 'b%.0s' $(seq 260))"
refused 1 "tank/a#x.*must be in its snapshot's dataset" cairn bookmark tank@s1 tank/a#x
refused 1 "tanq#x.*must be in its snapshot's dataset" cairn bookmark tank@s1 tanq#x
refused 1 "tank/a#y.*must be in its snapshot's dataset" cairn bookmark tank#b1 tank/a#y
refused 1 "tank@nosuch.*snapshot does not exist" cairn bookmark tank@nosuch tank#x
refused 1 "tank#nosuch.*bookmark does not exist" cairn bookmark tank#nosuch tank#x
refused 1 "nosuch.*does not exist" cairn bookmark nosuch@s1 nosuch#x
refused 1 "tank.*not a snapshot or bookmark" cairn bookmark tank tank#x
refused 2 "usage" cairn bookmark tank@s1
refused 2 "usage" cairn bookmark tank@s1 tank#x tank#y
refused 2 "usage" cairn bookmark -x tank@s1 tank#x

# ---- destroy ds#bm ----
t0=$(txg)
ok cairn destroy tank#b2
[ "$(txg)" = $((t0 + 1)) ] || fail "destroy of a bookmark is not one transaction"
cairn list -H tank#b2 >/dev/null 2>&1 && fail "destroyed bookmark still listed"
cairn list -H tank#b1 >/dev/null || fail "destroy tank#b2 took tank#b1"
cairn list -H -t snapshot tank@s1 >/dev/null || fail "destroy of a bookmark took its snapshot"
refused 1 "tank#b2.*does not exist" cairn destroy tank#b2
refused 1 "nosuch.*does not exist" cairn destroy nosuch#b
ok cairn destroy -v tank#b4 >"$TESTDIR/out"
grep -q "destroy tank#b4" "$TESTDIR/out" || fail "destroy -v of a bookmark: $(cat "$TESTDIR/out")"

# ---- a bookmark outlives its snapshot ----
id1=$(ident tank@s1)
ok cairn destroy tank@s1
cairn list -H -t snapshot tank@s1 >/dev/null 2>&1 && fail "tank@s1 not destroyed"
[ "$(ident tank#b1)" = "$id1" ] || fail "bookmark changed when its snapshot went: $(ident tank#b1)"
[ "$(ident tank#rb)" = "$id1" ] || fail "tank#rb changed when its snapshot went"
# and is still a source for new bookmarks
ok cairn bookmark tank#b1 tank#b5
[ "$(ident tank#b5)" = "$id1" ] || fail "bookmark from an orphan bookmark"
# a snapshot named like a bookmark is a different object
ok cairn bookmark tank@s2 tank#s2
ok cairn destroy tank@s2
cairn list -H tank#s2 >/dev/null || fail "destroy tank@s2 took tank#s2"
# destroying a dataset takes its bookmarks
aid=$(sqlite3 "$DB" "SELECT id FROM dataset WHERE name='tank/a'")
ok cairn destroy -r tank/a
[ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM bookmark WHERE dataset=$aid")" = 0 ] ||
	fail "destroy -r tank/a left its bookmarks"
[ "$(cairn list -t bookmark -H -o name | grep -c '^tank/a#')" = 0 ] || fail "tank/a bookmarks listed"
done_test
