#!/bin/bash
# Findings of a review of the key verbs against zfs's behaviour: each
# check below failed before its fix.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store

# change-key without the current key: refused before the new key is asked
# for (zfs: "Key must be loaded"), so nothing of stdin is read.
ok mkroot tank "$PASS1"
ok cairn unload-key tank
out=$(printf '%s\n' "$PASS2" | { cairn change-key tank 2>&1; echo "rc=$?"; cat; })
echo "$out" | grep -q "tank: encryption key not loaded" || fail "change-key unloaded: $out"
echo "$out" | grep -q "^rc=1$" || fail "change-key unloaded exit: $out"
echo "$out" | grep -qx "$PASS2" || fail "change-key read the new key before refusing: $out"
# a current key file that is gone: refused before prompting for the new key
printf '%s\n' "$PASS1" >"$TESTDIR/cur"
printf '%s\n' "$PASS1" | ok cairn change-key -l -o keylocation="file://$TESTDIR/cur" tank
ok cairn unload-key tank
mv "$TESTDIR/cur" "$TESTDIR/cur.away"
out=$(printf '%s\n' "$PASS2" | { cairn change-key -o keylocation=prompt tank 2>&1; echo "rc=$?"; cat; })
echo "$out" | grep -q "keylocation file://$TESTDIR/cur: No such file" || fail "missing key file: $out"
echo "$out" | grep -qx "$PASS2" || fail "change-key read the new key before its current key failed: $out"
[ "$(cairn get -H -o value keylocation tank)" = "file://$TESTDIR/cur" ] || fail "keylocation changed"
# with the key file back, the same command works and reads the new key
mv "$TESTDIR/cur.away" "$TESTDIR/cur"
printf '%s\n' "$PASS2" | ok cairn change-key -o keylocation=prompt tank
printf '%s\n' "$PASS2" | ok cairn load-key -n tank
[ "$(keystatus tank)" = unavailable ] || fail "change-key from a key file loaded the key"
done_test
