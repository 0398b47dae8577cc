#!/bin/bash
# The space properties zfs tools read, derived from the catalog
# (docs/ZFS-COMPAT.md): usedbysnapshots + usedbydataset + usedbychildren
# (+ usedbyrefreservation, always 0) = used; logicalused, compressratio,
# refcompressratio, written on filesystems, written@SNAP, list -o space;
# get all lists user properties; user properties on snapshots.
. "$(dirname "$0")/lib.sh"
new_store
S="$TESTDIR/src"
mkdir -p "$S/kid"
seq 1 200000 >"$S/a"          # compresses well
head -c 300000 /dev/urandom >"$S/r" # does not
seq 1 50000 >"$S/kid/k"
ok cairn create -o source="$S" pool
ok cairn create pool/kid
ok cairn snapshot -r pool@1
seq 300000 500000 >"$S/b"
ok cairn snapshot pool@2
rm "$S/r"
ok cairn snapshot pool@3

# num PROP NAME: the exact value; a failed get prints "get-failed", which
# no comparison below accepts (fail inside $( ) would not be counted).
num() { cairn get -Hp -o value "$1" "$2" || echo get-failed; }
used=$(num used pool) snap=$(num usedbysnapshots pool) ds=$(num usedbydataset pool)
child=$(num usedbychildren pool) refres=$(num usedbyrefreservation pool)
[ "$used" -gt 0 ] || fail "used is $used"
[ $((snap + ds + child + refres)) = "$used" ] ||
	fail "usedby* do not add up: $snap + $ds + $child + $refres != $used"
[ "$child" = "$(num used pool/kid)" ] || fail "usedbychildren $child != used of pool/kid"
[ "$ds" = "$(num referenced pool@3)" ] || fail "usedbydataset $ds != referenced of the newest snapshot"
# What only older snapshots hold: pool's own written bytes minus the newest's.
own=$(cairn list -Hp -o written -t snapshot -d 1 pool | awk '{s += $1} END {print s}')
[ "$snap" = $((own - ds)) ] || fail "usedbysnapshots $snap != $own - $ds"
[ "$snap" -gt 0 ] || fail "usedbysnapshots is 0 though @1 holds a deleted file"
[ "$refres" = 0 ] || fail "usedbyrefreservation $refres"

# logicalused: each snapshot's written scaled by its logical/stored ratio.
want=$(cairn list -Hp -o written,logicalreferenced,referenced -t snapshot -r pool |
	awk '{s += ($3 > 0) ? int($1 * $2 / $3) : $1} END {print s}')
lu=$(num logicalused pool)
[ "$lu" -ge $((want - 4)) ] && [ "$lu" -le "$want" ] || fail "logicalused $lu, expected $want"
[ "$lu" -gt "$used" ] || fail "logicalused $lu not above used $used for compressible data"

# compressratio: logicalused/used for a dataset, logicalreferenced/referenced
# for a snapshot (refcompressratio: referenced for both); 1.50x, -p 1.50.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {v = int(a * 100 / b); printf "%d.%02d\n", v / 100, v % 100}'; }
lr=$(num logicalreferenced pool@1) rf=$(num referenced pool@1)
[ "$(num compressratio pool@1)" = "$(ratio "$lr" "$rf")" ] ||
	fail "snapshot compressratio $(num compressratio pool@1) != $(ratio "$lr" "$rf")"
[ "$(cairn get -H -o value compressratio pool@1)" = "$(ratio "$lr" "$rf")x" ] ||
	fail "compressratio without -p: $(cairn get -H -o value compressratio pool@1)"
[ "$(num compressratio pool)" = "$(ratio "$lu" "$used")" ] ||
	fail "dataset compressratio $(num compressratio pool) != $(ratio "$lu" "$used")"
[ "$(num refcompressratio pool)" = "$(ratio "$(num logicalreferenced pool@3)" "$(num referenced pool@3)")" ] ||
	fail "refcompressratio $(num refcompressratio pool)"

