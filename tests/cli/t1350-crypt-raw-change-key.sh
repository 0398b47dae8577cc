#!/bin/bash
# A raw incremental stream carries the sender's current wrapping of the
# key: after change-key on the sender, the receiver (no key ever loaded
# there) accepts the new passphrase and refuses the old one, and every
# snapshot still restores (the old one opens only with load-key
# --previous: the receiver keeps the wrapping it replaced).  A change of
# keyformat travels too; keylocation stays the receiver's own (zfs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
use_xattr_dir
SRC=$XDIR/src
rich_tree "$SRC"
B=$TESTDIR/b
cb() { "$CAIRN" -s "$B" "$@"; }
cb init >/dev/null || fail "init b"

ok mkroot tank "$PASS1" -o source="$SRC"
ok cairn snapshot tank@one
cp -a "$SRC" "$XDIR/copy1"
cairn send -w tank@one >"$TESTDIR/s1" || fail "send -w one"
ok cb recv backup <"$TESTDIR/s1"

# new passphrase on the sender, then a raw incremental
printf '%s\n' "$PASS2" | ok cairn change-key tank
echo "after the change MARKERCONTENT_cairn_7f3a" >"$SRC/d1/new"
ok cairn snapshot tank@two
cp -a "$SRC" "$XDIR/copy2"
cairn send -w -i @one tank@two >"$TESTDIR/s2" || fail "send -w -i"
ok cb recv backup <"$TESTDIR/s2"
[ "$(cb get -H -o value keystatus backup)" = unavailable ] || fail "keystatus after recv"
printf '%s\n' "$PASS1" | fails_with 1 "backup: incorrect key" cb load-key backup
[ "$(cb get -H -o value keystatus backup)" = unavailable ] || fail "old passphrase loaded a key"
printf '%s\n' "$PASS1" | ok cb load-key -n --previous backup
printf '%s\n' "$PASS2" | ok cb load-key backup
ok cb restore backup@one "$XDIR/r1"
same_tree "$XDIR/copy1" "$XDIR/r1"
ok cb restore backup@two "$XDIR/r2"
same_tree "$XDIR/copy2" "$XDIR/r2"
ok cb unload-key backup

# keyformat changes too (a hex key file); keylocation names a place on the
# sender's host and stays the receiver's (prompt, from the first receive)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TESTDIR/k.hex"
ok cairn change-key -o keyformat=hex -o keylocation="file://$TESTDIR/k.hex" tank
ok cairn snapshot tank@three
cairn send -w -i @two tank@three | cb recv backup || fail "send -w -i two three"
[ "$(cb get -H -o value keyformat,keylocation backup | tr '\n' ' ')" = "hex prompt " ] ||
	fail "keyformat not carried, or keylocation changed"
printf '%s\n' "$PASS2" | fails_with 1 "incorrect key\|hex" cb load-key -L prompt backup
ok cb load-key -L "file://$TESTDIR/k.hex" backup
ok cb restore backup@three "$XDIR/r3"
same_tree "$SRC" "$XDIR/r3"

# a tampered stream that carries a new wrapping is refused before commit:
# the receiver keeps the old one
printf '%s\n' "$PASS1" >"$TESTDIR/p1"
ok cairn change-key -o keyformat=passphrase -o keylocation="file://$TESTDIR/p1" tank
echo four >"$SRC/d1/four"
ok cairn snapshot tank@four
cairn send -w -i @three tank@four >"$TESTDIR/s4" || fail "send -w -i three four"
cp "$TESTDIR/s4" "$TESTDIR/s4.bad"
flip_byte "$TESTDIR/s4.bad"
cb recv backup <"$TESTDIR/s4.bad" >/dev/null 2>&1 && fail "tampered stream accepted"
[ "$(cb get -H -o value keyformat backup)" = hex ] || fail "refused stream changed the key"
ok cb load-key -n -L "file://$TESTDIR/k.hex" backup
ok cb recv backup <"$TESTDIR/s4"
[ "$(cb get -H -o value keyformat backup)" = passphrase ] || fail "retry did not carry the key"
"$CAIRN" -s "$B" unload-key -a >/dev/null
printf '%s\n' "$PASS1" | ok cb load-key backup
ok cb restore backup@four "$XDIR/r4"
same_tree "$SRC" "$XDIR/r4"
"$CAIRN" -s "$B" unload-key -a >/dev/null
done_test
