#!/bin/bash
# The main job, end to end: back up real system files into the default
# store, change a file, back up again, restore, and compare; then make an
# encrypted off-site copy in a second store through a cut transfer and
# sync, and restore from it with the key.
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

OFF=$WORK/offsite
offsite() { printf '$ cairn -s %s %s\n' "$OFF" "$*"; "$CAIRN" -s "$OFF" "$@"; }
say "the off-site copy: an encrypted dataset, sent raw to a second store that never sees its key"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/secret.key"
chmod 600 "$WORK/secret.key"
run create -o encryption=on -o keyformat=hex -o keylocation="file://$WORK/secret.key" \
	-o source="$WORK/src/include" secret
run snapshot secret@monday
offsite init
say "a link cut part way: the receiver keeps what it verified and a resume token"
HALF=$(("$("$CAIRN" send -w secret@monday | wc -c)" / 2))
printf '$ cairn send -w secret@monday | head -c %s | cairn -s %s recv -s offsite\n' "$HALF" "$OFF"
if "$CAIRN" send -w secret@monday 2>/dev/null | head -c "$HALF" | "$CAIRN" -s "$OFF" recv -s offsite; then
	echo "a cut stream was accepted!"; exit 1
fi
TOKEN=$("$CAIRN" -s "$OFF" get -H -o value receive_resume_token offsite)
echo "offsite's receive_resume_token: ${TOKEN:0:40}..."
say "sync finishes the cut transfer, then sends only what is new"
run sync -v secret "$OFF:offsite"
echo "changed on tuesday" >>"$WORK/src/include/cairn-demo.txt"
run snapshot secret@tuesday
run sync -v secret "$OFF:offsite"
offsite list -t all -o name,used,encryption,keystatus -r offsite
say "without the key the off-site store can check its chunks but not read them"
offsite verify -v offsite
printf '$ cairn -s %s restore offsite@tuesday %s\n' "$OFF" "$WORK/offsite-restore"
if "$CAIRN" -s "$OFF" restore offsite@tuesday "$WORK/offsite-restore" 2>"$WORK/err"; then
	echo "restored without the key!"; exit 1
fi
sed 's/^/  refused: /' "$WORK/err"
say "with the key (kept apart from the copy) the off-site copy restores in full"
offsite load-key -L "file://$WORK/secret.key" offsite
offsite restore offsite@tuesday "$WORK/offsite-restore"
diff -r --no-dereference "$WORK/src/include" "$WORK/offsite-restore" >/dev/null 2>&1 &&
	echo "the off-site restore is identical to the source" ||
	{ echo "the off-site restore differs!"; exit 1; }
offsite unload-key offsite
echo
echo "demo done: store in $CAIRN_STORE, restores in $WORK/restore and $WORK/old,"
echo "off-site copy in $OFF"
