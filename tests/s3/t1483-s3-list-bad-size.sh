#!/bin/bash
# ListObjectsV2 <Size> values were read with strtoull and never checked:
# "-5" became 2^64 - 5, "abc" 0, and a value over 64 bits saturated, so a
# broken or hostile listing passed for a sane one (tests/s3/faultproxy.py
# list-size:VALUE replaces the first entry's <Size>).  Each is now an
# error naming ListObjectsV2, the key and the value:
#  1. init --import fails for each bad value and leaves no store.
#  2. gc fails the same way and deletes nothing.
#  3. With the listing sane again both work.
. "$CAIRN_SRC/tests/cli/lib.sh"
. "$CAIRN_SRC/tests/s3/lib-s3.sh"
fault_proxy
proxied_store
ok cairn config gc_atime_cutoff=0
random_tank 500000
n=$(objects)
[ "$n" -ge 2 ] || fail "only $n objects"
I=$TESTDIR/imported

# 1. import over each bad <Size>
for v in -5 abc 18446744073709551616 99999999999999999999999999 " 7" "+7" ""; do
	echo "list-size:$v" >"$MODE"
	"$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" >/dev/null 2>"$TESTDIR/imp.err" &&
		fail "import over a listing with <Size>$v</Size> succeeded"
	echo pass >"$MODE"
	grep -q "ListObjectsV2: key $PFX/chunks/.*<Size> .*is not a byte count" "$TESTDIR/imp.err" ||
		fail "import over <Size>$v</Size> did not name the listing and the key: $(cat "$TESTDIR/imp.err")"
	[ -e "$I/cairn-store" ] && fail "a failed import left a store"
	rm -rf "$I"
done

# 2. gc over a bad <Size>
ok cairn destroy tank@1
echo "list-size:-1" >"$MODE"
cairn gc >/dev/null 2>"$TESTDIR/gc.err" && fail "gc over a listing with a negative <Size> succeeded"
echo pass >"$MODE"
grep -q "ListObjectsV2: key .*<Size> -1 is not a byte count" "$TESTDIR/gc.err" ||
	fail "gc did not name the listing and the key: $(cat "$TESTDIR/gc.err")"
[ "$(objects)" = "$n" ] || fail "objects went while the listing was bad: $(objects) of $n"

# 3. sane again
out=$("$CAIRN" -s "$I" init --import "s3://$BUCKET/$PFX" --endpoint "$EP" 2>&1) || fail "import again: $out"
[ "$(markers "$I")" = "$n" ] || fail "the import has $(markers "$I") markers for $n objects"
ok cairn gc >/dev/null
[ "$(objects)" = 0 ] || fail "$(objects) objects left after gc of a store with no snapshot"
done_test
