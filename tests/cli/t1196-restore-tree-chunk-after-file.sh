#!/bin/bash
# A tree stream chunk that cannot be read stops a restore: nothing after
# it can be known.  That must be what the command ends with, whatever
# failed before it.  (Before: when a file had already failed, say a data
# chunk missing, the command ended naming that one file alone, and the
# thousands of entries the restore never reached went unmentioned.)  The
# error names the tree chunk and the last entry restored; with one writer
# or several.  A volume whose tree chunk cannot be read says the same,
# not "vol@1: No such file or directory" as if the snapshot were missing,
# and leaves the image it would have replaced (--force) as it was.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/z"
# 0data comes first in the tree and has its own chunk; z's 8,000 empty
# files have none and make a tree stream of several chunks.
head -c 300000 /dev/urandom >"$SRC/0data"
(cd "$SRC/z" && seq -f "an-empty-file-with-a-long-name-%06g" 1 8000 | xargs touch)
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
data=$(find "$CAIRN_STORE/.chunks" -type f -size +200k)
[ "$(echo "$data" | grep -c .)" = 1 ] || fail "0data's chunk not found: $data"
# A tree chunk that is not the first: without it the restore stops after
# some of z's files.
tree=""
for c in $(find "$CAIRN_STORE/.chunks" -type f -size -200k); do
	mv "$c" "$TESTDIR/aside"
	rm -rf "$TESTDIR/probe"
	"$CAIRN" restore tank@1 "$TESTDIR/probe" 2>"$TESTDIR/err"
	mv "$TESTDIR/aside" "$c"
	n=$(find "$TESTDIR/probe/z" -type f 2>/dev/null | wc -l)
	if grep -q "tree stream chunk $(basename "$c")" "$TESTDIR/err" && [ "$n" -gt 100 ]; then
		tree=$c
		break
	fi
done
[ -n "$tree" ] || fail "no tree chunk after the first found"
mv "$data" "$TESTDIR/data.aside"
mv "$tree" "$TESTDIR/tree.aside"
for threads in 1 4; do
	rm -rf "$TESTDIR/r"
	CAIRN_RESTORE_THREADS=$threads "$CAIRN" restore tank@1 "$TESTDIR/r" 2>"$TESTDIR/err"
	rc=$?
	[ $rc = 1 ] || fail "$threads threads: exit $rc"
	n=$(find "$TESTDIR/r/z" -type f | wc -l)
	[ "$n" -gt 100 ] && [ "$n" -lt 8000 ] || fail "$threads threads: $n of z's files restored"
	grep -q "^cairn: restore: 0data: chunk $(basename "$data"): missing" "$TESTDIR/err" ||
		fail "$threads threads: 0data's missing chunk not reported: $(cat "$TESTDIR/err")"
	# the last line says the restore stopped, where, and why
	last=$(find "$TESTDIR/r/z" -type f -printf '%f\n' | LC_ALL=C sort | tail -n 1)
	tail -n 1 "$TESTDIR/err" | grep -q "tree stream chunk $(basename "$tree"): missing from the chunk store; the restore stopped after z/$last" ||
		fail "$threads threads: the stop is not what the restore ends with: $(cat "$TESTDIR/err")"
done
# the cause fixed, the same command with --force completes it
mv "$TESTDIR/data.aside" "$data"
mv "$TESTDIR/tree.aside" "$tree"
ok cairn restore -f tank@1 "$TESTDIR/r"
same_tree "$SRC" "$TESTDIR/r"

head -c 1000000 /dev/urandom >"$TESTDIR/vol.img"
ok cairn create -V -o source="$TESTDIR/vol.img" vol
before=$(find "$CAIRN_STORE/.chunks" -type f | LC_ALL=C sort)
ok cairn snapshot vol@1
vtree=""
for c in $(comm -13 <(echo "$before") <(find "$CAIRN_STORE/.chunks" -type f -size -20k | LC_ALL=C sort)); do
	mv "$c" "$TESTDIR/aside"
	rm -f "$TESTDIR/probe.img"
	"$CAIRN" restore vol@1 "$TESTDIR/probe.img" 2>/dev/null || vtree=$c
	mv "$TESTDIR/aside" "$c"
	[ -n "$vtree" ] && break
done
[ -n "$vtree" ] || fail "the volume's tree chunk not found"
mv "$vtree" "$TESTDIR/aside"
echo "an image kept" >"$TESTDIR/old.img"
fails_with 1 "^cairn: restore: tree stream chunk $(basename "$vtree"): missing from the chunk store; nothing was restored$" \
	cairn restore -f vol@1 "$TESTDIR/old.img"
[ "$(cat "$TESTDIR/old.img")" = "an image kept" ] || fail "the image was changed though nothing could be restored"
mv "$TESTDIR/aside" "$vtree"
ok cairn restore -f vol@1 "$TESTDIR/old.img"
cmp -s "$TESTDIR/vol.img" "$TESTDIR/old.img" || fail "the volume restored differs"
done_test
