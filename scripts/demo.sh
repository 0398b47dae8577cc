#!/bin/bash
# The main job, end to end: back up real system files into the default
# store, change a file, back up again, restore, and compare.
set -eu
cd "$(dirname "$0")/.."
CAIRN=$PWD/build/cairn
WORK=${CAIRN_DEMO_DIR:-/tmp/cairn-demo}
export CAIRN_STORE=${CAIRN_STORE:-$WORK/store}
rm -rf "$WORK"
mkdir -p "$WORK/src"
say() { printf '\n== %s\n' "$*"; }
run() { printf '$ cairn %s\n' "$*"; "$CAIRN" "$@"; }

say "copying real system files into $WORK/src (a source we may change)"
cp -a /usr/include "$WORK/src/include"
cp -a /etc "$WORK/src/etc" 2>/dev/null || true
du -sh "$WORK/src"

say "creating the store $CAIRN_STORE and a dataset whose source is that tree"
run init
run create -o source="$WORK/src" demo
run create demo/include
run list

say "first backup (every file read, chunked, compressed, deduplicated)"
run snapshot -v demo@first
say "unchanged backup (nothing re-read: same size, mtime, ctime, inode)"
run snapshot -v demo@second
say "change one file and add one, then back up the whole hierarchy at once"
echo "# changed by the cairn demo" >>"$WORK/src/include/stdio.h"
echo "new file" >"$WORK/src/include/cairn-demo.txt"
run snapshot -r -v demo@third
run list -t all

say "restore demo@third and compare it with the source"
run restore -v demo@third "$WORK/restore"
diff -r --no-dereference "$WORK/src" "$WORK/restore" >/dev/null 2>&1 &&
	echo "restored tree is identical to the source" ||
	{ echo "restored tree differs!"; exit 1; }
say "restore one file from demo@first: the version before the change"
run restore demo@first "$WORK/old" include/stdio.h
if cmp -s "$WORK/old/include/stdio.h" /usr/include/stdio.h; then
	echo "include/stdio.h from demo@first matches the original"
else
	echo "old version differs!"; exit 1
fi
say "store size on disk"
du -sh "$CAIRN_STORE"
echo
echo "demo done: store in $CAIRN_STORE, restores in $WORK/restore and $WORK/old"
