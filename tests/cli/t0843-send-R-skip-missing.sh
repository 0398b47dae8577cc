#!/bin/bash
# send -R -s (--skip-missing), as OpenZFS 2.2's zfs send: a descendant
# that existed when DS@S was taken but lacks @S (which send -R refuses,
# t0845) is left out with its whole subtree, with a warning on stderr,
# instead of refusing.  -s without -R is refused, with zfs's meaning.
# send -v names the descendants made after DS@S that -R leaves out (as zfs
# -v does), and says nothing of them without -v.
# Receiving: a skipped dataset is simply absent from the stream.  recv -F
# must not destroy the receiver's copy of it as "no longer on the source":
# the sender still has it.  (zfs would: its receiver takes every dataset
# missing from a replication stream's list for destroyed.  cairn keeps
# it; docs/REPLICATION.md.)
. "$(dirname "$0")/lib.sh"
new_store
second_store
S=$TESTDIR/src
mkdir -p "$S/kid/sub" "$S/ok" "$S/late"
head -c 300000 /dev/urandom >"$S/f"
echo kid >"$S/kid/f"; echo sub >"$S/kid/sub/f"; echo ok >"$S/ok/f"; echo late >"$S/late/f"
# snaps_match SRC DST: the same snapshots below (names and guids).
snaps_match() {
	local want got
	want=$(ca list -H -p -t snapshot -r -o name,guid "$1" | sed "s|^$1\([@/]\)|X\1|")
	got=$(cb list -H -p -t snapshot -r -o name,guid "$2" | sed "s|^$2\([@/]\)|X\1|")
	[ "$want" = "$got" ] || fail "$2's snapshots are not $1's: want [$want] got [$got]"
}
restored_same() { # restored_same SNAP-ON-B DIR: content of one received snapshot
	rm -rf "$TESTDIR/r"
	cb restore "$1" "$TESTDIR/r" || { fail "restore $1"; return; }
	same_tree "$2" "$TESTDIR/r"
}

ok ca create -o source="$S" pool
ok ca create -o source="$S/kid" pool/kid
ok ca create -o source="$S/kid/sub" pool/kid/sub
ok ca create -o source="$S/ok" pool/ok
ok ca snapshot -r pool@a
ca send -R pool@a | cb recv bk || fail "the first send -R pool@a | recv bk"
ok ca snapshot pool@b
ok ca snapshot pool/ok@b # pool/kid (and kid/sub) lack @b, older than pool@b

# ---- -s without -R: refused, zfs's meaning, nothing written ----
out=$(ca send -s pool@b 2>"$TESTDIR/err") && fail "send -s without -R succeeded"
grep -q "skip-missing flag can only be used in conjunction with replicate" "$TESTDIR/err" ||
	fail "send -s without -R: not zfs's refusal: $(cat "$TESTDIR/err")"
[ -z "$out" ] || fail "send -s without -R wrote ${#out} bytes"
fails_with 2 "only be used in conjunction with replicate" ca send --skip-missing -i @a pool@b

# ---- -R -s: pool/kid and its subtree skipped, with a warning ----
ca send -R -s pool@b >"$TESTDIR/s1" 2>"$TESTDIR/err" ||
	fail "send -R -s pool@b refused: $(cat "$TESTDIR/err")"
grep -q "^WARNING: skipping dataset pool/kid and its children: snapshot pool/kid@b does not exist$" \
	"$TESTDIR/err" || fail "send -R -s: no warning naming pool/kid: $(cat "$TESTDIR/err")"
[ "$(grep -c . "$TESTDIR/err")" = 1 ] ||
	fail "send -R -s: one warning expected (not kid/sub, below it): $(cat "$TESTDIR/err")"
cb recv bk2 <"$TESTDIR/s1" || fail "recv of the send -R -s stream"
[ "$(names bk2)" = "bk2 bk2@a bk2@b bk2/ok bk2/ok@a bk2/ok@b " ] ||
	fail "send -R -s: pool/kid's subtree should be absent, the rest whole: $(names bk2)"
want=$(ca list -H -p -t snapshot -o name,guid -r pool | grep -v "^pool/kid" | sed 's|^pool|bk2|')
[ "$want" = "$(cb list -H -p -t snapshot -o name,guid -r bk2)" ] ||
	fail "send -R -s: received snapshots or guids differ: $(names bk2)"
restored_same bk2@b "$S"
restored_same bk2/ok@b "$S/ok"
out=$(cb verify -r bk2 2>&1) || fail "verify after recv of send -R -s: $out"
# The dry run says the same, and estimates the same stream.
ca send -R -s -n -v pool@b >"$TESTDIR/out" 2>"$TESTDIR/err" || fail "send -R -s -n -v pool@b"
grep -q "WARNING: skipping dataset pool/kid and its children" "$TESTDIR/err" ||
	fail "send -R -s -n: no warning: $(cat "$TESTDIR/err")"

