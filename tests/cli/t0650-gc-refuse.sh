#!/bin/bash
# GC refuses to run where it would be unsafe, and stops cleanly on signals:
# - a filesystem that does not keep atimes (simulated: CAIRN_TEST_NO_ATIME=1);
# - a second GC while one runs ("GC already running"), both with the lock
#   held by another process and with two real GCs started together;
# - SIGINT and SIGTERM stop a running GC: exit 1 "interrupted", nothing
#   referenced is removed, and the next GC completes.
# No sleeps stand in for ordering: the test waits on conditions (the lock
# is in /proc/locks, GC's signal handlers are installed, the sweep has
# removed its first chunk).
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
cp -a /usr/include/linux/[a-d]*.h "$SRC/"
head -c 2000000 /dev/urandom >"$SRC/big.bin"
ok cairn create -o source="$SRC" -o chunksize=64K tank
ok cairn snapshot tank@1
head -c 2000000 /dev/urandom >"$SRC/big.bin"
ok cairn snapshot tank@2
ok cairn destroy tank@1
ok cairn config gc_atime_cutoff=0
nchunks() { find "$CAIRN_STORE/.chunks" -type f | wc -l; }
before=$(nchunks)

# No atimes: refused before anything is marked, with the reason.
fails_with 1 "access times" env CAIRN_TEST_NO_ATIME=1 "$CAIRN" gc
fails_with 1 "access times" env CAIRN_TEST_NO_ATIME=1 "$CAIRN" gc -n
[ "$(nchunks)" = "$before" ] || fail "refused GC removed chunks"

LOCK=$CAIRN_STORE/gc.lock
# lock_held: someone holds GC's flock (read from /proc/locks, which does not
# take the lock itself).
lock_held() {
	local ino
	ino=$(stat -c %i "$LOCK" 2>/dev/null) || return 1
	grep -qE "FLOCK .* [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks
}
# wait_until CMD...: polls CMD until it succeeds (bounded by the test's
# timeout in tests/run.sh).
wait_until() { until "$@"; do sleep 0.01; done; }

# The lock held by someone else, until the checks are done.
mkfifo "$TESTDIR/release"
flock "$LOCK" sh -c 'read x <"$1"' sh "$TESTDIR/release" &
holder=$!
wait_until lock_held
fails_with 1 "GC already running" "$CAIRN" gc
fails_with 1 "GC already running" "$CAIRN" gc -n
echo go >"$TESTDIR/release"
wait $holder
[ "$(nchunks)" = "$before" ] || fail "refused GC removed chunks"

# Two GCs at once: one runs, the other is refused.  The sweep pause makes
# the first one last; the second starts once the first holds the lock.
CAIRN_TEST_SWEEP_DELAY_US=200000 "$CAIRN" gc >"$TESTDIR/g1" 2>&1 &
g1=$!
until lock_held || ! kill -0 $g1 2>/dev/null; do sleep 0.01; done
lock_held || fail "the first GC ended before the second started: $(cat "$TESTDIR/g1")"
"$CAIRN" gc >"$TESTDIR/g2" 2>&1
r2=$?
wait $g1
r1=$?
[ $r1 = 0 ] || fail "first GC failed: $(cat "$TESTDIR/g1")"
[ $r2 = 1 ] && grep -q "GC already running" "$TESTDIR/g2" || fail "second GC: exit $r2: $(cat "$TESTDIR/g2")"
ok cairn verify
[ "$(nchunks)" -lt "$before" ] || fail "GC collected nothing"

# Signals: stop cleanly at the next safe point.
for sig in INT TERM; do
	head -c 2000000 /dev/urandom >"$SRC/big.bin"
	ok cairn snapshot tank@s$sig
	ok cairn prune --keep-last 1 tank >/dev/null
	garbage=$("$CAIRN" gc -n -v | sed -n 's/^would remove \(\.chunks\/[^ ]*\) .*/\1/p')
	[ "$(echo "$garbage" | wc -w)" -ge 3 ] || fail "SIG$sig: too little garbage: $garbage"
	CAIRN_TEST_SWEEP_DELAY_US=100000 "$CAIRN" gc >"$TESTDIR/gs" 2>&1 &
	pid=$!
	# inside the sweep: the first garbage chunk is gone, others are left
	all_there() { local g; for g in $garbage; do [ -e "$CAIRN_STORE/$g" ] || return 1; done; }
	while kill -0 $pid 2>/dev/null && all_there; do sleep 0.01; done
	kill -$sig $pid
	wait $pid
	rc=$?
	[ $rc = 1 ] || fail "SIG$sig: exit $rc"
	grep -q "interrupted" "$TESTDIR/gs" || fail "SIG$sig: $(cat "$TESTDIR/gs")"
	ok cairn verify
	ok cairn gc
	ok cairn verify
done
out=$(cairn gc -n)
echo "$out" | grep -q 'would remove 0 chunks' || fail "garbage left: $out"
done_test
