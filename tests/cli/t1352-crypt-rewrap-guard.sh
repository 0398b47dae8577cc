#!/bin/bash
# Encryption findings of the 2026-12-03 review, each a way to lose access
# or leak a key:
# - a raw incremental whose wrapped key was garbled in transit (its stream
#   checksums made to match) replaces the receiver's wrapping, as in zfs,
#   but the receiver keeps the old one: the owner's key is refused with a
#   hint and `load-key --previous` opens the root; change-key there then
#   forgets the earlier wrappings;
# - a raw-received root's keylocation is prompt (or recv -o keylocation=),
#   and an incremental leaves the receiver's own keylocation alone (zfs);
# - a keylocation that is not a regular file (a FIFO nobody writes) is
#   refused at once, and verify does not hang on it;
# - destroying an encryption root unloads its key from the keyring;
# - change-key -l takes the old and the new passphrase from one pipe;
# - the command is not dumpable: run as another user, its /proc files
#   belong to root (no core file, no ptrace, no /proc/PID/mem).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/d"
echo one >"$SRC/a"
head -c 300000 /dev/urandom >"$SRC/d/big"
TAMPER=$TESTDIR/cryptkey-tamper
cc -O1 -o "$TAMPER" "$(dirname "$0")/cryptkey-tamper.c" $(pkg-config --cflags --libs libcrypto libxxhash) ||
	fail "building cryptkey-tamper"
B=$TESTDIR/b
cb() { "$CAIRN" -s "$B" "$@"; }
cb init >/dev/null || fail "init b"
nkeys() { keyctl show @s 2>/dev/null | grep -c ' cairn:'; }

# the sender's keylocation is a file; the receiver's new root asks
printf '%s\n' "$PASS1" >"$TESTDIR/p1"
ok cairn create -o encryption=on -o keyformat=passphrase -o keylocation="file://$TESTDIR/p1" \
	-o source="$SRC" tank
ok cairn snapshot tank@one
cairn send -w tank@one | cb recv backup || fail "raw full receive"
[ "$(cb get -H -o value keylocation backup)" = prompt ] || fail "received root's keylocation is not prompt"
ok cb set keylocation="file://$TESTDIR/p1" backup
# or the one recv -o gives (zfs allows it for a raw stream's root)
cairn send -w tank@one | cb recv -o keylocation="file://$TESTDIR/p1" other ||
	fail "raw receive with -o keylocation"
[ "$(cb get -H -o value keylocation other)" = "file://$TESTDIR/p1" ] || fail "recv -o keylocation ignored"
ok cb load-key -n other
cairn send -w tank@one >"$TESTDIR/s1"
fails_with 1 "keylocation=bogus: expected prompt or file" cb recv -o keylocation=bogus bad <"$TESTDIR/s1"
cb list -H -o name bad >/dev/null 2>&1 && fail "a refused keylocation left dataset bad"

# a garbled wrapping in a raw incremental: accepted (nothing here can open
# it), the old one kept, the receiver's keylocation kept
echo two >"$SRC/b"
ok cairn snapshot tank@two
cairn send -w -i @one tank@two >"$TESTDIR/s2" || fail "send -w -i"
"$TAMPER" <"$TESTDIR/s2" >"$TESTDIR/s2.bad" 2>/dev/null || fail "tampering the stream"
ok cb recv backup <"$TESTDIR/s2.bad"
[ "$(cb get -H -o value keylocation backup)" = "file://$TESTDIR/p1" ] ||
	fail "an incremental changed the receiver's keylocation"
fails_with 1 "backup: incorrect key (a raw receive replaced its wrapping.*--previous" cb load-key -n backup
ok cb load-key --previous backup
[ "$(cb get -H -o value keystatus backup)" = available ] || fail "load-key --previous loaded nothing"
ok cb restore backup@two "$TESTDIR/r2"
same_tree "$SRC" "$TESTDIR/r2"

# the owner sets the one key that counts now: the earlier ones go
printf '%s\n' "$PASS2" | ok cb change-key -o keylocation=prompt backup
ok cb unload-key backup
printf '%s\n' "$PASS2" | ok cb load-key -n backup
printf '%s\n' "$PASS1" | fails_with 1 "no earlier wrapping kept" cb load-key -n --previous backup

# nine replaced wrappings in a row (a compromised sender, or someone on
# the path): the first, the one the owner knew, is still kept
ok mkroot many "$PASS1" -o source="$SRC"
ok cairn snapshot many@0
cairn send -w many@0 | cb recv many || fail "raw full receive of many"
for i in 1 2 3 4 5 6 7 8 9; do
	printf '%s\n' "passphrase number $i" | ok cairn change-key many
	ok cairn snapshot "many@$i"
	cairn send -w -i "@$((i - 1))" "many@$i" | cb recv many || fail "raw incremental $i"
done
printf '%s\n' "$PASS1" | ok cb load-key -n --previous many
printf '%s\n' "passphrase number 8" | ok cb load-key -n --previous many
printf '%s\n' "passphrase number 9" | ok cb load-key -n many

# a FIFO as keylocation: refused at once; verify (no key needed) finishes
mkfifo "$TESTDIR/fifo"
ok cb set keylocation="file://$TESTDIR/fifo" backup
fails_with 1 "fifo: not a regular file" timeout 20 "$CAIRN" -s "$B" load-key backup
timeout 60 "$CAIRN" -s "$B" verify >/dev/null 2>&1
rc=$?
[ $rc -eq 124 ] && fail "verify hung on a FIFO keylocation"
[ $rc -eq 0 ] || fail "verify failed ($rc)"

# change-key -l: old and new passphrase from one pipe
ok mkroot piped "$PASS1"
ok cairn unload-key piped
printf '%s\n%s\n' "$PASS1" "$PASS2" | ok cairn change-key -l piped
ok cairn unload-key piped
printf '%s\n' "$PASS2" | ok cairn load-key -n piped

# destroy takes a root's loaded key with it
[ "$(keystatus tank)" = available ] || fail "tank's key not loaded"
n=$(nkeys)
ok cairn destroy -r tank
[ "$(nkeys)" -eq $((n - 1)) ] || fail "destroy left the root's key in the keyring ($n -> $(nkeys))"

# not dumpable: another user's cairn has /proc files owned by root
NB=$(mktemp -d /dev/shm/cairn-nb.XXXXXX)
chmod 755 "$NB"
chown nobody "$NB"
asnobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
asnobody "$CAIRN" -s "$NB/s" init >/dev/null || fail "init as nobody"
# its input: a FIFO held open here, so the receive waits on it
mkfifo "$NB/in"
exec 9<>"$NB/in"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" -s "$NB/s" recv held <&9 >/dev/null 2>&1 &
pid=$!
# started: cairn, asleep on its input (so well past main's first line)
started() { [ "/proc/$pid/exe" -ef "$CAIRN" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat")" = S ]; }
for _ in $(seq 100); do
	started && break
	sleep 0.1
done
started || fail "the receive as nobody did not start"
owner=$(stat -c %u "/proc/$pid/mem")
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exec 9>&-
rm -rf "$NB"
[ "$owner" = 0 ] || fail "cairn is dumpable: /proc/$pid/mem belongs to uid $owner"
done_test
