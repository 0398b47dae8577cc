#!/bin/bash
# The key verbs' shared paths (cli/keyprompt.c): key material piped to
# create and change-key (-l too), load-key/unload-key over one root, -r
# and -a (roots already in the wanted state are skipped and counted out;
# named alone they are errors), their operand checks; and change-key -i,
# which cairn refuses with zfs's reasons, or its own where zfs could.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC" && echo content >"$SRC/f"

ok cairn create -o source="$SRC" plain
ok mkroot plain/tank "$PASS1" -o source="$SRC"
ok cairn create plain/tank/kid
ok mkroot vault "$PASS2" -o source="$SRC"
ok cairn create vault/deep
ok cairn snapshot plain/tank@one

# unload: -a counts only the keys it removed; a named root not loaded fails
out=$(cairn unload-key -a) || fail "unload-key -a: $out"
[ "$out" = "2 / 2 keys unloaded" ] || fail "unload-key -a said: $out"
out=$(cairn unload-key -a) || fail "unload-key -a again: $out"
[ "$out" = "0 / 0 keys unloaded" ] || fail "unload-key -a again said: $out"
fails_with 1 "plain/tank: key already unloaded" cairn unload-key plain/tank
fails_with 2 "a takes no dataset" cairn unload-key -a vault
fails_with 2 "exclude each other" cairn unload-key -a -r
fails_with 2 "expected one dataset" cairn unload-key
fails_with 2 "exclude each other" cairn load-key -a -r
fails_with 2 "expected one dataset" cairn load-key plain vault

# load: a named root loads from the pipe; -r skips a root already loaded
printf '%s\n' "$PASS2" | ok cairn load-key vault
fails_with 1 "vault: key already loaded" cairn load-key vault
out=$(cairn load-key -r vault) || fail "load-key -r: $out"
[ "$out" = "0 / 0 keys loaded" ] || fail "load-key -r said: $out"
printf '%s\n' "$PASS1" | ok cairn load-key -n plain/tank
[ "$(keystatus plain/tank)" = unavailable ] || fail "load-key -n loaded the key"
out=$(printf '%s\n' "wrong passphrase" | cairn load-key -r plain 2>&1) && fail "wrong key in -r: $out"
echo "$out" | grep -q "0 / 1 keys loaded" || fail "load-key -r count on failure: $out"
echo "$out" | grep -q "plain/tank: incorrect key" || fail "load-key -r reason: $out"

# change-key -l: the current key from the pipe, then the new one
printf '%s\n' "$PASS2" >"$TESTDIR/new"
printf '%s\n' "$PASS1" | ok cairn change-key -l -o keylocation="file://$TESTDIR/new" plain/tank
[ "$(keystatus plain/tank)" = available ] || fail "change-key -l did not load"
ok cairn unload-key plain/tank
printf '%s\n' "$PASS1" | fails_with 1 "incorrect key" cairn load-key -L prompt plain/tank
ok cairn load-key plain/tank
ok cairn restore plain/tank@one "$TESTDIR/r"
cmp "$SRC/f" "$TESTDIR/r/f" || fail "restore after change-key"

# change-key -i
fails_with 1 "plain: key inheritance can only be performed on encryption roots (it is not encrypted)" \
	cairn change-key -i plain
fails_with 1 "only be performed on encryption roots (it already inherits the key of plain/tank)" \
	cairn change-key -i plain/tank/kid
fails_with 1 "plain/tank: cannot inherit a key: the parent plain is not encrypted" \
	cairn change-key -i plain/tank
fails_with 1 "vault: cannot inherit a key: it has no parent" cairn change-key -i vault
ok cairn rename vault plain/tank/vault
fails_with 1 "cannot inherit the key of plain/tank: the data of encryption root plain/tank/vault" \
	cairn change-key -i plain/tank/vault
[ "$(cairn get -H -o value encryptionroot plain/tank/vault)" = plain/tank/vault ] ||
	fail "refused change-key -i changed the root"
fails_with 2 "takes no -o" cairn change-key -i -o keyformat=hex plain/tank/vault
fails_with 1 "no such\|does not exist" cairn change-key -i plain/nothere
done_test
