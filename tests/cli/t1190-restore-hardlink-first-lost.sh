#!/bin/bash
# A hardlinked file whose first name cannot be created on restore (a
# directory in the way under --force) does not take its other names with
# it: the next name gets the content and the names after it link to that
# one, with one writing thread and with several.
. "$(dirname "$0")/lib.sh"
new_store
mkdir -p "$TESTDIR/src/d"
echo hi >"$TESTDIR/src/d/a"
ln "$TESTDIR/src/d/a" "$TESTDIR/src/d/b"
ln "$TESTDIR/src/d/a" "$TESTDIR/src/c"
touch -d 2001-02-03 "$TESTDIR/src/c"
chmod 0640 "$TESTDIR/src/c"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn snapshot tank@1
for threads in 1 2; do
	r=$TESTDIR/r$threads
	mkdir -p "$r/c/x"
	err=$(CAIRN_RESTORE_THREADS=$threads "$CAIRN" restore -f tank@1 "$r" 2>&1)
	rc=$?
	[ $rc = 1 ] || fail "threads=$threads: the blocked name gave exit $rc"
	echo "$err" | grep -q "c: a directory is in the way" || fail "threads=$threads: not reported: $err"
	echo "$err" | grep -q "d/a\|d/b" && fail "threads=$threads: other names failed: $err"
	[ "$(cat "$r/d/a" 2>/dev/null)" = hi ] || fail "threads=$threads: d/a lacks the content"
	ia=$(stat -c %i "$r/d/a" 2>/dev/null)
	[ -n "$ia" ] && [ "$ia" = "$(stat -c %i "$r/d/b" 2>/dev/null)" ] ||
		fail "threads=$threads: d/b is not a hardlink of d/a"
	[ "$(stat -c %a.%Y "$r/d/a")" = "$(stat -c %a.%Y "$TESTDIR/src/c")" ] ||
		fail "threads=$threads: d/a lacks the inode's mode and times: $(stat -c %a.%Y "$r/d/a")"
	[ -d "$r/c/x" ] || fail "threads=$threads: the directory in the way was touched"
done
done_test
