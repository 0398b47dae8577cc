#!/bin/bash
# Space accounting against sums computed by hand, and GC with a non-zero
# gc_atime_cutoff.
#   referenced(s) = stored bytes of the distinct chunks s reaches
#   written(s)    = stored bytes of s's chunks the previous snapshot lacks
#   used(s)       = stored bytes no neighbouring snapshot shares
# With compression off and random data, a file of N bytes is N stored
# bytes plus blob headers; tree and index chunks add a little.  Identities:
#   first snapshot: referenced = written = used
#   next snapshot:  referenced(s2) = referenced(s1) - used(s1) + written(s2)
#   destroy -n -p reports used as what it would reclaim;
#   after destroying s1, s2 alone: used = referenced = written, unchanged referenced.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 500000 /dev/urandom >"$SRC/a"
ok cairn create -o source="$SRC" -o chunksize=64K -o compression=off tank
# prop SNAP FIELD: the exact number
prop() { "$CAIRN" list -H -p -t snapshot -o "$2" "$1"; }
ok cairn snapshot tank@1
r1=$(prop tank@1 referenced) w1=$(prop tank@1 written) u1=$(prop tank@1 used)
echo "s1: referenced $r1 written $w1 used $u1"
[ "$r1" = "$w1" ] && [ "$r1" = "$u1" ] || fail "first snapshot: referenced $r1, written $w1, used $u1 differ"
# the 500000 data bytes, plus at most 64 headers and a small tree
[ "$r1" -ge 500000 ] && [ "$r1" -le $((500000 + 64 * 24 + 4096)) ] || fail "s1 referenced $r1 for 500000 bytes"

head -c 300000 /dev/urandom >"$SRC/b"
ok cairn snapshot tank@2
r2=$(prop tank@2 referenced) w2=$(prop tank@2 written) u1=$(prop tank@1 used) u2=$(prop tank@2 used)
echo "s2: referenced $r2 written $w2 used $u2; s1 used $u1"
[ "$w2" -ge 300000 ] && [ "$w2" -le $((300000 + 64 * 24 + 4096)) ] || fail "s2 written $w2 for 300000 new bytes"
[ "$r2" = $((r1 - u1 + w2)) ] || fail "referenced(s2) $r2 != $r1 - $u1 + $w2"
# s1 shares a's data with s2: only its own tree is s1's alone
[ "$u1" -lt 4096 ] || fail "s1 used $u1: it shares its data with s2"
[ "$u2" = "$w2" ] || fail "s2 (newest) used $u2 != written $w2"
out=$(cairn destroy -n -v -p tank@1) || fail "destroy -n: $out"
echo "$out" | grep -Pq "^reclaim\t$u1\$" || fail "destroy -n -p tank@1 reclaims other than used ($u1): $out"

ok cairn destroy tank@1
[ "$(prop tank@2 referenced)" = "$r2" ] || fail "destroying s1 changed referenced(s2)"
[ "$(prop tank@2 used)" = "$r2" ] && [ "$(prop tank@2 written)" = "$r2" ] ||
	fail "s2 alone: used $(prop tank@2 used), written $(prop tank@2 written), referenced $r2"

# ---- gc_atime_cutoff = 60 minutes ----
ok cairn config gc_atime_cutoff=60
chunks() { find "$CAIRN_STORE/.chunks" -type f | wc -l; }
garbage=$(cairn gc -n | sed -n 's/.*would remove \([0-9]*\) chunks.*/\1/p')
n0=$(chunks)
# everything was touched just now: nothing is old enough
ok cairn gc >/dev/null
[ "$(chunks)" = "$n0" ] || fail "GC inside the cutoff removed $((n0 - $(chunks))) chunks"
[ "${garbage:-0}" = 0 ] || fail "gc -n would remove $garbage chunks inside the cutoff"
# 30 minutes old: still inside the cutoff
find "$CAIRN_STORE/.chunks" -type f -exec touch -a -d '-30 minutes' {} +
ok cairn gc >/dev/null
[ "$(chunks)" = "$n0" ] || fail "GC removed chunks touched 30 minutes ago (cutoff 60)"
# 2 hours old: garbage goes (s1's tree and index), what tank@2 uses stays
find "$CAIRN_STORE/.chunks" -type f -exec touch -a -d '-2 hours' {} +
ok cairn gc >/dev/null
n1=$(chunks)
[ "$n1" -lt "$n0" ] || fail "GC past the cutoff removed nothing"
[ $((n0 - n1)) -le 4 ] || fail "GC removed $((n0 - n1)) chunks: more than s1's own"
ok cairn verify >/dev/null
ok cairn restore tank@2 "$TESTDIR/r"
cmp -s "$SRC/a" "$TESTDIR/r/a" && cmp -s "$SRC/b" "$TESTDIR/r/b" || fail "tank@2 after GC"
done_test
