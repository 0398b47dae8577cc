#!/bin/bash
# A deep tree is backed up and restored whole: the walk recurses once per
# directory level, and a path of 4,096 bytes can be about 2,000 levels
# deep.  Its frame used to hold two or three PATH_MAX buffers (13 KB), so
# an 8 MB stack overflowed at about 600 levels and the backup died of
# SIGSEGV.  1,500 levels of "d" is a 3,000-byte path, within the format.
# Each level also holds a directory fd (see below).
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir "$SRC"
python3 - "$SRC" 1500 <<'PY' || fail "cannot make the deep tree"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(int(sys.argv[2])):
    os.mkdir("d", dir_fd=fd)
    sub = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = sub
with open(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o640, dir_fd=fd), "w") as f:
    f.write("at the bottom\n")
PY
ok cairn create -o source="$SRC" tank
# The walk holds a directory fd per level: with a soft limit of 1,024 (the
# usual one) the lower 500 levels were left out, "Too many open files".
# snapshot raises the soft limit to the hard one, as gc does.
if [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 2048 ]; then
	out=$(ulimit -Sn 1024 && "$CAIRN" snapshot tank@low 2>&1) ||
		fail "backup of a 1,500-level tree with a soft fd limit of 1,024: $(echo "$out" | tail -c 300)"
	ok cairn destroy tank@low
else
	echo "hard fd limit $(ulimit -Hn): the soft-limit check is skipped"
fi
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"
(ulimit -s 8192; "$CAIRN" snapshot tank@1) || fail "backup of a 1,500-level tree: exit $?"
(ulimit -s 8192; "$CAIRN" snapshot tank@2) || fail "incremental backup of a 1,500-level tree: exit $?"
ok cairn restore tank@2 "$TESTDIR/r"
# same_tree.py walks recursively (Python's limit is 1,000 frames): compare
# with find instead
list() { (cd "$1" && find . -printf '%y %m %s %T@ %p\n' | LC_ALL=C sort | md5sum); }
[ "$(list "$SRC")" = "$(list "$TESTDIR/r")" ] || fail "the restored deep tree differs"
leaf=$(find "$TESTDIR/r" -name leaf)
[ "$(cat "$leaf" 2>/dev/null)" = "at the bottom" ] || fail "the deepest file was not restored"
done_test
