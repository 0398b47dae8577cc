#!/bin/bash
# recv -n stopped by SIGTERM or SIGINT while it reads the stream: it says
# so, exits non-zero, removes its scratch directory from TMPDIR and leaves
# the store as it was.
. "$(dirname "$0")/lib.sh"
new_store
B=$TESTDIR/b
ok cairn -s "$B" init >/dev/null
export TMPDIR=$TESTDIR/tmp
mkdir -p "$TMPDIR" "$TESTDIR/src"
head -c 300000 /dev/urandom >"$TESTDIR/src/f"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn snapshot tank@1
cairn send tank@1 >"$TESTDIR/full" || fail "send"
for sig in TERM INT; do
	mkfifo "$TESTDIR/fifo"
	# a script's background job starts with SIGINT ignored: reset it
	env --default-signal=INT "$CAIRN" -s "$B" recv -n dst <"$TESTDIR/fifo" 2>"$TESTDIR/err" &
	pid=$!
	exec 3>"$TESTDIR/fifo"
	head -c 200000 "$TESTDIR/full" >&3
	# the race happened: the dry run is inside the stream, its scratch made
	for _ in $(seq 100); do
		[ -n "$(ls -A "$TMPDIR")" ] && break
		sleep 0.1
	done
	[ -n "$(ls -A "$TMPDIR")" ] || fail "$sig: no scratch directory while the dry run reads"
	kill -$sig $pid
	exec 3>&- # a receive that ignored the signal sees the stream end
	wait $pid
	rc=$?
	rm "$TESTDIR/fifo"
	[ $rc = 1 ] || fail "$sig: exit $rc, expected 1 ($(cat "$TESTDIR/err"))"
	grep -q "cairn: recv: dst: interrupted" "$TESTDIR/err" || fail "$sig: stderr: $(cat "$TESTDIR/err")"
	[ -z "$(ls -A "$TMPDIR")" ] || fail "$sig: scratch left in TMPDIR: $(ls -A "$TMPDIR")"
	cairn -s "$B" list dst >/dev/null 2>&1 && fail "$sig: dst exists after the dry run"
done
done_test