# ---- -R -s -i onto the first copy, with recv -F: kid stays ----
ca send -R -s -i @a pool@b >"$TESTDIR/s2" 2>"$TESTDIR/err" || fail "send -R -s -i @a pool@b: $(cat "$TESTDIR/err")"
[ "$(grep -c "WARNING: skipping dataset pool/kid and its children" "$TESTDIR/err")" = 1 ] ||
	fail "send -R -s -i: one warning expected: $(cat "$TESTDIR/err")"
cb recv -F -v bk <"$TESTDIR/s2" >"$TESTDIR/out" 2>&1 || fail "recv -F of send -R -s -i: $(cat "$TESTDIR/out")"
! grep -q "destroyed" "$TESTDIR/out" || fail "BUG: recv -F destroyed something: $(cat "$TESTDIR/out")"
[ "$(names bk)" = "bk bk@a bk@b bk/kid bk/kid@a bk/kid/sub bk/kid/sub@a bk/ok bk/ok@a bk/ok@b " ] ||
	fail "recv -F of a send -R -s stream destroyed or changed the skipped subtree: $(names bk)"
snaps_match pool bk
restored_same bk/kid@a "$S/kid"
restored_same bk/kid/sub@a "$S/kid/sub"
restored_same bk/ok@b "$S/ok"
out=$(cb verify -r bk 2>&1) || fail "verify after recv -F of send -R -s -i: $out"

# ---- recv -F of a stream without -s still destroys what the sender lost ----
ok ca destroy -r pool/kid
ok ca snapshot -r pool@c
ca send -R -i @b pool@c | cb recv -F bk || fail "send -R -i @b pool@c | recv -F"
[ -z "$(names bk/kid)" ] || fail "recv -F kept bk/kid, destroyed on the sender: $(names bk/kid)"
snaps_match pool bk

# ---- -v: a descendant made after the snapshot, left out, is named ----
ok ca create -o source="$S/late" pool/late
ok ca snapshot pool/late@x
ca send -R -i @b pool@c 2>"$TESTDIR/err" >/dev/null || fail "send -R -i @b pool@c with pool/late"
[ -s "$TESTDIR/err" ] && fail "send -R without -v spoke of what it left out: $(cat "$TESTDIR/err")"
ca send -R -v -i @b pool@c 2>"$TESTDIR/err" >/dev/null || fail "send -R -v -i @b pool@c"
grep -q "^skipping dataset pool/late: snapshot pool/late@c does not exist$" "$TESTDIR/err" ||
	fail "send -R -v: no note for pool/late, made after pool@c: $(cat "$TESTDIR/err")"
[ "$(grep -c "skipping dataset" "$TESTDIR/err")" = 1 ] ||
	fail "send -R -v: the note should come once (the estimate and the send): $(cat "$TESTDIR/err")"
ca send -R -n -v pool@c >"$TESTDIR/out" 2>"$TESTDIR/err" || fail "send -R -n -v pool@c"
grep -q "^skipping dataset pool/late: snapshot pool/late@c does not exist$" "$TESTDIR/err" ||
	fail "send -R -n -v: no note for pool/late: $(cat "$TESTDIR/err")"

# ---- zfs mode: zfs's words for the refusal and the warning ----
BIN=$TESTDIR/bin
mkdir -p "$BIN" && ln -s "$CAIRN" "$BIN/zfs"
printf 'pool %s\n' "$CAIRN_STORE" >"$TESTDIR/pools"
zfs() { CAIRN_POOLS_FILE="$TESTDIR/pools" "$BIN/zfs" "$@"; }
ok ca destroy -r pool/late
ok ca snapshot pool@d # pool/ok lacks it, older
ok ca create -o source="$S/late" pool/late2 # after pool@d
ok ca snapshot pool/late2@x
fails_with 1 "^cannot send pool@d recursively: snapshot pool/ok@d does not exist$" zfs send -R pool@d
zfs send -R -s pool@d 2>"$TESTDIR/err" >/dev/null || fail "zfs send -R -s pool@d: $(cat "$TESTDIR/err")"
grep -q "^WARNING: skipping dataset pool/ok and its children: snapshot d does not exist$" "$TESTDIR/err" ||
	fail "zfs send -R -s: not zfs's warning: $(cat "$TESTDIR/err")"
zfs send -R -v pool@d -s 2>"$TESTDIR/err" >/dev/null || fail "zfs send -R -v -s pool@d"
grep -q "^skipping dataset pool/late2: snapshot d does not exist$" "$TESTDIR/err" ||
	fail "zfs send -R -v: not zfs's note: $(cat "$TESTDIR/err")"
fails_with 2 "only be used in conjunction with replicate" zfs send -s pool@d
done_test
