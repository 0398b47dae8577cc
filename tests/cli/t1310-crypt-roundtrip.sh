#!/bin/bash
# Encrypted datasets round trip with full fidelity (filesystem, incremental,
# volume); no marker file name, content or xattr appears anywhere in the
# store (chunk files, catalog, WAL); the same file gets different keyed ids
# under two roots; a plain dataset beside them is unaffected.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"

# compression off: zstd's entropy coding would hide the markers by itself
ok mkroot tank "$PASS1" -o source="$SRC" -o compression=off
ok mkroot other "$PASS2" -o source="$SRC"
ok cairn snapshot tank@one other@one
cp -a "$SRC" "$XDIR/copy1"
ok cairn restore tank@one "$XDIR/r1"
same_tree "$XDIR/copy1" "$XDIR/r1"

# incremental: reuse of unchanged files through the encrypted previous tree
echo "MARKERCONTENT_cairn_7f3a changed" >>"$SRC/d1/s3"
rm "$SRC/d1/s4"
head -c 100000 /dev/urandom >>"$SRC/big2.bin"
out=$(cairn snapshot -v -p tank@two 2>&1) || fail "second snapshot: $out"
echo "$out" | grep -q ' 0 read, ' && fail "nothing read for changed files: $out"
ok cairn restore tank@two "$XDIR/r2"
same_tree "$SRC" "$XDIR/r2"
rm -rf "$XDIR/r1" && ok cairn restore tank@one "$XDIR/r1"
same_tree "$XDIR/copy1" "$XDIR/r1"
ok cairn restore other@one "$XDIR/r3"
same_tree "$XDIR/copy1" "$XDIR/r3"

# volumes too
IMG=$TESTDIR/img
head -c 3000000 /dev/urandom >"$IMG" && truncate -s 8M "$IMG"
printf MARKERCONTENT_cairn_7f3a | dd of="$IMG" bs=1 seek=5000000 conv=notrunc status=none
ok cairn create -V -o source="$IMG" tank/vol
ok cairn snapshot tank/vol@v
ok cairn restore tank/vol@v "$TESTDIR/img.out"
cmp "$IMG" "$TESTDIR/img.out" || fail "volume round trip"

# nothing in the clear: checkpoint the WAL into catalog.db first, then grep
# every file of the store, catalog included
sqlite3 "$CAIRN_STORE/catalog.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
hits=$(grep -rla -e MARKERCONTENT_cairn_7f3a -e MARKERNAME_secret -e MARKERXATTR "$CAIRN_STORE")
[ -z "$hits" ] || fail "plaintext in the store: $hits"
# the check would see them: a plain dataset of the tree, in a store of its own
(
	fails=0
	export CAIRN_STORE=$TESTDIR/plainstore
	new_store
	ok cairn create -o source="$SRC" -o compression=off plain
	ok cairn snapshot plain@p
	for m in MARKERCONTENT_cairn_7f3a MARKERNAME_secret MARKERXATTR; do
		grep -rlqa "$m" "$CAIRN_STORE" || fail "the grep cannot see $m in a plain store"
	done
	[ $fails = 0 ]
) || fail "plain store check"

# keyed ids: the same file, different ids under tank and other, and
# neither is the SHA-256 of the content
chunkfiles() { (cd "$CAIRN_STORE/.chunks" && find . -name '????????????????????????????????????????????????????????????????' -newer "$1" | sort); }
# the chunk files each root wrote for the one file
for ds in tank other; do
	ok mkroot "f$ds" "$PASS1" -o source="$XDIR/one"
done
mkdir -p "$XDIR/one" && cp "$XDIR/copy1/big.bin" "$XDIR/one/"
echo "a small file of its own" >"$XDIR/one/small"
sha=$(sha256sum "$XDIR/one/small" | cut -c1-64)
touch "$TESTDIR/t0" && sleep 0.01
ok cairn snapshot ftank@x
a=$(chunkfiles "$TESTDIR/t0")
touch "$TESTDIR/t1" && sleep 0.01
ok cairn snapshot fother@x
b=$(chunkfiles "$TESTDIR/t1")
[ -n "$a" ] && [ -n "$b" ] || fail "no new chunks written ($a / $b)"
common=$(comm -12 <(echo "$a") <(echo "$b"))
[ -z "$common" ] || fail "two roots share chunk ids: $common"
echo "$a$b" | grep -q "$sha" && fail "a keyed id equals the SHA-256 of the content"
# the check would see it: a plain dataset names that chunk by its SHA-256
ok cairn create -o source="$XDIR/one" fplain
ok cairn snapshot fplain@x
[ -e "$CAIRN_STORE/.chunks/${sha:0:4}/$sha" ] || fail "plain chunk of the small file not found"
done_test
