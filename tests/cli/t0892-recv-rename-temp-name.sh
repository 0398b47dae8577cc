#!/bin/bash
# -R renames go through temporary names on the receiver (so that swapped
# names work).  A snapshot that already has the name the receiver would
# pick as a temporary one, on the target or in the stream, must not break
# the receive: the temporary names are chosen so they cannot collide.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
ca() { "$CAIRN" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
list() { "$CAIRN" -s "$1" list -H -p -t snapshot -r -o name,guid "$2" | sed "s|^$2\([@/]\)|X\1|"; }
S=$TESTDIR/src
mkdir -p "$S/tank/a"
echo 1 >"$S/tank/f" && echo 1 >"$S/tank/a/f"
ok ca create -o source="$S/tank" tank
ok ca create -o source="$S/tank/a" tank/a
# names a receiver might use for its temporary renames, on both sides
for s in x y recv-rename-0 recv-rename-1 recv-rename-2 .recv-rename-0 z; do
	echo "$s" >>"$S/tank/f"
	ok ca snapshot -r "tank@$s"
done
ca send -R tank@z | cb recv bk || fail "recv -R"
[ "$(list "$CAIRN_STORE" tank)" = "$(list "$B" bk)" ] || fail "first -R receive differs"

# swap x and y, rename z, and rename another snapshot onto a name that
# looks temporary (freed first)
ok ca rename -r tank@x tank@tmp
ok ca rename -r tank@y tank@x
ok ca rename -r tank@tmp tank@y
ok ca destroy -r tank@recv-rename-2
ok ca rename -r tank@z tank@recv-rename-2
ok ca snapshot -r tank@w
ca send -R -I @recv-rename-2 tank@w >"$TESTDIR/s1" || fail "send -R -I"
# The dry run names each rename from its old name to its new one.
dry=$(cb recv -n -v -F bk <"$TESTDIR/s1" 2>&1) || fail "recv -n -v: $dry"
for want in "bk@x to bk@y" "bk@y to bk@x" "bk@z to bk@recv-rename-2"; do
	echo "$dry" | grep -qx "would rename $want" || fail "recv -n -v did not say 'would rename $want': $dry"
done
out=$(cb recv -v -F bk <"$TESTDIR/s1" 2>&1) || fail "recv -R with renames onto and around temporary-looking names: $out"
[ "$(list "$CAIRN_STORE" tank)" = "$(list "$B" bk)" ] || {
	fail "renames not applied exactly"
	diff <(list "$CAIRN_STORE" tank) <(list "$B" bk) >&2
}
for want in "bk@x to bk@y" "bk@y to bk@x" "bk@z to bk@recv-rename-2"; do
	echo "$out" | grep -qx "renamed $want" || fail "recv -v did not report 'renamed $want': $out"
done
done_test
