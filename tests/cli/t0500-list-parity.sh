#!/bin/bash
# tier: stress
# `cairn list`: the batched projection must print exactly what the
# one-row-at-a-time reference path (CAIRN_LIST_REFERENCE=1) prints, byte
# for byte with the same exit code, for every property, every subset of
# the six core properties, every sort key both ways, -H/-p/JSON, empty
# results, 1023/1024/1025 snapshots at batch sizes 1, 2 and the default,
# a 1 us time budget, 255-byte names, held and defer_destroy snapshots,
# and -t/-r/-d over a hierarchy of filesystems and a volume.
# After openzfs#18850's zfs_list_013_pos.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C TZ=UTC
new_store
DB=$CAIRN_STORE/catalog.db
SRC=$TESTDIR/src
mkdir -p "$SRC/a/deep" "$SRC/b"
echo top >"$SRC/f"; echo a >"$SRC/a/f"; echo deep >"$SRC/a/deep/f"; echo b >"$SRC/b/f"
head -c 100000 /dev/urandom >"$SRC/b/rand"
IMG=$TESTDIR/vol.img
truncate -s 1M "$IMG"
printf 'volume data' | dd of="$IMG" conv=notrunc status=none

# ---- the hierarchy: filesystems, a volume, an empty dataset ----
ok cairn create -o source="$SRC" tank
ok cairn create tank/a
ok cairn create tank/a/deep
ok cairn create tank/b
ok cairn create -V -o source="$IMG" tank/vol
ok cairn create -o source="$SRC" empty
ok cairn set user:note=dataset-note tank/a
ok cairn snapshot -r tank@s1
ok cairn snapshot tank/b@b1
echo more >>"$SRC/b/f"
ok cairn snapshot -r -o user:note=hello tank@s2
echo changed >"$SRC/a/f"
ok cairn snapshot tank/a@a1
head -c 50000 /dev/urandom >>"$SRC/b/rand"
printf 'more volume data' | dd of="$IMG" seek=1 bs=64K conv=notrunc status=none
ok cairn snapshot -r tank@s3
ok cairn snapshot tank/vol@v1
# holds (userrefs) and deferred destroys, set in the catalog directly
sqlite3 "$DB" "
	UPDATE snapshot SET userrefs = 2 WHERE name = 's2';
	UPDATE snapshot SET userrefs = 1, defer_destroy = 1 WHERE name = 'a1';
	UPDATE snapshot SET userrefs = 1 WHERE name = 'v1';" || fail "sqlite3 holds"
sqlite3 "$DB" "
	INSERT INTO hold(snapshot, tag, time) SELECT id, 'keep', 1700000000 FROM snapshot
	 WHERE name IN ('s2', 'a1', 'v1');
	INSERT INTO hold(snapshot, tag, time) SELECT id, 'also', 1700000001 FROM snapshot
	 WHERE name = 's2';" || fail "sqlite3 hold rows"
n=$(sqlite3 "$DB" "SELECT count(*) FROM hold")
# s2 is in 5 datasets: 5 + 1 + 1 keep, 5 also
[ "$n" = 12 ] || fail "hold rows: $n inserted, want 12"