# written: 0 on a filesystem (nothing after its newest snapshot);
# written@SNAP: stored bytes the newer state has and SNAP lacks.
[ "$(num written pool)" = 0 ] || fail "written on a filesystem: $(num written pool)"
w=$(num written@1 pool@2)
[ "$w" = "$(num written pool@2)" ] || fail "written@1 of @2 ($w) != written of @2"
[ "$w" -gt 0 ] || fail "written@1 of @2 is 0"
[ "$(num written@3 pool)" = 0 ] || fail "written@newest of the dataset"
[ "$(num written@1 pool)" = "$(num written@pool@1 pool@3)" ] || fail "written@1 of the dataset"
[ "$(num written@2 pool@2)" = 0 ] || fail "written@self"
fails_with 1 "newer" cairn get written@3 pool@1
fails_with 1 "does not exist" cairn get written@nosuch pool
fails_with 1 "not a snapshot of" cairn get written@pool/kid@1 pool@3
[ "$(cairn list -Hp -o name,written@1 pool@3 | cut -f2)" = "$(num written@1 pool@3)" ] ||
	fail "list -o written@1"

# list -o space: zfs's columns, filesystems and volumes only.
hdr=$(cairn list -o space pool | head -1 | tr -s ' ')
[ "$hdr" = "NAME AVAIL USED USEDSNAP USEDDS USEDREFRESERV USEDCHILD" ] || fail "list -o space header: $hdr"
row=$(cairn list -Hp -o space -r pool | head -1 | cut -f1,3-)
[ "$row" = "pool	$used	$snap	$ds	0	$child" ] || fail "list -o space row: $row"
[ "$(cairn list -H -o space -r pool | wc -l)" = 2 ] || fail "list -o space listed snapshots"

# The figures follow the catalog: destroying @1 frees what only it held.
ok cairn destroy pool@1
[ "$(num usedbysnapshots pool)" -lt "$snap" ] || fail "usedbysnapshots unchanged by destroy"
[ $(($(num usedbysnapshots pool) + $(num usedbydataset pool) + $(num usedbychildren pool))) = \
	"$(num used pool)" ] || fail "usedby* do not add up after destroy"

# User properties: get all lists them (set here or inherited), on snapshots too.
ok cairn set com.x:team=red pool
ok cairn set com.x:only=kid pool/kid
out=$(cairn get -H -o property,value,source all pool/kid) || fail "get all"
echo "$out" | grep -qx "com.x:team	red	inherited from pool" || fail "get all: no inherited user property: $out"
echo "$out" | grep -qx "com.x:only	kid	local" || fail "get all: no local user property"
echo "$out" | grep -qx "usedbysnapshots	.*	-" || fail "get all: no usedbysnapshots"
# A snapshot's user property: its own (local), else its dataset's.
ok cairn set com.x:note=first pool@2
[ "$(cairn get -H -o value,source com.x:note pool@2)" = "first	local" ] || fail "snapshot set/get"
[ "$(cairn get -H -o value,source com.x:team pool@2)" = "red	inherited from pool" ] ||
	fail "snapshot inherits: $(cairn get -H -o value,source com.x:team pool@2)"
out=$(cairn get -H -o property,value all pool@2) || fail "get all snapshot"
echo "$out" | grep -qx "com.x:note	first" || fail "get all snapshot: own user property"
echo "$out" | grep -qx "com.x:team	red" || fail "get all snapshot: inherited user property"
[ "$(cairn list -H -o name,com.x:note -t snapshot pool | tr '\t\n' ' ')" = "pool@2 first pool@3 - " ] ||
	fail "list user property on snapshots: $(cairn list -H -o name,com.x:note -t snapshot pool)"
ok cairn set com.x:team=blue pool@3
ok cairn inherit com.x:team pool@3
[ "$(cairn get -H -o value,source com.x:team pool@3)" = "red	inherited from pool" ] || fail "snapshot inherit"
fails_with 1 "user properties only" cairn set compression=off pool@2
fails_with 1 "does not exist" cairn set com.x:a=b pool@nosuch
[ "$(cairn get -H -o value com.x:a pool@2)" = "-" ] || fail "a refused set changed something"
# sizes whose product overflows 64 bits (a 10 GB snapshot)
sqlite3 "$CAIRN_STORE/catalog.db" "UPDATE snapshot SET used=1e10, written=1e10, referenced=1e10, logicalreferenced=2e10 WHERE name='2'" ||
	fail "sqlite3 update"
v=$(cairn get -H -p -o value logicalused pool@2) || fail "get logicalused pool@2"
[ "$v" = 20000000000 ] || fail "logicalused of a 10 GB snapshot: $v"
done_test
