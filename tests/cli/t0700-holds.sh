#!/bin/bash
# hold / holds / release and their interplay with destroy and destroy -d:
# userrefs, -r over a hierarchy, the holds listing (-H, -p), one
# transaction per command, and every refusal changing nothing.
. "$(dirname "$0")/lib.sh"
new_store
DB=$CAIRN_STORE/catalog.db
SRC=$TESTDIR/src
mkdir -p "$SRC/a/x" "$SRC/b"
echo top >"$SRC/f"; echo a >"$SRC/a/f"; echo x >"$SRC/a/x/f"; echo b >"$SRC/b/f"
ok cairn create -o source="$SRC" tank
ok cairn create tank/a
ok cairn create tank/a/x
ok cairn create tank/b
ok cairn snapshot -r tank@s1
ok cairn snapshot -r tank@s2
ok cairn snapshot tank@s3 tank/b@s3   # not in tank/a, tank/a/x
ok cairn bookmark tank@s1 tank#bm

# Everything a refused command must leave alone: userrefs, defer_destroy,
# the objects, the hold rows, and the txg (a rolled-back command commits
# no transaction).
state() {
	cairn list -t all -H -p -o name,userrefs,defer_destroy
	sqlite3 "$DB" "SELECT snapshot, tag, pid FROM hold ORDER BY 1, 2;
		       SELECT 'txg', value FROM meta WHERE key='txg'"
}
# refused CODE PATTERN CMD...: fails as fails_with checks, and changes nothing.
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
refs() { cairn list -H -p -o userrefs "$1"; }
defer() { cairn list -H -p -o defer_destroy "$1"; }
txg() { sqlite3 "$DB" "SELECT value FROM meta WHERE key='txg'"; }
exists() { cairn list -H -o name -t snapshot "$1" >/dev/null 2>&1; }
# userrefs is the count of hold rows on every snapshot; no orphan holds.
consistent() {
	local bad
	bad=$(sqlite3 "$DB" "SELECT COUNT(*) FROM snapshot s WHERE userrefs !=
		(SELECT COUNT(*) FROM hold h WHERE h.snapshot = s.id);
		SELECT COUNT(*) FROM hold WHERE snapshot NOT IN (SELECT id FROM snapshot)")
	[ "$bad" = "0
0" ] || fail "userrefs/hold rows inconsistent ($1): $bad"
}

# ---- hold, holds, release ----
t0=$(txg)
before=$(date +%s)
ok cairn hold keep tank@s1
after=$(date +%s)
[ "$(txg)" = $((t0 + 1)) ] || fail "hold is not one transaction"
[ "$(refs tank@s1)" = 1 ] || fail "userrefs after one hold: $(refs tank@s1)"
ok cairn hold other tank@s1
[ "$(refs tank@s1)" = 2 ] || fail "userrefs after two holds"

out=$(cairn holds tank@s1)
[ "$(echo "$out" | head -1 | tr -s ' ')" = "NAME TAG TIMESTAMP" ] || fail "holds header: $out"
[ "$(echo "$out" | wc -l)" = 3 ] || fail "holds lines: $out"
# tags in order, one line each
[ "$(echo "$out" | sed 1d | awk '{print $1, $2}')" = "tank@s1 keep
tank@s1 other" ] || fail "holds rows: $out"
out=$(cairn holds -H tank@s1)
[ "$(echo "$out" | wc -l)" = 2 ] || fail "holds -H has a header: $out"
echo "$out" | awk -F'\t' 'NF != 3 { exit 1 }' || fail "holds -H is not 3 tab-separated fields: $out"
out=$(cairn holds -H -p tank@s1)
ts=$(echo "$out" | head -1 | cut -f3)
case "$ts" in '' | *[!0-9]*) fail "holds -p timestamp not a number: $ts" ;; esac
[ "$ts" -ge "$before" ] && [ "$ts" -le "$after" ] || fail "hold time $ts not in [$before, $after]"
# without -p: the local date of the same second, as zfs holds prints it
human=$(cairn holds -H tank@s1 | head -1 | cut -f3)
[ "$human" = "$(LC_ALL=C date -d "@$ts" '+%a %b %e %H:%M %Y')" ] || fail "holds date '$human' for $ts"
# several snapshots at once, in argument order
out=$(cairn holds -H tank@s1 tank/b@s1)
[ "$(echo "$out" | cut -f1,2 | tr '\t' ' ')" = "tank@s1 keep
tank@s1 other" ] || fail "holds of two snapshots: $out"
# -j: one document, snapshots by name, tags by name; --json-int numbers
out=$(cairn holds -j tank@s1 tank/b@s1) || fail "holds -j"
echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["output_version"]["command"] == "cairn holds", d
s = d["snapshots"]
assert list(s) == ["tank@s1"], s
assert sorted(s["tank@s1"]["holds"]) == ["keep", "other"], s
h = s["tank@s1"]["holds"]["keep"]
assert isinstance(h["timestamp"], str) and h["temporary"] is False, h
' || fail "holds -j document: $out"
out=$(cairn holds -j -p --json-int tank@s1) || fail "holds -j --json-int"
[ "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshots"]["tank@s1"]["holds"]["keep"]["timestamp"])')" = "$ts" ] ||
	fail "holds --json-int timestamp: $out"
fails_with 2 "needs -j" cairn holds --json-int tank@s1
out=$(cairn holds -j tank@nosuch 2>/dev/null) && fail "holds -j of a missing snapshot succeeded"
echo "$out" | python3 -c 'import json,sys; assert json.load(sys.stdin)["snapshots"] == {}' ||
	fail "holds -j of a missing snapshot: not a valid empty document: $out"
# a snapshot with no holds: header only, success
out=$(cairn holds tank@s2) || fail "holds of an unheld snapshot failed"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "unheld snapshot listed holds: $out"
# tags are free text up to 255 bytes
ok cairn hold 'my tag: 2026/11' tank@s2
cairn holds -H tank@s2 | cut -f2 | grep -qx 'my tag: 2026/11' || fail "tag with spaces/slash"
ok cairn release 'my tag: 2026/11' tank@s2
t255=$(printf 't%.0s' $(seq 255))
ok cairn hold "$t255" tank@s2
[ "$(cairn holds -H tank@s2 | cut -f2)" = "$t255" ] || fail "255-byte tag not kept"
ok cairn release "$t255" tank@s2
consistent basic

# ---- refusals of hold ----
# a tag already there: names snapshot and tag, the whole list is refused
refused 1 "tank@s1.*keep" cairn hold keep tank@s1
refused 1 "tank@s1.*keep" cairn hold keep tank@s2 tank/b@s2 tank@s1
cairn holds -H tank@s2 | grep -q . && fail "partial hold applied"
# the same snapshot twice in one command
refused 1 "tank@s2" cairn hold twice tank@s2 tank@s2
# missing snapshots and datasets: each named, nothing applied
err=$(cairn hold t tank@s2 tank@nosuch tank/b@s2 nosuch@s1 2>&1 >/dev/null)
[ $? = 1 ] || fail "hold of missing snapshots did not exit 1"
echo "$err" | grep -q "tank@nosuch" || fail "missing snapshot not named: $err"
echo "$err" | grep -q "nosuch@s1" || fail "missing dataset not named: $err"
echo "$err" | grep -q "tank@s2\|tank/b@s2" && fail "a good item was reported as failing: $err"
echo "$err" | grep -q "nothing was changed" || fail "no 'nothing was changed': $err"
[ "$(refs tank@s2)" = 0 ] && [ "$(refs tank/b@s2)" = 0 ] || fail "partial hold applied"
refused 1 "tank@nosuch" cairn hold t tank@s2 tank@nosuch
# an empty tag: a clear reason, not just "invalid name"
refused 1 "tank@s2" cairn hold '' tank@s2
refused 1 "empty" cairn hold '' tank@s2
# a tag of 256 bytes: the reason gives the limit
refused 1 "tank@s2" cairn hold "${t255}x" tank@s2
refused 1 "255" cairn hold "${t255}x" tank@s2
# holds apply to snapshots only: a bookmark or a dataset is refused as such
refused 1 "tank#bm" cairn hold t tank#bm
refused 1 "tank#bm.*snapshot" cairn hold t tank#bm
refused 1 "tank/b.*snapshot" cairn hold t tank/b
refused 1 "invalid character" cairn hold t 'tank@a b'
# usage errors exit 2
refused 2 "usage" cairn hold
refused 2 "expected a tag and at least one snapshot" cairn hold keep
refused 2 "usage" cairn hold -x keep tank@s2
refused 2 "usage" cairn holds
refused 2 "usage" cairn release keep
refused 1 "tank@nosuch.*does not exist" cairn holds tank@nosuch
consistent refusals

# ---- release ----
refused 1 "tank@s2.*keep" cairn release keep tank@s2
# one missing tag in a list: nothing released
refused 1 "tank/b@s1.*keep" cairn release keep tank@s1 tank/b@s1
[ "$(refs tank@s1)" = 2 ] || fail "partial release"
refused 1 "tank@nosuch" cairn release keep tank@s1 tank@nosuch
refused 1 "empty\|tank@s1" cairn release '' tank@s1
t0=$(txg)
ok cairn release other tank@s1
[ "$(txg)" = $((t0 + 1)) ] || fail "release is not one transaction"
[ "$(refs tank@s1)" = 1 ] || fail "userrefs after release"
[ "$(cairn holds -H tank@s1 | cut -f2)" = keep ] || fail "wrong hold released"
consistent release

# ---- -r over a hierarchy ----
t0=$(txg)
ok cairn hold -r rt tank@s1
[ "$(txg)" = $((t0 + 1)) ] || fail "hold -r is not one transaction"
for s in tank@s1 tank/a@s1 tank/a/x@s1 tank/b@s1; do
	cairn holds -H "$s" | cut -f2 | grep -qx rt || fail "hold -r missed $s"
done
[ "$(refs tank@s1)" = 2 ] && [ "$(refs tank/a/x@s1)" = 1 ] || fail "userrefs after hold -r"
[ "$(refs tank@s2)" = 0 ] || fail "hold -r touched s2"
out=$(cairn holds -r -H tank@s1 | cut -f1,2 | tr '\t' ' ')
[ "$out" = "tank@s1 keep
tank@s1 rt
tank/a@s1 rt
tank/a/x@s1 rt
tank/b@s1 rt" ] || fail "holds -r: $out"
# -r from a middle dataset reaches only its subtree
ok cairn hold -r mid tank/a@s2
[ "$(cairn holds -r -H tank@s2 | cut -f1 | tr '\n' ' ')" = "tank/a@s2 tank/a/x@s2 " ] ||
	fail "hold -r from tank/a: $(cairn holds -r -H tank@s2)"
ok cairn release -r mid tank/a@s2
# descendants without the snapshot are skipped
ok cairn hold -r r3 tank@s3
[ "$(cairn holds -r -H tank@s3 | cut -f1 | tr '\n' ' ')" = "tank@s3 tank/b@s3 " ] ||
	fail "hold -r tank@s3: $(cairn holds -r -H tank@s3)"
ok cairn release -r r3 tank@s3
# one descendant already has the tag: the whole -r is refused, naming it
ok cairn hold dup tank/a/x@s2
refused 1 "tank/a/x@s2.*dup" cairn hold -r dup tank@s2
[ "$(refs tank@s2)" = 0 ] && [ "$(refs tank/b@s2)" = 0 ] || fail "partial hold -r"
ok cairn release dup tank/a/x@s2
# release -r with one descendant lacking the tag: it is skipped, as zfs
# does (t1650 has the details)
ok cairn release rt tank/b@s1
ok cairn release -r rt tank@s1
[ "$(refs tank/a@s1)" = 0 ] || fail "release -r skipping an untagged descendant"
ok cairn hold -r rt tank@s1
# -r over a name that exists nowhere; and two such names: each is named
refused 1 "tank@nosuch" cairn hold -r t tank@nosuch
refused 1 "tank@nosuch" cairn hold -r t tank@s2 tank@nosuch tank/a@nosuch2
err=$(cairn hold -r t tank@s2 tank@nosuch tank/a@nosuch2 2>&1 >/dev/null)
echo "$err" | grep -q "tank@nosuch" && echo "$err" | grep -q "tank/a@nosuch2" ||
	fail "hold -r names only some of the failing items: $err"
t0=$(txg)
ok cairn release -r rt tank@s1
[ "$(txg)" = $((t0 + 1)) ] || fail "release -r is not one transaction"
[ "$(refs tank/a@s1)" = 0 ] && [ "$(refs tank@s1)" = 1 ] || fail "release -r"
consistent recursive

# ---- destroy of held snapshots ----
ok cairn hold second tank@s1
refused 1 "tank@s1.*held.*keep, second" cairn destroy tank@s1
refused 1 "tank@s1.*held" cairn destroy -r tank@s1
refused 1 "tank@s1.*held" cairn destroy tank@s1%s2
refused 1 "tank@s1.*held" cairn destroy tank@s2,s1
refused 1 "held" cairn destroy -r tank
ok cairn hold one tank/a/x@s2
refused 1 "tank/a/x@s2.*held" cairn destroy -r tank@s2
refused 1 "tank/a/x@s2.*held" cairn destroy -r tank/a
exists tank/a@s2 || fail "destroy -r removed a sibling of a held snapshot"

# destroy -d: held -> marked, stays; unheld -> gone at once
ok cairn destroy -d tank@s1
exists tank@s1 || fail "destroy -d removed a held snapshot"
[ "$(defer tank@s1)" = on ] || fail "defer_destroy not set: $(defer tank@s1)"
[ "$(refs tank@s1)" = 2 ] || fail "destroy -d changed userrefs"
ok cairn destroy -d tank@s2
exists tank@s2 && fail "destroy -d of an unheld snapshot kept it"
ok cairn destroy -d tank@s1            # again: still marked, still there
exists tank@s1 || fail "second destroy -d removed it"
# a new hold on a deferred snapshot keeps it longer
ok cairn hold late tank@s1
ok cairn release keep tank@s1
ok cairn release second tank@s1
exists tank@s1 || fail "deferred snapshot went before its last hold"
# a failed release that included the last hold destroys nothing
refused 1 "tank/b@s1.*late" cairn release late tank@s1 tank/b@s1
exists tank@s1 || fail "failed release destroyed the deferred snapshot"
t0=$(txg)
ok cairn release late tank@s1
exists tank@s1 && fail "deferred snapshot survived its last release"
[ "$(txg)" = $((t0 + 1)) ] || fail "release + deferred destroy is not one transaction"
sqlite3 "$DB" "SELECT COUNT(*) FROM snapdata WHERE snapshot NOT IN (SELECT id FROM snapshot)" |
	grep -qx 0 || fail "deferred destroy left snapdata rows"
cairn list -H -o name tank#bm >/dev/null || fail "bookmark lost with its snapshot"

# destroy -d -r over a hierarchy, then one release -r destroys them all
ok cairn snapshot -r tank@s4
ok cairn hold -r h4 tank@s4
ok cairn destroy -d -r tank@s4
for s in tank@s4 tank/a@s4 tank/a/x@s4 tank/b@s4; do
	exists "$s" || fail "destroy -d -r removed $s"
	[ "$(defer "$s")" = on ] || fail "$s not deferred"
done
t0=$(txg)
ok cairn release -r h4 tank@s4
[ "$(txg)" = $((t0 + 1)) ] || fail "release -r of deferred snapshots is not one transaction"
[ "$(cairn list -H -o name -t snapshot -r tank | grep -c '@s4$')" = 0 ] ||
	fail "deferred snapshots survived release -r"
# the accounting of the survivors is still consistent with a fresh listing
ok cairn list -t all -r tank >/dev/null
consistent destroy

# ---- a temporary hold (as send takes them) seen from the CLI ----
# Its owner is a background process; the row is written as the library
# writes it (pid, process start time = field 22 of /proc/PID/stat).
sleep 300 &
owner=$!
pstart=$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$owner/stat")
sid=$(sqlite3 "$DB" "SELECT s.id FROM snapshot s JOIN dataset d ON d.id = s.dataset
	WHERE d.name = 'tank/b' AND s.name = 's1'")
sqlite3 "$DB" "BEGIN; INSERT INTO hold VALUES($sid, '.send-$owner', strftime('%s'), $owner, $pstart);
	UPDATE snapshot SET userrefs = userrefs + 1 WHERE id = $sid; COMMIT;"
out=$(cairn holds -H tank/b@s1)
echo "$out" | grep -q "^tank/b@s1	.send-$owner	.*	(temporary, pid $owner)$" ||
	fail "holds does not show the temporary owner: $out"
[ "$(refs tank/b@s1)" = 1 ] || fail "temporary hold reaped while its owner runs"
refused 1 "tank/b@s1.*held" cairn destroy tank/b@s1
kill "$owner"
wait "$owner" 2>/dev/null
ok cairn list >/dev/null                 # any command reaps
[ "$(refs tank/b@s1)" = 0 ] || fail "temporary hold of a dead owner not reaped"
cairn holds -H tank/b@s1 | grep -q . && fail "holds still lists the dead owner's hold"
consistent temporary
done_test
