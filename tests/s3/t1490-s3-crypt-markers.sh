#!/bin/bash
# An encrypted dataset on an S3 store whose markers are lost: a sealed
# chunk's id is keyed, so gc can vouch for the bucket's object only under
# its root's key.  With the key unloaded, gc reports the chunks missing and
# keeps every object; with it loaded, gc makes the markers again from the
# objects, and the snapshot restores.  A lost marker whose object is
# another sealed chunk's blob is not made again (its tag opens, its id
# does not match), and its object is kept.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/cli/crypt.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
s3_new_store
ok cairn config gc_atime_cutoff=0
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 600000 /dev/urandom >"$SRC/big.bin"
echo hello >"$SRC/small"
ok mkroot sec "$PASS1" -o source="$SRC" -o chunksize=64K -o compression=off
ok cairn snapshot sec@1 >/dev/null
n=$(objects)
# two markers of sealed chunks (index chunks are plain by design,
# docs/SECURITY.md): their objects' headers say version 2, encrypted
sealed() { "$S3TOOL" get "$BUCKET" "$PFX/chunks/${1:0:4}/$1" | head -c 6 | od -An -tx1 | grep -q '02 02$'; }
lost=
for m in $(find "$CAIRN_STORE/.chunks" -type f -regextype egrep -regex '.*/[0-9a-f]{64}'); do
	sealed "$(basename "$m")" && lost="$lost $m"
	[ "$(echo $lost | wc -w)" = 2 ] && break
done
[ "$(echo $lost | wc -w)" = 2 ] || fail "fewer than two sealed chunks"
rm -f $lost

# without the key: nothing vouched for, nothing deleted
ok cairn unload-key sec
fails_with 1 "missing" cairn gc
[ "$(objects)" = "$n" ] || fail "gc deleted objects of sealed chunks whose markers were lost ($(objects) of $n)"
for m in $lost; do [ -e "$m" ] && fail "gc made a sealed chunk's marker without its key: $m"; done

# with the key: the markers come back
printf '%s\n' "$PASS1" | ok cairn load-key sec
ok cairn gc >/dev/null
for m in $lost; do [ -f "$m" ] || fail "gc did not make the marker $m again with the key loaded"; done
[ "$(objects)" = "$n" ] || fail "gc left $(objects) objects, want $n"
ok cairn restore sec@1 "$TESTDIR/r1" >/dev/null
same_tree "$SRC" "$TESTDIR/r1"

# another sealed chunk's blob under a lost marker's name: not vouched for
swapped_marker_kept "$(echo $lost | cut -d' ' -f1)"
done_test
