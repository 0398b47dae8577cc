#!/bin/bash
# A receive commits a -I stream group by group; between two commits another
# process may change the target.  The next group is checked against the
# target as it is then, not as the receive last saw it: when the snapshot
# its incremental is based on was destroyed meanwhile, it is refused.
. "$(dirname "$0")/lib.sh"
new_store
B=$TESTDIR/b
ok cairn -s "$B" init >/dev/null
mkdir "$TESTDIR/src"
echo 0 >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" tank
for n in 1 2 3; do
	echo $n >>"$TESTDIR/src/f"
	ok cairn snapshot "tank@$n"
done
cairn send tank@1 >"$TESTDIR/full1" || fail "send full"
cairn send -I tank@1 tank@3 >"$TESTDIR/I13" || fail "send -I"
ok cairn -s "$B" recv dst <"$TESTDIR/full1"
# Writes the stream but its last byte, waits until dst@2 is committed
# (the receive then waits inside the last group), destroys dst@2, then
# writes the last byte.
feed() {
	python3 - "$TESTDIR/I13" "$TESTDIR/err" "$CAIRN" "$B" <<'PY'
import sys, time, subprocess
data = open(sys.argv[1], 'rb').read()
out = sys.stdout.buffer
out.write(data[:-1]); out.flush()
deadline = time.time() + 120
while "received dst@2" not in open(sys.argv[2]).read() and time.time() < deadline:
    time.sleep(0.05)
r = subprocess.run([sys.argv[3], "-s", sys.argv[4], "destroy", "dst@2"])
open(sys.argv[2] + ".destroy", "w").write(str(r.returncode))
out.write(data[-1:]); out.flush()
PY
}
: >"$TESTDIR/err"
feed | cairn -s "$B" recv -v dst 2>>"$TESTDIR/err"
rc=$?
# the race happened: dst@2 was received, then destroyed by the other process
grep -q "received dst@2" "$TESTDIR/err" || fail "dst@2 was not received: $(cat "$TESTDIR/err")"
[ "$(cat "$TESTDIR/err.destroy" 2>/dev/null)" = 0 ] || fail "the concurrent destroy failed"
[ $rc = 1 ] || fail "recv exit $rc, expected 1: $(cat "$TESTDIR/err")"
grep -q "incremental source (guid [0-9]*) is not on the target" "$TESTDIR/err" ||
	fail "expected the missing source refusal: $(cat "$TESTDIR/err")"
snaps=$(cairn -s "$B" list -H -t snapshot -o name) || fail "list"
[ "$snaps" = "dst@1" ] || fail "expected only dst@1, have: $snaps"
done_test
