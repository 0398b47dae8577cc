#!/bin/bash
# A recv -F that destroys an encryption root claims the root's key (a
# write lock on its range of keyusers.lock): no command takes the key
# while the root goes, and a busy root refuses the receive, dry run or
# not.  How long the claim lasts:
# - a real receive: until the transaction that destroys the root commits
#   (the commit of the stream's first group), not the end of the
#   receive, and not before (the release of the destroy's own savepoint
#   is no commit: the root and its loaded key are still there for every
#   other command; see destroy.c);
# - a dry run (recv -n -F), which destroys nothing for real, held the
#   claim until the whole dry run ended: meanwhile every command wanting
#   that key waited, and unload-key refused it as busy.  It now lets go
#   right after the busy check.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
top_and_kid
# the sender ($B): tank@1, then tank@2 (a small group) and tank@3 (8 MB
# more, uncompressed: a group the receiver is in the middle of when the
# stream below pauses)
ok cb create -o source="$S" -o compression=off tank
ok cb snapshot tank@1
cb send -R tank@1 | ca recv rtank || fail "first -R receive"
# the receiver's own encryption root below rtank, which -F destroys
big_root rtank/x 1
ok cb snapshot tank@2
head -c 8000000 /dev/urandom >"$S/big"
ok cb snapshot tank@3
cb send -R -I tank@1 tank@3 >"$TESTDIR/incr" || fail "send -R -I"
before=$(cairn list -H -o name -t all -r rtank)

wrlocked() {
	grep -Eq "OFDLCK +ADVISORY +WRITE +-?[0-9]+ [0-9a-f]+:[0-9a-f]+:$(stat -c %i "$CAIRN_STORE/keyusers.lock") " /proc/locks
}
nkeys() { keyctl show @s | grep -c ' user: cairn:'; }

# a busy root refuses both (with the restore's own hold gone: the key's
# claim is what is tested here, not the hold that refuses first)
RESTORE_HELD=1 start_stopped_restore rtank/x@1 "$TESTDIR/out"
unhold_restore rtank/x@1
fails_with 1 "rtank/x: dataset is busy" cairn recv -n -F rtank <"$TESTDIR/incr"
fails_with 1 "rtank/x: dataset is busy" cairn recv -F rtank <"$TESTDIR/incr"
[ "$(cairn list -H -o name -t all -r rtank)" = "$before" ] || fail "a refused receive changed the store"
resume_restore || fail "the restore failed"
rm -rf "$TESTDIR/out"

# paused_recv FLAGS PATTERN: recv FLAGS -v -F rtank of the stream, fed
# through a FIFO that stops after its first MB (inside tank@3's group),
# until PATTERN is in the receive's output (its first group is done) or
# the receive ended; resume_recv feeds the rest and returns its status.
paused_recv() {
	local flags=$1 pat=$2
	rm -f "$TESTDIR/fifo" "$TESTDIR/go"
	mkfifo "$TESTDIR/fifo"
	{
		head -c 1000000 "$TESTDIR/incr"
		while [ ! -e "$TESTDIR/go" ]; do sleep 0.05; done
		tail -c +1000001 "$TESTDIR/incr"
	} >"$TESTDIR/fifo" &
	FEED=$!
	cairn recv $flags -v -F rtank <"$TESTDIR/fifo" >"$TESTDIR/recv.out" 2>&1 &
	RECV=$!
	for _ in $(seq 1 400); do
		grep -q "$pat" "$TESTDIR/recv.out" && break
		kill -0 $RECV 2>/dev/null || break
		sleep 0.05
	done
	grep -q "$pat" "$TESTDIR/recv.out" && kill -0 $RECV 2>/dev/null ||
		fail "recv $flags: not paused after its first group ($(cat "$TESTDIR/recv.out"))"
}
resume_recv() {
	touch "$TESTDIR/go"
	wait $FEED
	wait $RECV
}

# the dry run, paused: the root's key is not claimed, unload-key works
paused_recv -n "would destroy rtank/x"
wrlocked && fail "recv -n -F still holds a claim in the middle of the stream"
ok cairn unload-key rtank/x
printf '%s\n' "$PASS1" | cairn load-key rtank/x || fail "load-key again"
resume_recv || fail "recv -n -F failed: $(cat "$TESTDIR/recv.out")"
[ "$(cairn list -H -o name -t all -r rtank)" = "$before" ] || fail "the dry run changed the store"
[ "$(keystatus rtank/x)" = available ] || fail "the dry run unloaded the key"

# the real one, paused after its first group committed: the root and its
# key are gone, and so is the claim
paused_recv "" "destroyed rtank/x"
cairn list rtank/x >/dev/null 2>&1 && fail "rtank/x still there after the first group's commit"
wrlocked && fail "recv -F still holds a claim after the destroy committed"
[ "$(nkeys)" = 0 ] || fail "the destroyed root's key is still in the keyring"
resume_recv || fail "recv -F failed: $(cat "$TESTDIR/recv.out")"
[ "$(cairn list -H -o name -t all -r rtank | tr '\n' ' ')" = "rtank rtank@1 rtank@2 rtank@3 " ] ||
	fail "after recv -F: $(cairn list -H -o name -t all -r rtank | tr '\n' ' ')"
done_test
