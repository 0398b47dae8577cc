#!/bin/bash
# Each encryption root has a key of its own in the keyring, also when two
# roots share a guid: a raw -R stream keeps the sender's dataset guids, so
# receiving one into the store that sent it (or twice) gives roots of one
# guid.  Their keyring entries were one (named by store and guid): a copy
# was "available" the moment it arrived, though a raw receive leaves the
# key unloaded (zfs); load-key on it said "key already loaded"; unload-key
# or destroy of a copy unloaded the original's key too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
one_file_src
ok mkroot enc "$PASS1" -o source="$SRC"
ok cairn snapshot enc@a
cairn send -w -R enc@a >"$TESTDIR/raw" || fail "send -w -R"
ok cairn create p
ok cairn recv p/x <"$TESTDIR/raw"
ok cairn recv p/y <"$TESTDIR/raw"
g=$(cairn get -H -p -o value guid enc)
[ "$(cairn get -H -p -o value guid p/x)" = "$g" ] && [ "$(cairn get -H -p -o value guid p/y)" = "$g" ] ||
	fail "the copies should share enc's guid"
st() { echo "$(keystatus enc) $(keystatus p/x) $(keystatus p/y)"; }

# received raw: no key loaded for the copies, whatever enc's state
[ "$(st)" = "available unavailable unavailable" ] || fail "after the raw receives: $(st)"
printf '%s\n' "$PASS1" | ok cairn load-key p/x
[ "$(st)" = "available available unavailable" ] || fail "after load-key p/x: $(st)"
fails_with 1 "p/y: key already unloaded" cairn unload-key p/y
# unloading one root's key leaves the others' alone
ok cairn unload-key enc
[ "$(st)" = "unavailable available unavailable" ] || fail "after unload-key enc: $(st)"
printf '%s\n' "$PASS1" | ok cairn load-key enc
printf '%s\n' "$PASS1" | ok cairn load-key p/y
ok cairn unload-key p/x
[ "$(st)" = "available unavailable available" ] || fail "after unload-key p/x: $(st)"
# destroying a copy unloads its own key only
ok cairn destroy -r p/y
[ "$(keystatus enc)" = available ] || fail "destroy of p/y unloaded enc's key"
printf '%s\n' "$PASS1" | ok cairn load-key p/x
ok cairn restore p/x@a "$TESTDIR/r"
cmp "$SRC/f" "$TESTDIR/r/f" || fail "restore of the copy"
done_test
