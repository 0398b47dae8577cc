#!/bin/bash
# A second review of the key verbs: every check that can refuse comes
# before key material is read, a keyring step that fails leaves the
# keyring as it was, and a stale key in the keyring is not taken for the
# root's.  Each check below failed before its fix.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store

# create -o encryption=on below an encryption root: refused before the
# passphrase is asked for, so the line piped in stays unread.
ok mkroot tank "$PASS1"
refused_before_prompt() {
	local pat=$1
	shift
	local out
	out=$(printf '%s\n' "$PASS2" | { cairn "$@" 2>&1; echo "rc=$?"; cat; })
	echo "$out" | grep -q -- "$pat" || fail "$*: expected '$pat': $out"
	echo "$out" | grep -q "^rc=1$" || fail "$*: exit: $out"
	echo "$out" | grep -qx "$PASS2" || fail "$*: read the key before refusing: $out"
}
refused_before_prompt "already encrypted through encryption root tank" \
	create -o encryption=on -o keyformat=passphrase tank/sub
refused_before_prompt "already encrypted through encryption root tank" \
	create -p -o encryption=on -o keyformat=passphrase tank/a/b
cairn get name tank/a >/dev/null 2>&1 && fail "refused create -p left tank/a"
refused_before_prompt "dataset already exists" \
	create -o encryption=on -o keyformat=passphrase tank
refused_before_prompt "parent does not exist" \
	create -o encryption=on -o keyformat=passphrase nope/x
refused_before_prompt "keylocation=bogus" \
	create -o encryption=on -o keyformat=passphrase -o keylocation=bogus other
refused_before_prompt "keyformat=bogus" \
	create -o encryption=on -o keyformat=bogus other
refused_before_prompt "bad compression value\|compression" \
	create -o encryption=on -o keyformat=passphrase -o compression=bogus other
cairn get name other >/dev/null 2>&1 && fail "a refused create made other"
# the same create where it may go still reads the key and makes the root
printf '%s\n' "$PASS2" | ok cairn create -o encryption=on -o keyformat=passphrase other
[ "$(keystatus other)" = available ] || fail "create other: $(keystatus other)"

# change-key with a bad -o, and load-key --previous with no earlier
# wrapping kept: refused before the key is read.
refused_before_prompt "keyformat=bogus: expected" change-key -o keyformat=bogus tank
refused_before_prompt "change-key sets only keyformat and keylocation" \
	change-key -o compression=off tank
printf '%s\n' "$PASS1" | ok cairn load-key -n tank
ok cairn unload-key tank
refused_before_prompt "no earlier wrapping kept" load-key --previous tank
[ "$(keystatus tank)" = unavailable ] || fail "refused load-key loaded tank"
printf '%s\n' "$PASS1" | ok cairn load-key tank
done_test
