#!/bin/bash
# A recv -F that destroys an encryption root (a dataset the sender no
# longer has) and then fails, later in the same receive, is rolled back
# whole: the root comes back, and so must its loaded key.  The destroy's
# own (inner) commit used to unload the key at once, so after the failed
# receive the root was back with keystatus unavailable and needed load-key
# again.  The key goes only when the whole receive commits.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
top_and_kid
ok ca create -o source="$S" tank
ok ca snapshot tank@1
ca send -R tank@1 | cb recv rtank || fail "first -R receive"
# on the receiver only: an encryption root, and a dataset whose snapshot
# is held, which the -F receive below destroys in that order (by name)
printf '%s\n' "$PASS1" | cb create -o encryption=on -o keyformat=passphrase rtank/x ||
	fail "mkroot rtank/x"
mkdir -p "$TESTDIR/y"
echo y >"$TESTDIR/y/f"
ok cb create -o source="$TESTDIR/y" rtank/y
ok cb snapshot rtank/y@s
ok cb hold keep rtank/y@s
[ "$(cb get -H -o value keystatus rtank/x)" = available ] || fail "rtank/x's key not loaded"

ok ca snapshot tank@2
ca send -R -I tank@1 tank@2 >"$TESTDIR/incr" || fail "send -R -I"
fails_with 1 "rtank/y@s: snapshot is held" cb recv -F rtank <"$TESTDIR/incr"
[ "$(names rtank)" = "rtank rtank@1 rtank/x rtank/y rtank/y@s " ] ||
	fail "the failed receive changed the store: $(names rtank)"
[ "$(cb get -H -o value keystatus rtank/x)" = available ] ||
	fail "the failed receive left rtank/x with its key unloaded"

# released, the same receive destroys both, and rtank/x's key with it
ok cb release keep rtank/y@s
ok cb recv -F rtank <"$TESTDIR/incr"
[ "$(names rtank)" = "rtank rtank@1 rtank@2 " ] || fail "after -F: $(names rtank)"
keyctl show @s | grep -q ' user: cairn:' && fail "the destroyed root's key is still loaded"
done_test
