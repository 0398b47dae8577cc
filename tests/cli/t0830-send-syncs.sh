#!/bin/bash
# The holds of send -R are batched (illumos' fix, one sync task per batch):
# the syncs a send makes do not grow with the number of snapshots.  Counted
# with strace -f over fsync/fdatasync/syncfs/sync/sync_file_range for
#   11 datasets x 8 snapshots  (the reference's case)  and
#  101 datasets x 100 snapshots.
# "commit syncs" are the syncs of the catalog WAL that follow written WAL
# frames, i.e. one per committed write transaction: exactly 2 (the hold
# and the release) whatever the count.  The others are SQLite's WAL
# housekeeping: a WAL restart (its header, and the directory) and a
# checkpoint at close, present or not depending on the WAL's state when
# the send starts (not on the snapshot count): at most 4 more.
# send -n (no holds) must not sync at all.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || { echo "strace missing"; exit 77; }
# An ASan build is not traced (its shadow memory and interceptors change
# the syscalls): the counting legs are skipped there, visibly; the
# holds-during-send leg still runs.
ASAN=
if [ "${CAIRN_ASAN:-}" = 1 ] || nm "$CAIRN" 2>/dev/null | grep -q __asan_init ||
	nm -D "$CAIRN" 2>/dev/null | grep -q __asan_init; then
	ASAN=1
	echo "SKIP (ASan build): sync counting under strace"
fi
strace -f -o /dev/null true 2>/dev/null || { echo "strace cannot trace here"; exit 77; }
new_store

# build PARENT NCHILD NSNAP: PARENT with NCHILD children, NSNAP snapshot -r
build() {
	local p=$1 nc=$2 ns=$3
	mkdir -p "$TESTDIR/src/$p"
	echo "$p" >"$TESTDIR/src/$p/f"
	cairn create -o source="$TESTDIR/src/$p" "$p" || fail "create $p"
	for i in $(seq 1 "$nc"); do
		mkdir -p "$TESTDIR/src/$p/site$i"
		echo "$i" >"$TESTDIR/src/$p/site$i/f"
		cairn create "$p/site$i" || fail "create $p/site$i"
	done
	for s in $(seq 1 "$ns"); do
		cairn snapshot -r "$p@s$s" || fail "snapshot -r $p@s$s"
	done
}

# syncs ARGS...: "TOTAL COMMITS" of `cairn ARGS` (stdout to /dev/null)
syncs() {
	strace -f -y -o "$TESTDIR/trace" \
		-e trace=fsync,fdatasync,syncfs,sync,sync_file_range,msync,pwrite64,write \
		"$CAIRN" "$@" >/dev/null 2>"$TESTDIR/err" || {
		echo "-1 -1" # (runs in $(...): the comparisons below fail)
		echo "cairn $* failed: $(cat "$TESTDIR/err")" >&2
		return
	}
	awk '
		/pwrite64\([0-9]+<[^>]*-wal>/ && !/, 32, 0\) *=/ { dirty = 1 }
		/ (fsync|fdatasync|syncfs|sync_file_range|msync)\(/ || / sync\(\)/ {
			total++
			if ($0 ~ /-wal>/) { if (dirty) commits++; dirty = 0 }
		}
		END { print total + 0, commits + 0 }' "$TESTDIR/trace"
}

t0=$SECONDS
build test 10 8 # 11 datasets x 8 snapshots
build big 100 100 # 101 datasets x 100 snapshots
echo "built 11x8 and 101x100 in $((SECONDS - t0)) s"
[ "$(cairn list -H -t snapshot -r -o name test | wc -l)" = 88 ] || fail "not 88 snapshots"
[ "$(cairn list -H -t snapshot -r -o name big | wc -l)" = 10100 ] || fail "not 10100 snapshots"

if [ -z "$ASAN" ]; then
	read -r small_total small_commits <<<"$(syncs send -R test@s8)"
	read -r big_total big_commits <<<"$(syncs send -R big@s100)"
	read -r dry_total dry_commits <<<"$(syncs send -n -R big@s100)"
	read -r inc_total inc_commits <<<"$(syncs send -R -I @s1 big@s100)"
	echo "send -R  11x8:    $small_total syncs, $small_commits commit syncs"
	echo "send -R  101x100: $big_total syncs, $big_commits commit syncs"
	echo "send -R -I 101x100: $inc_total syncs, $inc_commits commit syncs"
	echo "send -n -R 101x100: $dry_total syncs"
	[ "$small_commits" = 2 ] || fail "send -R of 88 snapshots: $small_commits commit syncs, expected 2 (one hold, one release)"
	[ "$big_commits" = 2 ] || fail "send -R of 10100 snapshots: $big_commits commit syncs, expected 2"
	[ "$inc_commits" = 2 ] || fail "send -R -I of 10100 snapshots: $inc_commits commit syncs, expected 2"
	for n in "$small_total 88" "$big_total 10100" "$inc_total 10100"; do
		set -- $n
		[ "$1" -le 6 ] || fail "send -R of $2 snapshots makes $1 syncs (2 commits + at most 4 of WAL housekeeping)"
	done
	[ "$dry_total" = 0 ] || fail "send -n made $dry_total syncs"
fi

# the holds were all there during the send, and are all gone
# (the reader reads only once the holds were counted)
command -v sqlite3 >/dev/null || fail "sqlite3 missing (scripts/deps.sh installs it)"
rm -f "$TESTDIR/go"
cairn send -R big@s100 | { while [ ! -e "$TESTDIR/go" ]; do sleep 0.05; done; cat >/dev/null; } &
held=0
for _ in $(seq 1 600); do
	held=$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT COUNT(*) FROM hold" 2>/dev/null || echo 0)
	[ "$held" = 10100 ] && break
	sleep 0.1
done
: >"$TESTDIR/go"
wait
[ "$held" = 10100 ] || fail "$held holds seen during the send of 10100 snapshots (expected all 10100)"
[ -z "$(cairn holds -r -H big@s1)" ] || fail "holds left after send"

# for comparison: the same holds through `cairn hold -r` and `release -r`:
# one command each, so one commit each, whatever the count
if [ -z "$ASAN" ]; then
	read -r h_total h_commits <<<"$(syncs hold -r keep big@s1 big@s50 big@s100)"
	read -r r_total r_commits <<<"$(syncs release -r keep big@s1 big@s50 big@s100)"
	echo "hold -r (303 holds): $h_total syncs, $h_commits commits; release -r: $r_total syncs, $r_commits commits"
	[ "$h_commits" = 1 ] || fail "hold -r of 303 snapshots: $h_commits commits, expected 1"
	[ "$r_commits" = 1 ] || fail "release -r of 303 snapshots: $r_commits commits, expected 1"
	[ "$h_total" -le 5 ] || fail "hold -r makes $h_total syncs (1 commit + at most 4 of WAL housekeeping)"
	[ "$r_total" -le 5 ] || fail "release -r makes $r_total syncs (1 commit + at most 4 of WAL housekeeping)"
fi
done_test
