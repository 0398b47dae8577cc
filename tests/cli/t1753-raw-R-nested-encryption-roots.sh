#!/bin/bash
# A raw -R stream may carry several encryption roots, one inside another:
# cairn makes a root below another root by a raw receive (docs/SECURITY.md:
# "send it raw into a dataset below the other root"), and send -R -w then
# gives that dataset a CRYPTKEY of its own (put_cryptkeys: a root no sent
# ancestor carries).  zfs allows the same (send -R -w of a tree with
# several encryption roots).  The receiver makes each of them a root of
# its own, with its own key: checked here for a full stream, a raw
# incremental that carries a change-key of the inner root, and sync -R,
# each restored with full fidelity under its own passphrase.  An inner
# root's key never opens the outer one, nor the other way round.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
second_store
PASS3="a third long passphrase"
T=$TESTDIR/src
mkdir -p "$T/o" "$T/kid"
head -c 300000 /dev/urandom >"$T/f"
head -c 300000 /dev/urandom >"$T/kid/k"
head -c 300000 /dev/urandom >"$T/o/h"
ok mkroot tank "$PASS1" -o source="$T"
ok ca create -o source="$T/kid" tank/kid
ok mkroot other "$PASS2" -o source="$T/o"
ok ca snapshot other@1
# tank/in: a root of its own below the root tank, made by a raw receive
ca send -w other@1 | ok ca recv tank/in
printf '%s\n' "$PASS2" | ok ca load-key tank/in
ok ca set source="$T/o" tank/in
ok ca snapshot -r tank@2
[ "$(ca get -H -o value encryptionroot tank/in)" = tank/in ] || fail "tank/in is not a root"

# the key status of each dataset of bk
keys() { cb get -H -o value keystatus "$1"; }
# restored DEST SRCDIR SNAP: bk's SNAP restores as SRCDIR is
restored() {
	rm -rf "$TESTDIR/out"
	ok cb restore "$1" "$TESTDIR/out"
	same_tree "$2" "$TESTDIR/out"
}

ca send -w -R tank@2 >"$TESTDIR/full"
ok cb recv bk <"$TESTDIR/full"
[ "$(cb get -H -o value encryptionroot bk)" = bk ] || fail "bk is not a root"
[ "$(cb get -H -o value encryptionroot bk/kid)" = bk ] || fail "bk/kid is not under bk"
[ "$(cb get -H -o value encryptionroot bk/in)" = bk/in ] || fail "bk/in is not a root of its own"
printf '%s\n' "$PASS1" | fails_with 1 "incorrect key" cb load-key bk/in
printf '%s\n' "$PASS2" | fails_with 1 "incorrect key" cb load-key bk
printf '%s\n' "$PASS1" | ok cb load-key bk
[ "$(keys bk/in)" = unavailable ] || fail "bk's key opened bk/in"
printf '%s\n' "$PASS2" | ok cb load-key bk/in
restored bk@2 "$T"
restored bk/kid@2 "$T/kid"
restored bk/in@2 "$T/o"
restored bk/in@1 "$T/o"

# a raw incremental with the inner root's change-key on it
head -c 300000 /dev/urandom >"$T/o/h2"
head -c 300000 /dev/urandom >"$T/f2"
printf '%s\n' "$PASS3" | ok ca change-key tank/in
ok ca snapshot -r tank@3
ok cb unload-key -a
ca send -w -R -I @2 tank@3 | ok cb recv bk
[ "$(cb get -H -o value encryptionroot bk/in)" = bk/in ] || fail "bk/in is no longer a root"
printf '%s\n' "$PASS2" | fails_with 1 "incorrect key" cb load-key bk/in
printf '%s\n' "$PASS3" | ok cb load-key bk/in
printf '%s\n' "$PASS1" | ok cb load-key bk
restored bk/in@3 "$T/o"
restored bk@3 "$T"

# sync -R (raw) into a third store: the same roots
C=$TESTDIR/c
"$CAIRN" -s "$C" init >/dev/null || fail "init $C"
ok ca sync -R tank "$C:bk"
[ "$("$CAIRN" -s "$C" get -H -o value encryptionroot bk/in)" = bk/in ] || fail "sync: bk/in not a root"
[ "$("$CAIRN" -s "$C" get -H -o value encryptionroot bk/kid)" = bk ] || fail "sync: bk/kid not under bk"
printf '%s\n' "$PASS3" | ok "$CAIRN" -s "$C" load-key bk/in
rm -rf "$TESTDIR/out"
ok "$CAIRN" -s "$C" restore bk/in@3 "$TESTDIR/out"
same_tree "$T/o" "$TESTDIR/out"
ok cb verify >/dev/null
done_test
