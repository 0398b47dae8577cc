#!/bin/bash
# sync -n writes nothing on either side.  It asks the destination which
# chunks it has (to say how much would be sent), and that question used to
# touch every chunk it found there (cairn have, or the local store's
# chunks_present refreshing their access time: a write, made for a receive
# that a dry run never runs).  Now the dry run asks with `have -n`, which
# only looks.  Checked on both stores, every file's times and size,
# locally and over (a stand-in for) ssh.
. "$(dirname "$0")/lib.sh"
cp "$CAIRN" "$TESTDIR/cairn.bin" && CAIRN=$TESTDIR/cairn.bin
A=$CAIRN_STORE T=$TESTDIR/src
new_store # ca runs cairn on it, cb on the second store, $B
second_store
mkdir -p "$T/w"
head -c 300000 /dev/urandom >"$T/f"
head -c 300000 /dev/urandom >"$T/w/g"
ok ca create -o source="$T" tank
ok ca create tank/w
ok ca snapshot -r tank@1
ok ca sync -R tank "$B:bk"
head -c 300000 /dev/urandom >"$T/f2"
ok ca snapshot -r tank@2
cat >"$TESTDIR/ssh" <<SH
#!/bin/bash
shift
echo "\$*" >>"$TESTDIR/ssh.log"
exec sh -c "\$*"
SH
chmod +x "$TESTDIR/ssh"
# state DIR: every file's path, size and modification time (ns), and the
# access time of every chunk file (what a touch refreshes; reading files
# may change other access times, and a source's chunks are read).  Not
# catalog.db-shm: SQLite's shared memory, which every reader writes to.
state() {
	find "$1" ! -name catalog.db-shm -printf '%P %s %T@\n' | LC_ALL=C sort
	[ "$1" = "$B" ] && find "$1/.chunks" -type f -printf '%P %A@\n' | LC_ALL=C sort
}
sleep 1.1 # a touch now changes a time at 1 s resolution too
before_a=$(state "$A") before_b=$(state "$B")
out=$(ca sync -R -n tank "$B:bk" 2>&1) || fail "sync -n (local): $out"
echo "$out" | grep -q "^would sync tank@2 @1 -> bk: .* chunks already there" || fail "sync -n (local) said: $out"
[ "$(state "$B")" = "$before_b" ] || fail "BUG: sync -n (local) wrote to the destination store: $(diff <(echo "$before_b") <(state "$B") | head -4)"
[ "$(state "$A")" = "$before_a" ] || fail "sync -n (local) wrote to the source store: $(diff <(echo "$before_a") <(state "$A") | head -4)"
out=$(CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$CAIRN ca sync -R --dry-run tank "far:$B:bk" 2>&1) || fail "sync -n (ssh): $out"
echo "$out" | grep -q "^would sync tank@2 @1 -> bk: .* chunks already there" || fail "sync -n (ssh) said: $out"
[ "$(state "$B")" = "$before_b" ] || fail "BUG: sync -n (ssh) wrote to the destination store: $(diff <(echo "$before_b") <(state "$B") | head -4)"
[ "$(state "$A")" = "$before_a" ] || fail "sync -n (ssh) wrote to the source store: $(diff <(echo "$before_a") <(state "$A") | head -4)"
grep -q "'have' '-n'" "$TESTDIR/ssh.log" || fail "the dry run did not ask with have -n: $(cat "$TESTDIR/ssh.log")"
# the real sync (have without -n) writes and touches
CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$CAIRN ok ca sync -R tank "far:$B:bk"
[ "$(state "$B")" != "$before_b" ] || fail "the real sync changed nothing there?"
[ "$(cb list -H -p -o guid bk@2)" = "$(ca list -H -p -o guid tank@2)" ] || fail "the real sync after the dry runs"
# A far side whose cairn predates have -n (its have takes no option):
# sync -n says so, and does not say that running it again would help.
cat >"$TESTDIR/oldcairn" <<SH
#!/bin/sh
[ "\$3" = have ] && [ \$# -gt 3 ] && { echo "usage: cairn have   (internal: used by cairn sync over ssh)" >&2; exit 2; }
exec "$CAIRN" "\$@"
SH
chmod +x "$TESTDIR/oldcairn"
ok ca snapshot -r tank@3 # something to send
out=$(CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$TESTDIR/oldcairn ca sync -R -n tank "far:$B:bk" 2>&1) &&
	fail "sync -n against a cairn without have -n succeeded: $out"
echo "$out" | grep -q "^cairn: sync: bk: .*its cairn does not take 'have -n' (an older version?)" ||
	fail "BUG: sync -n against a cairn without have -n does not say so: $out"
echo "$out" | grep -q "sync again" && fail "BUG: sync -n against a cairn without have -n says to run it again: $out"
# The same when that far side has already gone by the time sync asks: its
# writes are held back (strace) until the refusing have has exited.  A
# dry run did not ignore SIGPIPE, so the first write killed sync without
# a word (seen under ASan, which is slow enough to lose that race).
if command -v strace >/dev/null; then
	out=$(CAIRN_SSH=$TESTDIR/ssh CAIRN_REMOTE=$TESTDIR/oldcairn ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
		strace -o /dev/null -e trace=write -e inject=write:delay_enter=300000 \
		"$CAIRN" -s "$A" sync -R -n tank "far:$B:bk" 2>&1)
	rc=$?
	[ $rc = 1 ] || fail "BUG: sync -n against a far side already gone: exit $rc: $out"
	echo "$out" | grep -q "its cairn does not take 'have -n'" ||
		fail "BUG: sync -n against a far side already gone does not say why: $out"
elif [ "${CI:-}" = true ]; then
	fail "strace missing"
fi
done_test
