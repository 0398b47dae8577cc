#!/bin/bash
# Dataset management: inherit, rename (refusals, -p, an inherited source
# after a rename), destroy (a dataset with snapshots or children without
# -r, -n, -p, -R), get -p, and what compression and chunksize change in
# what is stored.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/sub" "$SRC/moved" "$SRC/other"
echo top >"$SRC/f"
echo sub >"$SRC/sub/g"
echo moved >"$SRC/moved/h"
ok cairn create -o source="$SRC" tank
ok cairn create tank/sub
ok cairn create tank/other
val() { "$CAIRN" get -H -o value "$1" "$2"; }
src() { "$CAIRN" get -H -o source "$1" "$2"; }

# ---- inherit ----
[ "$(val source tank/sub)" = "$SRC/sub" ] || fail "inherited source: $(val source tank/sub)"
ok cairn set compression=zstd-7 tank
[ "$(val compression tank/sub)" = zstd-7 ] && [ "$(src compression tank/sub)" = "inherited from tank" ] ||
	fail "compression not inherited: $(val compression tank/sub) $(src compression tank/sub)"
ok cairn set compression=off tank/sub
[ "$(src compression tank/sub)" = local ] || fail "local compression"
ok cairn inherit compression tank/sub
[ "$(val compression tank/sub)" = zstd-7 ] && [ "$(src compression tank/sub)" = "inherited from tank" ] ||
	fail "inherit did not drop the local value: $(val compression tank/sub) $(src compression tank/sub)"
ok cairn set user:note=x tank/sub tank/other
ok cairn inherit -r user:note tank
[ "$(val user:note tank/other)" = - ] || fail "inherit -r left user:note: $(val user:note tank/other)"
ok cairn inherit compression tank
[ "$(src compression tank)" = default ] || fail "inherit on the root: $(src compression tank)"
fails_with 1 "property is read-only" "$CAIRN" inherit used tank
fails_with 2 "invalid property" "$CAIRN" inherit nosuchprop tank
fails_with 1 "does not exist" "$CAIRN" inherit compression nosuch

# ---- get -p: exact numbers ----
ok cairn set chunksize=256K tank/other
[ "$(cairn get -H -p -o value chunksize tank/other)" = 262144 ] || fail "get -p chunksize"
[ "$(cairn get -H -o value chunksize tank/other)" != 262144 ] || fail "get without -p should scale chunksize"
fails_with 1 "power of two" "$CAIRN" set chunksize=18014398509481984064K tank/other
[ "$(cairn get -H -p -o value chunksize tank/other)" = 262144 ] || fail "refused set changed chunksize"

# ---- rename ----
ok cairn snapshot -r tank@1
fails_with 1 "already exists" "$CAIRN" rename tank/sub tank/other
fails_with 1 "into itself" "$CAIRN" rename tank tank/sub/x
fails_with 1 "nosuch/sub: parent does not exist (nosuch; use -p" "$CAIRN" rename tank/sub nosuch/sub
fails_with 1 "already exists" "$CAIRN" rename tank@1 tank@1
fails_with 1 "does not exist" "$CAIRN" rename tank@nosuch tank@2
fails_with 1 "does not exist" "$CAIRN" rename nosuch tank/x
cairn list -H -o name -r tank | grep -qx tank/sub || fail "refused renames changed names"
# -p creates the missing parents; the snapshot moves along
ok cairn rename -p tank/other new/a/b
cairn list -H -o name -t all -r new | grep -qx 'new/a/b@1' || fail "rename -p lost the snapshot"
# an inherited source follows the new name (as a zfs mountpoint does)
ok cairn rename tank/sub tank/moved
[ "$(val source tank/moved)" = "$SRC/moved" ] || fail "source after rename: $(val source tank/moved)"
ok cairn snapshot tank/moved@2
ok cairn restore tank/moved@2 "$TESTDIR/rm"
[ "$(cat "$TESTDIR/rm/h")" = moved ] || fail "snapshot after rename read the wrong source"
ok cairn restore tank/moved@1 "$TESTDIR/r1"
[ "$(cat "$TESTDIR/r1/g")" = sub ] || fail "a snapshot taken before the rename changed"
ok cairn rename tank/moved@2 tank/moved@two
cairn list -H -o name -t snapshot tank/moved | grep -qx 'tank/moved@two' || fail "snapshot rename"

# ---- destroy ----
fails_with 1 "has children\|snapshots" "$CAIRN" destroy tank
fails_with 1 "snapshots" "$CAIRN" destroy new/a/b
cairn list -H -o name -t all -r new | grep -qx 'new/a/b@1' || fail "refused destroy removed something"
out=$(cairn destroy -n -v -p -r tank) || fail "destroy -n -v -p -r: $out"
echo "$out" | grep -q 'tank/moved@1' || fail "destroy -n does not list tank/moved@1: $out"
echo "$out" | grep -Pq '^reclaim\t[0-9]+$' || fail "destroy -n -p: no exact reclaim figure: $out"
cairn list -H -o name -r tank | grep -qx tank/moved || fail "destroy -n destroyed"
ok cairn destroy -r new/a/b
cairn list -H -o name -t all -r new | grep -q 'new/a/b' && fail "destroy -r left new/a/b"
ok cairn create new/c
ok cairn snapshot new/c@s
ok cairn destroy -R new
cairn list -H -o name -t all | grep -q '^new' && fail "destroy -R left new"
ok cairn verify >/dev/null

# ---- compression and chunksize change what is stored ----
# the same compressible file, stored uncompressed and at zstd-19; the
# same random file with chunks of 64K and of 1M
mkdir -p "$TESTDIR/c"
yes 'a line that compresses well, repeated' | head -c 2000000 >"$TESTDIR/c/text"
head -c 3000000 /dev/urandom >"$TESTDIR/c/rand"
# stored_by DATASET PROPS...: a first snapshot in a fresh store; STORED is
# the bytes of the chunk files it wrote, ADDED their number
stored_by() {
	local ds=$1
	shift
	new_store
	ok cairn create -o source="$TESTDIR/c" "$@" "$ds"
	ok cairn snapshot "$ds@1"
	STORED=$(find "$CAIRN_STORE/.chunks" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
	ADDED=$(find "$CAIRN_STORE/.chunks" -type f | wc -l)
}
stored_by plain -o compression=off -o chunksize=1M
off=$STORED plain_chunks=$ADDED
stored_by packed -o compression=zstd-19 -o chunksize=1M
z19=$STORED
stored_by small -o compression=off -o chunksize=64K
small_chunks=$ADDED
echo "stored: off $off, zstd-19 $z19; chunks: 1M $plain_chunks, 64K $small_chunks"
[ "$off" -ge 5000000 ] || fail "compression=off stored $off bytes for 5M of data"
[ "$z19" -le $((off - 1900000)) ] || fail "zstd-19 stored $z19 bytes, off $off: the text was not compressed"
[ "$small_chunks" -ge $((plain_chunks * 4)) ] || fail "chunksize=64K made $small_chunks chunks, 1M made $plain_chunks"
done_test
