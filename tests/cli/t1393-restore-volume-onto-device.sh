#!/bin/bash
# A volume restores onto a block device only with --force, as onto a
# non-empty image file: without it the device's contents would be
# overwritten unasked, so the restore refuses, naming the device and the
# reason, and leaves it as it was.  A character device, FIFO or socket at
# the target is refused with or without --force (the FIFO without hanging
# in its open), and so is each as the target of a filesystem's restore.
# The target is judged again as it is opened: an empty image written to
# between the two (a shim writes it just before the open) is refused.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root for a loop device"; exit 77; }
new_store
random_volume 3000000 a
one_file_src
ok cairn create -o source="$SRC" fs
ok cairn snapshot fs@a

loop_target
if [ -n "$loop" ]; then
	fails_with 1 "$loop: target is a block device, whose contents would be overwritten (use --force)" \
		cairn restore vol@a "$loop"
	cmp "$TESTDIR/tgt.orig" "$loop" || fail "a refused restore wrote to the block device"
	fails_with 1 "$loop: Not a directory" cairn restore -f fs@a "$loop"
	ok cairn restore -f vol@a "$loop"
	cmp -n 3000000 "$TESTDIR/vol.img" "$loop" || fail "the block device holds other bytes"
	losetup -d "$loop"
fi

mknod "$TESTDIR/chr" c 1 3
mkfifo "$TESTDIR/fifo"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$TESTDIR/sock" ||
	fail "making a socket"
for t in chr fifo sock; do
	for f in "" -f; do
		fails_with 1 "$TESTDIR/$t: target is not a file or block device" \
			timeout 20 "$CAIRN" restore $f vol@a "$TESTDIR/$t"
		fails_with 1 "$TESTDIR/$t: Not a directory" timeout 20 "$CAIRN" restore $f fs@a "$TESTDIR/$t"
	done
done
[ "$(stat -c %F:%t:%T "$TESTDIR/chr")" = "character special file:1:3" ] || fail "the device changed"
[ -p "$TESTDIR/fifo" ] && [ -S "$TESTDIR/sock" ] || fail "the FIFO or socket changed"

: >"$TESTDIR/img"
build_shim run-before
rm -f "$TESTDIR/run.log"
out=$(env ASAN_OPTIONS="$SHIM_ASAN" LD_PRELOAD="$SHIM" RUN_CALL=open RUN_AT="$TESTDIR/img" \
	RUN_LOG="$TESTDIR/run.log" RUN_CMD="echo precious >'$TESTDIR/img'" \
	"$CAIRN" restore vol@a "$TESTDIR/img" 2>&1) && fail "a restore onto an image written meanwhile succeeded"
grep -q "^ran 0$" "$TESTDIR/run.log" 2>/dev/null || fail "the image was not written before the open"
[ "$out" = "cairn: restore: $TESTDIR/img: target exists and is not empty (use --force)" ] ||
	fail "the image written meanwhile: $out"
[ "$(cat "$TESTDIR/img")" = precious ] || fail "the image written meanwhile was overwritten"
done_test
