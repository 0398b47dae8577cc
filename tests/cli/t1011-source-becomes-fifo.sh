#!/bin/bash
# A source file that becomes a FIFO between the walk's stat and the read
# must not hang the backup: the open never waits for a writer, and the
# object is left out naming the path and the reason.  A volume whose
# source is a FIFO is refused the same way, and a source that is a
# symlink is refused saying so.  Commands run under `timeout`:
# a hang is exit 124, a failure.
# The race: a.txt (tiny) waits in its bundle group until the walk ends,
# while the walk reads b.bin; a.txt is swapped for a FIFO once b.bin is
# open.  The test asserts the swap came before a.txt was read (the warning
# names it), and retries the run a few times if it did not.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 600000000 /dev/zero >"$SRC/b.bin"
ok cairn create -o source="$SRC" ds
raced=0
for try in 1 2 3 4 5; do
	rm -f "$SRC/a.txt"
	echo small >"$SRC/a.txt"
	timeout 60 "$CAIRN" snapshot ds@try$try >"$TESTDIR/out" 2>&1 &
	pid=$!
	# the snapshot process is the timeout's child
	for _ in $(seq 1 2000); do
		cp=$(pgrep -P $pid | head -1)
		[ -n "$cp" ] && ls -l /proc/"$cp"/fd 2>/dev/null | grep -q "b.bin" && break
		sleep 0.005
	done
	rm -f "$SRC/a.txt" && mkfifo "$SRC/a.txt"
	wait $pid
	rc=$?
	[ $rc -ne 124 ] || fail "the snapshot hung on a FIFO (try $try)"
	if grep -q "a.txt: replaced by another file or no longer a regular file" "$TESTDIR/out"; then
		raced=1
		[ $rc -ne 0 ] || fail "a file left out, and the exit code is 0"
		cairn list -H -o name ds@try$try >/dev/null || fail "the snapshot was not kept"
		break
	fi
	[ $rc -eq 124 ] && break
done
[ $raced -eq 1 ] || fail "a.txt was never swapped before it was read: the race did not happen"
rm -f "$SRC/a.txt"

# A volume whose source is a FIFO: refused at once, naming the source.
mkfifo "$TESTDIR/vfifo"
ok cairn create -V -o source="$TESTDIR/vfifo" vol
err=$(timeout 30 "$CAIRN" snapshot vol@1 2>&1)
rc=$?
[ $rc -ne 124 ] || fail "the snapshot of a FIFO volume hung"
[ $rc -ne 0 ] || fail "the snapshot of a FIFO volume succeeded"
echo "$err" | grep -q "vfifo is not a file or block device" || fail "FIFO volume: $err"

# A source that is a symlink to a directory: the walk follows no symlink,
# and the message says that is why (not "Not a directory").
mkdir -p "$TESTDIR/real" && ln -s "$TESTDIR/real" "$TESTDIR/link"
ok cairn create -o source="$TESTDIR/link" viasym
fails_with 1 "link is a symlink (set source to the path it points to)" cairn snapshot viasym@1
done_test
