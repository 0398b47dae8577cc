#!/bin/bash
# A file written in place while the backup reads it (a database, a disk
# image) may be recorded with old and new bytes mixed, and was, without a
# word.  Now its mtime is compared at the open and after the read: one that
# moved while the file did not grow is reported ("written while it was
# read ... (recorded as read)"), the file stays in the snapshot as read and
# the snapshot succeeds (exit 0), and the next backup reads it again.  A
# file appended to while it is read (a log) is stored up to its size at the
# stat without a warning.  Small files (read with their bundle) and large
# ones take different paths to the read; both are checked.  An LD_PRELOAD
# shim makes the write at the first read of the file.
. "$(dirname "$0")/lib.sh"
new_store
R=$TESTDIR/restored
mkdir -p "$R"
build_shim torn-write
mk_src() {
	mkdir -p "$TESTDIR/$1"
	echo data >"$TESTDIR/$1/other"
	ok cairn create -o source="$TESTDIR/$1" "$1"
}

# written in place: reported, kept, exit 0
for kind in small big; do
	mk_src "rw$kind"
	if [ $kind = small ]; then
		head -c 3000 /dev/zero | tr '\0' a >"$TESTDIR/rw$kind/db-file"
	else
		head -c 3000000 /dev/zero | tr '\0' a >"$TESTDIR/rw$kind/db-file"
	fi
	shimmed "rw$kind@one" "rewrote db-file" TORN_NAME=db-file TORN_MODE=rewrite
	[ $rc = 0 ] || fail "rw$kind@one: a file written while read made the snapshot exit $rc: $out"
	echo "$out" | grep -q "rw$kind/db-file: written while it was read.*(recorded as read)" ||
		fail "rw$kind@one: the write during the read is not reported: $out"
	ok cairn restore "rw$kind@one" "$R/rw$kind"
	[ "$(stat -c %s "$R/rw$kind/db-file")" = "$(stat -c %s "$TESTDIR/rw$kind/db-file")" ] ||
		fail "rw$kind: the file written while read is not in the snapshot"
	# the next backup reads it again and records it as it is
	out=$(cairn snapshot "rw$kind@two" 2>&1) || fail "rw$kind@two: $out"
	[ -z "$out" ] || fail "rw$kind@two: undisturbed backup reported: $out"
	ok cairn restore "rw$kind@two" "$R/rw$kind-two"
	cmp -s "$TESTDIR/rw$kind/db-file" "$R/rw$kind-two/db-file" || fail "rw$kind@two: not read again"
done

# appended to: no warning, the content as it was at the stat
for kind in small big; do
	mk_src "ap$kind"
	if [ $kind = small ]; then
		head -c 3000 /dev/urandom | base64 >"$TESTDIR/ap$kind/app.log"
	else
		head -c 3000000 /dev/urandom | base64 >"$TESTDIR/ap$kind/app.log"
	fi
	cp "$TESTDIR/ap$kind/app.log" "$TESTDIR/ap$kind.before"
	shimmed "ap$kind@one" "appended app.log" TORN_NAME=app.log TORN_MODE=append
	[ $rc = 0 ] || fail "ap$kind@one: exit $rc: $out"
	[ -z "$out" ] || fail "ap$kind@one: a log appended to while read was reported: $out"
	ok cairn restore "ap$kind@one" "$R/ap$kind"
	cmp -s "$TESTDIR/ap$kind.before" "$R/ap$kind/app.log" ||
		fail "ap$kind: the log is not stored as it was at the stat"
done
done_test
