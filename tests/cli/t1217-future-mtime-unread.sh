#!/bin/bash
# A file whose mtime was set into the future (touch -d, an archive made on
# a machine whose clock ran ahead) counted as racy (DESIGN.md, "Writing a
# snapshot") as long as its mtime was not older than the backup's start:
# every backup read it again, until that date.  A write stamps the current
# time, so such an mtime cannot hide one (a write would move it back): now
# an mtime beyond the clock's reach does not make a file racy, and the
# unchanged backup reads nothing.  A file whose ctime is in the backup's
# tick is still racy (t1212).
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
head -c 3000000 /dev/urandom >"$SRC/future-big"
echo "small file from the future" >"$SRC/future-small"
echo "a plain one" >"$SRC/plain"
touch -d '2099-01-01 00:00:00' "$SRC/future-big" "$SRC/future-small"
ok cairn create -o source="$SRC" tank
past_racy_tick
ok cairn snapshot tank@one
out=$(cairn snapshot -v -p tank@two 2>&1) || fail "tank@two: $out"
read_b=$(echo "$out" | sed -n 's/^[0-9]* files, \([0-9]*\) read,.*/\1/p')
[ "$read_b" = 0 ] || fail "the unchanged backup read '$read_b' bytes (files with future mtimes): $out"
# and a write to one is still seen: its mtime moves back to now
echo "written" >>"$SRC/future-small"
ok cairn snapshot tank@three
ok cairn restore tank@three "$TESTDIR/r"
cmp -s "$SRC/future-small" "$TESTDIR/r/future-small" || fail "the write to future-small was missed"
done_test
