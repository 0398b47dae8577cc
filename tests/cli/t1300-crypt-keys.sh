#!/bin/bash
# Encryption roots and their keys: create, the properties (inherited like
# zfs), load-key/unload-key/change-key with every option, wrong keys
# (incorrect key, exit 1, nothing changed), key files for scripts, and the
# verbs that need a key saying so by naming the encryption root.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC" && echo hello >"$SRC/f"

ok mkroot tank "$PASS1" -o source="$SRC"
ok cairn create tank/child
[ "$(keystatus tank)" = available ] || fail "create leaves the key loaded"
out=$(cairn get -H -o property,value,source encryption,keyformat,keylocation,encryptionroot tank/child) ||
	fail "get: $out"
echo "$out" | grep -q "^encryption	aes-256-gcm	inherited from tank$" || fail "encryption inherited: $out"
echo "$out" | grep -q "^keyformat	passphrase	inherited from tank$" || fail "keyformat: $out"
echo "$out" | grep -q "^keylocation	prompt	inherited from tank$" || fail "keylocation: $out"
echo "$out" | grep -q "^encryptionroot	tank	-$" || fail "encryptionroot: $out"
ok cairn create plain
[ "$(cairn get -H -o value encryption,keystatus,encryptionroot plain | tr '\n' ' ')" = "off - - " ] ||
	fail "plain dataset properties"
cairn list -j -o name,keystatus tank >"$TESTDIR/j" || fail "list -j"
grep -q '"keystatus"' "$TESTDIR/j" || fail "list -j has keystatus: $(cat "$TESTDIR/j")"

# bad combinations are refused and create nothing
fails_with 1 "unencrypted dataset below encryption root tank" cairn create -o encryption=off tank/x
fails_with 1 "keyformat must be given" cairn create -o encryption=on bare </dev/null
fails_with 1 "need -o encryption=on" cairn create -o keyformat=hex plain2
printf 'short\n' | fails_with 1 "8 to 512 bytes" cairn create -o encryption=on -o keyformat=passphrase short
fails_with 1 "keyformat=rot13" cairn create -o encryption=on -o keyformat=rot13 bad
fails_with 1 "keylocation=http" cairn create -o encryption=on -o keyformat=hex -o keylocation=http://x bad
for d in tank/x bare plain2 short bad; do
	cairn get name "$d" >/dev/null 2>&1 && fail "$d was created"
done
fails_with 1 "keyformat can only be set at creation" cairn set keyformat=hex tank
fails_with 1 "encryption can only be set at creation" cairn set encryption=off tank
fails_with 1 "only be set on an encryption root" cairn set keylocation=prompt tank/child
fails_with 1 "cannot be inherited" cairn inherit keylocation tank

ok cairn snapshot tank@one
# unload: keystatus follows, verbs needing the key name the root
ok cairn unload-key tank
[ "$(keystatus tank/child)" = unavailable ] || fail "keystatus after unload"
fails_with 1 "key already unloaded" cairn unload-key tank
fails_with 1 "encryption key not loaded (encryption root tank" cairn snapshot tank/child@x
fails_with 1 "encryption key not loaded (encryption root tank" cairn restore tank@one "$TESTDIR/r0"
[ -e "$TESTDIR/r0" ] && fail "restore without key created its target"
fails_with 1 "encryption key not loaded" cairn create tank/child2
fails_with 1 "not an encryption root" cairn load-key tank/child </dev/null
# what needs no key
ok cairn list -r tank >/dev/null
ok cairn hold keep tank@one
ok cairn holds tank@one >/dev/null
ok cairn release keep tank@one
ok cairn verify >/dev/null

# wrong passphrase: incorrect key, exit 1, nothing changed
before=$(cd "$CAIRN_STORE" && sqlite3 catalog.db .dump | md5sum)
printf 'wrong passphrase\n' | fails_with 1 "tank: incorrect key" cairn load-key tank
[ "$(keystatus tank)" = unavailable ] || fail "wrong key loaded something"
after=$(cd "$CAIRN_STORE" && sqlite3 catalog.db .dump | md5sum)
[ "$before" = "$after" ] || fail "a wrong key changed the catalog"
# -n checks only
printf '%s\n' "$PASS1" | ok cairn load-key -n tank
[ "$(keystatus tank)" = unavailable ] || fail "load-key -n loaded the key"
printf '%s\n' "$PASS1" | ok cairn load-key tank
[ "$(keystatus tank)" = available ] || fail "load-key"
printf '%s\n' "$PASS1" | fails_with 1 "key already loaded" cairn load-key tank

