#!/bin/bash
# A destroy cannot reach the keys other users loaded into their own
# keyrings: such a key stays there, stale (docs/SECURITY.md).  Keys are
# named by the root's catalog row id, and SQLite gave a new dataset the
# id of a destroyed one when that had the largest: a raw copy of the
# destroyed root received afterwards (same key material) found the other
# user's stale key under its name and counted it as loaded, with no
# load-key.  Row ids are no longer used twice: the copy needs its load-key,
# for root and for the other user.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
need_other_user
other_keystatus() { as_other "$CAIRN" get -H -o value keystatus "$1"; }
# the store is OTHER's (root may do anything in it)
to_other() { chmod 755 "$TESTDIR" && chown -R $OTHER:$OTHER "$CAIRN_STORE"; }

new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
echo data >"$SRC/f"
ok mkroot enc "$PASS1" -o source="$SRC"
PREFIX=$(key_prefix)
ok cairn snapshot enc@1
cairn send -w enc@1 >"$TESTDIR/raw" || fail "raw send"
to_other
printf '%s\n' "$PASS1" | as_other "$CAIRN" load-key -t 600 enc || fail "load-key as uid $OTHER"
trap '[ -z "$PREFIX" ] || as_other keyctl purge -p user "$PREFIX" >/dev/null 2>&1; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT
[ "$(other_keystatus enc)" = available ] || fail "OTHER's key not loaded"

# root destroys the root: its own key goes, OTHER's stays where only OTHER
# can reach it
ok cairn destroy -r enc
as_other keyctl show @u | grep -q ' user: cairn:' || fail "OTHER's key did not stay (the test needs it)"

# the raw copy received afterwards is a new root: no key loaded, for anyone
ok cairn recv copy <"$TESTDIR/raw"
to_other
[ "$(keystatus copy)" = unavailable ] || fail "root: the new root's key counts as loaded"
[ "$(other_keystatus copy)" = unavailable ] ||
	fail "OTHER: the new root took the destroyed root's stale key as its own"
printf '%s\n' "$PASS1" | as_other "$CAIRN" load-key copy || fail "load-key copy as uid $OTHER"
[ "$(other_keystatus copy)" = available ] || fail "OTHER: load-key copy"
as_other "$CAIRN" unload-key copy || fail "unload-key copy as uid $OTHER"
done_test
