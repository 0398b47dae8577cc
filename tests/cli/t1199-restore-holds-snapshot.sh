#!/bin/bash
# A restore holds its snapshot while it runs, as send and mount do, so a
# destroy (a prune, say, by its timer) and a gc meanwhile cannot take the
# chunks it has yet to read.  (Before: the destroy went through, gc swept
# the snapshot's chunks, and the restore ended with every file it had not
# reached "missing from the chunk store".)  A plain destroy is refused;
# destroy -d marks it and the snapshot goes once the restore has ended.
# A user who can read the store but not write to it takes no hold: the
# restore says so and goes on.  strace slows the restore's opens, and
# once it has written a few files it is stopped (SIGSTOP) until the
# destroy and the gc are done (checked: it is still running after them,
# with files left to write).
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || fail "strace missing"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
for i in $(seq 10 49); do head -c 300000 /dev/urandom >"$SRC/f$i"; done
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@old
ok cairn config gc_atime_cutoff=0
R=$TESTDIR/r
CAIRN_RESTORE_THREADS=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o /dev/null -e trace=openat -e inject=openat:delay_exit=60000 \
	"$CAIRN" restore tank@old "$R" 2>"$TESTDIR/err" &
pid=$!
for _ in $(seq 1 300); do
	[ "$(find "$R" -type f 2>/dev/null | wc -l)" -ge 3 ] && break
	sleep 0.05
done
# stopped there, so that a loaded machine's slow gc still falls inside it
rpid=$(pgrep -P $pid)
[ -n "$rpid" ] && kill -STOP "$rpid" || fail "the restore could not be stopped"
n=$(find "$R" -type f 2>/dev/null | wc -l)
[ "$n" -ge 3 ] && [ "$n" -lt 40 ] || fail "the restore is not under way: $n files"
cairn holds tank@old | grep -q '\.restore-' || fail "no hold on the snapshot being restored: $(cairn holds tank@old 2>&1)"
fails_with 1 "^cairn: destroy: tank@old: snapshot is held (tags: \.restore-[0-9]*-[0-9]*-1)" cairn destroy tank@old
ok cairn destroy -d tank@old
ok cairn gc >/dev/null
kill -0 $pid 2>/dev/null || fail "the restore ended before the destroy and gc were done"
n=$(find "$R" -type f | wc -l)
[ "$n" -lt 40 ] || fail "the restore had written every file before gc ran"
kill -CONT "$rpid"
wait $pid || fail "the restore failed: $(cat "$TESTDIR/err")"
same_tree "$SRC" "$R"
cairn list -t snapshot -H -o name tank@old >/dev/null 2>&1 &&
	fail "tank@old, marked by destroy -d, outlived the restore's hold"

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	ok cairn snapshot tank@new
	U=$(mktemp -d /tmp/cairn-user.XXXXXX)
	chown nobody "$U"
	chmod 755 "$TESTDIR"
	chmod -R go+rX "$CAIRN_STORE"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" restore tank@new "$U/r" 2>&1) ||
		fail "a restore by a user who cannot write to the store failed: $out"
	echo "$out" | grep -q "^cairn: restore: tank@new: not held while restored.*Permission denied" ||
		fail "the restore without a hold does not say so: $out"
	[ "$(manifest "$SRC")" = "$(manifest "$U/r")" ] || fail "the user's restore differs"
	rm -rf "$U"
fi
done_test