# change-key: a new passphrase, one transaction, snapshots stay readable
printf '%s\n' "$PASS2" | ok cairn change-key tank
ok cairn unload-key tank
printf '%s\n' "$PASS1" | fails_with 1 "incorrect key" cairn load-key tank
printf '%s\n' "$PASS2" | ok cairn load-key tank
ok cairn restore tank@one "$TESTDIR/r1"
cmp "$SRC/f" "$TESTDIR/r1/f" || fail "snapshot unreadable after change-key"
# change-key needs the key (zfs); -l loads it first
ok cairn unload-key tank
printf '%s\n' "$PASS1" | fails_with 1 "encryption key not loaded" cairn change-key tank
# to a hex key file; keylocation=file loads it for one command when unloaded
KEYF=$TESTDIR/key.hex
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$KEYF"
printf '%s\n' "$PASS2" | ok cairn change-key -l -o keyformat=hex -o keylocation="file://$KEYF" tank
[ "$(cairn get -H -o value keyformat,keylocation tank | tr '\n' ' ')" = "hex file://$KEYF " ] ||
	fail "change-key properties"
ok cairn unload-key tank
ok cairn snapshot tank@two   # loads from the key file for this command only
[ "$(keystatus tank)" = unavailable ] || fail "a file keylocation left the key loaded"
ok cairn load-key tank
ok cairn unload-key tank
# -L: another location, this time only
echo 0000000000000000000000000000000000000000000000000000000000000000 >"$TESTDIR/wrong.hex"
fails_with 1 "incorrect key" cairn load-key -L "file://$TESTDIR/wrong.hex" tank
fails_with 1 "hex key must be" cairn load-key -L "file://$SRC/f" tank
# raw keys, -r and -a, timeouts
head -c 32 /dev/urandom >"$TESTDIR/key.raw"
ok cairn create -o encryption=on -o keyformat=raw -o keylocation="file://$TESTDIR/key.raw" vault
ok cairn create vault/sub
ok cairn unload-key -a
[ "$(keystatus vault)" = unavailable ] || fail "unload-key -a"
out=$(cairn load-key -a) || fail "load-key -a: $out"
echo "$out" | grep -q "2 / 2 keys loaded" || fail "load-key -a count: $out"
[ "$(keystatus vault/sub)$(keystatus tank)" = availableavailable ] || fail "load-key -a"
ok cairn unload-key -r vault
[ "$(keystatus vault)$(keystatus tank)" = unavailableavailable ] || fail "unload-key -r"
ok cairn load-key -t 3600 vault
keyctl list @s | grep -q "cairn:" || fail "key not in the session keyring"
# a raw key cannot be typed at a terminal, but can be piped
ok cairn unload-key vault
head -c 31 /dev/urandom | fails_with 1 "exactly 32 bytes" cairn load-key -L prompt vault
# a key file of the wrong form is named
head -c 31 /dev/urandom >"$TESTDIR/short.raw"
fails_with 1 "^cairn: load-key: vault: keylocation file://$TESTDIR/short.raw: raw key must be exactly 32 bytes" \
	cairn load-key -L "file://$TESTDIR/short.raw" vault
ok cairn load-key -L prompt vault <"$TESTDIR/key.raw"
# renames stay inside an encryption root; a root moves with its key
fails_with 1 "from encryption root vault to none" cairn rename vault/sub plain/sub
ok cairn create plain/p
fails_with 1 "from encryption root none (unencrypted) to vault" cairn rename plain/p vault/p
fails_with 1 "from encryption root vault to tank" cairn rename vault/sub tank/sub
ok cairn rename vault/sub vault/sub2
ok cairn rename vault vault2
[ "$(keystatus vault2/sub2)" = available ] || fail "renamed root lost its loaded key"
ok cairn rename vault2 vault
# destroying a root takes its wrapped key along
ok cairn destroy -r vault
[ "$(sqlite3 "$CAIRN_STORE/catalog.db" 'SELECT count(*) FROM cryptkey')" = 1 ] || fail "cryptkey rows after destroy"
for v in load-key unload-key change-key; do
	cairn "$v" --help | grep -q "usage: cairn $v" || fail "$v --help"
done
# a keyring that refuses the new key (the user keyring, which this fresh
# session keyring does not link): create fails and leaves no dataset
L0=$(cairn list -H -o name)
printf '%s\n' "$PASS1" | fails_with 1 "kernel keyring" env -u CAIRN_KEYRING "$CAIRN" create -o encryption=on -o keyformat=passphrase refused
[ "$(cairn list -H -o name)" = "$L0" ] || fail "a create the keyring refused left a dataset: $(cairn list -H -o name | grep refused)"
done_test
