#!/bin/bash
# A writer waits up to 600 s for another writer's commit.  recv and gc stop
# on their first SIGINT/SIGTERM/SIGHUP; that must hold while they wait for
# the catalog's write lock too, not only once they get it.  Here another
# process holds the lock for a minute; the signal must end the wait within
# seconds, with "interrupted", exit 1 and nothing changed; once the lock is
# free the same command converges.  recv -s is the exception: after the
# signal it waits for the lock to record its resume token, then exits.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
new_store
B=$TESTDIR/b
ok "$CAIRN" -s "$B" init >/dev/null
use_xattr_dir
SRC=$XDIR/src
mkdir -p "$SRC/d"
head -c 300000 /dev/urandom >"$SRC/big"
echo small >"$SRC/d/f"
setfattr -n user.note -v kept "$SRC/d/f"
ok cairn create -o source="$SRC" ds
ok cairn snapshot ds@1 >/dev/null
cairn send ds@1 >"$TESTDIR/full" || fail "send"

# hold_lock DB: another process takes DB's write lock and keeps it (60 s).
hold_lock() {
	rm -f "$TESTDIR/held"
	python3 -c 'import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(60)' "$1" >"$TESTDIR/held" 2>&1 &
	HOLDER=$!
	for _ in $(seq 1 600); do
		grep -q held "$TESTDIR/held" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "the lock holder never took $1's lock: $(cat "$TESTDIR/held")"
}
release_lock() {
	kill "$HOLDER" 2>/dev/null
	wait "$HOLDER" 2>/dev/null
}

# signal_waiting SIG PID: PID must be sleeping on the lock; sends SIG.
signal_waiting() {
	wait_sleeping "$2" || fail "$1: $2 gone before it waited for the lock"
	sleep 0.5
	kill -0 "$2" 2>/dev/null || fail "$1: $2 did not wait for the lock"
	kill -"$1" "$2" || fail "$1: $2 gone before the signal"
}

# stop_waiting SIG PID: SIG must end PID's wait for the lock within 15 s
# (a wait for the holder would take a minute).
stop_waiting() {
	local sig=$1 pid=$2 gone=
	signal_waiting "$sig" "$pid"
	for _ in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || { gone=1; break; }
		sleep 0.05
	done
	[ -n "$gone" ] || fail "$sig: still waiting for the lock 15 s after the signal"
	wait "$pid"
	RC=$?
}

n=0
for sig in INT TERM HUP; do
	n=$((n + 1))
	hold_lock "$B/catalog.db"
	# A script's background job starts with SIGINT ignored: reset it.
	env --default-signal=INT "$CAIRN" -s "$B" recv "dst$n" <"$TESTDIR/full" 2>"$TESTDIR/err" &
	stop_waiting "$sig" $!
	release_lock
	[ "$RC" = 1 ] || fail "$sig: recv exit $RC ($(cat "$TESTDIR/err"))"
	grep -q "cairn: recv: dst$n: interrupted" "$TESTDIR/err" || fail "$sig: stderr: $(cat "$TESTDIR/err")"
	"$CAIRN" -s "$B" list -H -o name "dst$n" >/dev/null 2>&1 && fail "$sig: interrupted recv left dst$n"
	# Retry converges.
	"$CAIRN" -s "$B" recv "dst$n" <"$TESTDIR/full" || fail "$sig: recv after the lock was freed"
	"$CAIRN" -s "$B" restore "dst$n@1" "$XDIR/r$n" || fail "$sig: restore"
	same_tree "$SRC" "$XDIR/r$n"
done

# recv -s: the signal ends the receive, but the token is still recorded,
# which needs the lock: it waits for it, then exits with the resume hint.
hold_lock "$B/catalog.db"
env --default-signal=INT "$CAIRN" -s "$B" recv -s res <"$TESTDIR/full" 2>"$TESTDIR/err" &
pid=$!
signal_waiting INT $pid
sleep 1
kill -0 $pid 2>/dev/null || fail "recv -s exited without waiting to record its token: $(cat "$TESTDIR/err")"
release_lock
wait $pid
RC=$?
[ "$RC" = 1 ] || fail "recv -s exit $RC ($(cat "$TESTDIR/err"))"
grep -q "cairn: recv: res: interrupted" "$TESTDIR/err" || fail "recv -s stderr: $(cat "$TESTDIR/err")"
grep -q "partial state kept; resume with: cairn send -t " "$TESTDIR/err" ||
	fail "recv -s: no resume hint: $(cat "$TESTDIR/err")"
t=$("$CAIRN" -s "$B" get -H -o value receive_resume_token res 2>/dev/null)
[ -n "$t" ] && [ "$t" != - ] || fail "recv -s: no token"
cairn send -t "$t" | "$CAIRN" -s "$B" recv -s res || fail "resume after the lock was freed"
"$CAIRN" -s "$B" restore res@1 "$XDIR/rres" || fail "restore of the resumed receive"
same_tree "$SRC" "$XDIR/rres"

# gc: it sweeps without the lock, then waits for it to record its status.
"$CAIRN" -s "$B" destroy dst1@1 || fail "destroy"
"$CAIRN" -s "$B" config gc_atime_cutoff=0 || fail "config"
hold_lock "$B/catalog.db"
env --default-signal=INT "$CAIRN" -s "$B" gc 2>"$TESTDIR/err" >/dev/null &
stop_waiting INT $!
release_lock
[ "$RC" = 1 ] || fail "gc exit $RC ($(cat "$TESTDIR/err"))"
grep -q "status could not be saved in the catalog: interrupted while waiting for another writer" \
	"$TESTDIR/err" || fail "gc stderr: $(cat "$TESTDIR/err")"
"$CAIRN" -s "$B" gc >/dev/null || fail "gc after the lock was freed"
"$CAIRN" -s "$B" gc --status | grep -q . || fail "no gc status after the second gc"
"$CAIRN" -s "$B" verify >/dev/null || fail "verify after the interrupted gc"
done_test