# ---- 255-byte names (the longest a name may be) ----
L250=$(printf 'x%.0s' $(seq 250))
L195=$(printf 'y%.0s' $(seq 195))
S54=$(printf 'z%.0s' $(seq 54))
ok cairn create -o source="$SRC" long
ok cairn create -o source="$SRC" "long/$L250"   # dataset name: 255 bytes
ok cairn create -o source="$SRC" "long/$L195"   # 200 bytes ...
ok cairn snapshot "long/$L195@$S54"      # ... and its snapshot: 255 bytes
[ ${#L195} -eq 195 ] && [ $((5 + 195 + 1 + 54)) -eq 255 ] || fail "name lengths"
n=$(cairn list -H -o name -t all -r long | awk '{ print length($0) }' | sort -n | tail -n 1)
[ "$n" = 255 ] || fail "longest listed name is $n bytes, expected 255"

# ---- exactly 1023, 1024 and 1025 snapshots (rows copied in SQL) ----
ok cairn create -o source="$SRC" big
for n in 1023 1024 1025; do ok cairn create -o source="$SRC/a" "big/n$n"; done
ok cairn snapshot -r big@t0
sqlite3 "$DB" "
BEGIN IMMEDIATE;
CREATE TEMP TABLE want(ds TEXT, n INTEGER);
INSERT INTO want VALUES('big/n1023', 1023), ('big/n1024', 1024), ('big/n1025', 1025);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1100)
INSERT INTO snapshot(dataset, name, guid, createtxg, creation, referenced, logicalreferenced,
	written, used, userrefs, defer_destroy)
 SELECT s.dataset, printf('n%05d', i), (abs(random()) % 9000000000000000000) + 1,
	(SELECT value FROM meta WHERE key = 'txg') + i, s.creation + i / 7, s.referenced,
	s.logicalreferenced, 0, 0, (i % 97 = 0), (i % 389 = 0)
 FROM c, snapshot s JOIN dataset d ON s.dataset = d.id JOIN want w ON w.ds = d.name
 WHERE s.name = 't0' AND i < w.n;
UPDATE meta SET value = value + 1100 WHERE key = 'txg';
COMMIT;" || fail "sqlite3 bulk insert"

ncmp=0
nfail=0
# parity ARGS...: `cairn list ARGS` through the reference path and through
# the batched path with the default batch settings, batch size 1, and
# batch size 2 with a 1 us budget: stdout+stderr and exit code identical.
# A mismatch is retried twice (the available property follows the free
# space of a live filesystem), so only a repeatable difference fails.
# With PF set, both outputs go through that filter first (exact values of
# available are cut out that way: they change whenever anything writes).
parity() {
	local ref out v try bad=
	for try in 1 2 3; do
		bad=
		ref=$({ CAIRN_LIST_REFERENCE=1 "$CAIRN" list "$@" 2>&1; echo "rc=$?"; } | ${PF:-cat})
		for v in "" CAIRN_LIST_BATCH_SIZE=1 "CAIRN_LIST_BATCH_SIZE=2 CAIRN_LIST_BATCH_TIME_US=1"; do
			out=$({ env $v "$CAIRN" list "$@" 2>&1; echo "rc=$?"; } | ${PF:-cat})
			[ "$out" = "$ref" ] || { bad=$v; break; }
		done
		[ -z "$bad" ] && [ "$out" = "$ref" ] && break
	done
	ncmp=$((ncmp + 1))
	if [ "$out" != "$ref" ]; then
		nfail=$((nfail + 1))
		fail "batched (${bad:-defaults}) and reference differ: list $*"
		if [ $nfail -le 5 ]; then
			diff <(echo "$ref") <(echo "$out") | head -n 8 | cut -c1-200 >&2
		fi
	fi
	LAST=$ref
}

ALLPROPS="name type guid createtxg creation userrefs defer_destroy used referenced logicalreferenced written objsetid available source compression chunksize user:note"

# ---- sanity of what the reference prints, so parity is not vacuous ----
nsnap=$(sqlite3 "$DB" "SELECT COUNT(*) FROM snapshot s JOIN dataset d ON s.dataset = d.id
	WHERE d.name = 'tank' OR d.name LIKE 'tank/%'")
parity -H -p -t snapshot -r -o name,createtxg tank
[ "$(echo "$LAST" | grep -c @)" = "$nsnap" ] || fail "reference lists $(echo "$LAST" | grep -c @) of $nsnap snapshots of tank"
[ "$(echo "$LAST" | tail -n 1)" = "rc=0" ] || fail "listing failed"
# snapshots in createtxg order within each dataset, datasets in tree order
echo "$LAST" | grep @ | awk -F'\t' '{ split($1, a, "@"); if (a[1] == ds && $2 <= txg) bad = 1; ds = a[1]; txg = $2 }
	END { exit bad }' || fail "snapshots not in createtxg order"
order=$(cairn list -H -o name -r tank | tr '\n' ' ')
[ "$order" = "tank tank/a tank/a/deep tank/b tank/vol " ] || fail "dataset order: $order"

# ---- every property alone, with a name, -H, -p and neither ----
for p in $ALLPROPS; do
	parity -t all -r -H -o "name,$p"
	parity -t all -r -o "$p,name"
	if [ "$p" = available ]; then
		parity -t all -r -H -o "$p"
		PF="cut -f1" parity -t all -r -H -p -o "name,$p"
		cairn list -t all -r -H -p -o "name,$p" | awk -F'\t' '/@/ && $2 != "-" { exit 1 } !/@/ && NF == 2 && $2 !~ /^[0-9]+$/ { exit 1 }' ||
			fail "available: not a number for datasets and - for snapshots"
		continue
	fi
	parity -t all -r -H -p -o "$p"
	parity -t all -r -p -o "name,$p" tank empty long
done
# aliases and the default columns
parity -t all -r -H -p -o name,refer,lrefer
parity -t all -r -H -o name,refer,lrefer,avail
parity -t all -r
parity -t snapshot

# ---- all 63 non-empty subsets of the six core properties, -H -p ----
CORE=(createtxg creation guid name type userrefs)
for mask in $(seq 1 63); do
	cols=
	for i in 0 1 2 3 4 5; do
		(( mask & (1 << i) )) && cols=${cols:+$cols,}${CORE[$i]}
	done
	parity -H -p -t all -r -o "$cols" tank big/n1023 empty
done

# ---- every sort key, both directions; most have ties ----
for p in $ALLPROPS; do
	cols=name,createtxg,$p
	[ "$p" = available ] && cols=name,createtxg # exact free space is live
	parity -H -p -t all -r -o $cols -s "$p"
	parity -H -p -t all -r -o $cols -S "$p"
	parity -t snapshot -r -o name,"$p" -s "$p" tank
	parity -t snapshot -r -o name,"$p" -S "$p" tank
done
parity -H -p -t all -r -o name,type,creation,userrefs -s type -S creation -s userrefs
parity -H -p -t all -r -o name,type,createtxg -S type -s createtxg -S name
parity -H -p -t snapshot -o name,creation -s creation -S name -r big
# the sort must really sort (and keep ties in tree order)
parity -H -p -t snapshot -r -o name,createtxg -S createtxg tank
echo "$LAST" | grep -v '^rc=' | awk -F'\t' 'NR > 1 && $2 > prev { bad = 1 } { prev = $2 } END { exit bad }' ||
	fail "-S createtxg is not descending"

# ---- JSON ----
for j in "-j" "-j --json-int"; do
	for cols in name,type,guid,createtxg,creation,userrefs \
		name,used,referenced,written,defer_destroy,source,compression,chunksize,user:note \
		name,objsetid,logicalreferenced,available; do
		[ "$j" = "-j --json-int" ] && cols=${cols%,available}
		parity $j -t all -r -o "$cols"
		parity $j -t snapshot -o "$cols" -S createtxg tank
		echo "$LAST" | sed '$d' | python3 -m json.tool >/dev/null ||
			fail "invalid JSON: list $j -t snapshot -o $cols tank"
	done
	if [ "$j" = -j ]; then
		parity $j -t all -r # default columns, with (human-readable) available
	else
		parity $j -t all -r -o name,used,referenced,source
	fi
	echo "$LAST" | sed '$d' | python3 -m json.tool >/dev/null || fail "invalid JSON: list $j -t all -r"
	parity $j -t snapshot empty
	echo "$LAST" | sed '$d' | python3 -m json.tool >/dev/null || fail "invalid JSON (empty): list $j"
	parity $j -t snapshot -r long
	echo "$LAST" | sed '$d' | python3 -m json.tool >/dev/null || fail "invalid JSON (long names)"
done
# JSON content: one entry per row, numbers with --json-int
cnt=$(cairn list -j --json-int -t snapshot -r tank | python3 -c '
import json, sys
d = json.load(sys.stdin)["datasets"]
assert all(isinstance(v["createtxg"], int) for v in d.values())
print(len(d))') || fail "json-int content"
[ "$cnt" = "$nsnap" ] || fail "JSON lists $cnt snapshots, expected $nsnap"

# ---- empty results ----
for args in "-t snapshot empty" "-t snapshot -d 1 empty" "-H -t snapshot empty" \
	"-t snapshot -r empty" "-d 0 -t snapshot tank" "-t volume empty" "-H -t volume -r big"; do
	parity $args
	[ "$(echo "$LAST" | grep -c @)" = 0 ] || fail "not empty: list $args"
done

# ---- 1023 / 1024 / 1025 snapshots: batch sizes 1, 2, default ----
for n in 1023 1024 1025; do
	ref=$(CAIRN_LIST_REFERENCE=1 "$CAIRN" list -H -p -t snapshot -o name,guid,createtxg,creation,userrefs,defer_destroy "big/n$n"; echo "rc=$?")
	[ "$(echo "$ref" | grep -c "^big/n$n@")" = "$n" ] || fail "reference lists $(echo "$ref" | grep -c @) snapshots of big/n$n, expected $n"
	for v in CAIRN_LIST_BATCH_SIZE=1 CAIRN_LIST_BATCH_SIZE=2 CAIRN_LIST_BATCH_SIZE=1024 \
		"CAIRN_LIST_BATCH_SIZE=4096 CAIRN_LIST_BATCH_TIME_US=1" ""; do
		out=$(env $v "$CAIRN" list -H -p -t snapshot -o name,guid,createtxg,creation,userrefs,defer_destroy "big/n$n"; echo "rc=$?")
		c=$(echo "$out" | grep -c "^big/n$n@")
		[ "$c" = "$n" ] || fail "big/n$n ($v): $c snapshots listed, expected $n"
		[ "$(echo "$out" | cut -f1 | sort | uniq -d | wc -l)" = 0 ] || fail "big/n$n ($v): duplicates"
		[ "$out" = "$ref" ] || fail "big/n$n ($v): batched and reference differ"
	done
done
parity -H -p -t all -r -o name,createtxg,userrefs big
parity -H -p -t snapshot -d 1 -o name,guid -S guid big/n1024
parity -j --json-int -t snapshot -o name,createtxg big/n1025
echo "$LAST" | sed '$d' | python3 -c 'import json, sys; assert len(json.load(sys.stdin)["datasets"]) == 1025' ||
	fail "JSON of 1025 snapshots"

# ---- held and defer_destroy snapshots ----
parity -H -p -t snapshot -r -o name,userrefs,defer_destroy tank
echo "$LAST" | grep -q "^tank@s2	2	off$" || fail "tank@s2 should show userrefs 2"
echo "$LAST" | grep -q "^tank/a@a1	1	on$" || fail "tank/a@a1 should show userrefs 1, defer_destroy on"
parity -t snapshot -r -o name,userrefs,defer_destroy -S userrefs -s defer_destroy tank
parity -j -t snapshot -r -o name,userrefs,defer_destroy tank

# ---- maximum-length names ----
parity -t all -r long
parity -H -p -t all -r -o name,type,createtxg long
parity -t snapshot "long/$L195@$S54"
parity -H -o name,guid -t snapshot "long/$L195"
echo "$LAST" | grep -q "^long/$L195@$S54	" || fail "255-byte snapshot name not listed"

# ---- -t / -r / -d over filesystems, a volume and snapshots ----
for t in all filesystem volume,snapshot snapshot fs,snap; do
	for d in -r "-d 0" "-d 1" "-d 2"; do
		parity -H -p -t $t $d -o name,type,createtxg,guid
		parity -H -p -t $t $d -o name,type,createtxg tank
		parity -H -p -t $t $d -o name,used,written tank/a
		parity -H -t $t $d -o name,type tank/vol
		parity -H -t $t $d -o name,type tank/b tank
		parity -H -t $t $d -o name,type tank@s2 tank/a
	done
done
parity -H -o name,type tank/vol@v1 tank/vol@s3 tank/a@a1
parity -H -p -o name,type,createtxg -t snapshot -d 1 tank tank/a tank/a/deep
# depth and types select exactly the expected rows
parity -H -t all -d 1 -o name tank
[ "$(echo "$LAST" | sed '$d' | tr '\n' ' ')" = "tank tank@s1 tank@s2 tank@s3 tank/a tank/b tank/vol " ] ||
	fail "-t all -d 1 tank: $(echo "$LAST" | tr '\n' ' ')"
parity -H -t volume,snapshot -r -o name tank
[ "$(echo "$LAST" | sed '$d' | grep -vc @)" = 1 ] || fail "-t volume,snapshot: not exactly one volume"

echo "$ncmp comparisons, $nfail differ"
done_test
