#!/bin/bash
# A volume's target that is a symlink to nothing (or to itself) is not
# written through, as cp will not: someone who could plant the symlink
# would choose where the image goes.  The restore refuses it before
# touching anything, naming the target and the reason (not a bare "File
# exists" from the exclusive create), takes no hold, and leaves the
# symlink as it was.  A symlink to an existing image is judged as that
# image (empty: restored; non-empty: --force), and the image restores with
# full fidelity.
. "$(dirname "$0")/lib.sh"
new_store
random_volume 300000 1

ln -s "$TESTDIR/nothere" "$TESTDIR/dangling"
ln -s "$TESTDIR/loop" "$TESTDIR/loop"
for t in dangling loop; do
	fails_with 1 "$TESTDIR/$t: target is a symlink to nothing, not written through" \
		cairn restore vol@1 "$TESTDIR/$t"
	fails_with 1 "$TESTDIR/$t: target is a symlink to nothing, not written through" \
		cairn restore -f vol@1 "$TESTDIR/$t"
done
[ ! -e "$TESTDIR/nothere" ] || fail "the refused restore made the symlink's target"
[ "$(readlink "$TESTDIR/dangling")" = "$TESTDIR/nothere" ] || fail "the symlink changed"
[ -z "$(cairn holds -H vol@1)" ] || fail "a refused restore left a hold: $(cairn holds -H vol@1)"

: >"$TESTDIR/img"
ln -s "$TESTDIR/img" "$TESTDIR/to-img"
ok cairn restore vol@1 "$TESTDIR/to-img"
cmp "$TESTDIR/vol.img" "$TESTDIR/img" || fail "the image through the symlink differs"
fails_with 1 "$TESTDIR/to-img: target exists and is not empty (use --force)" \
	cairn restore vol@1 "$TESTDIR/to-img"
ok cairn restore -f vol@1 "$TESTDIR/to-img"
cmp "$TESTDIR/vol.img" "$TESTDIR/img" || fail "the image restored again differs"
[ -L "$TESTDIR/to-img" ] || fail "the symlink to the image was replaced"
done_test
