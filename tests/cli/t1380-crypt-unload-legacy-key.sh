#!/bin/bash
# A key loaded by an earlier build sits in the keyring under the root's
# guid ("cairn:<store id>:<root guid>"); this build names keys by row id.
# unload-key could not reach it: "key already unloaded" / "0 / 0 keys
# unloaded", exit 0 for -a, and the master keys stayed in the keyring for
# as long as the keyring lived, though the user had asked to unload them.
# unload-key (and -a) now removes such a key too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"
new_store
one_file_src
ok mkroot enc "$PASS1" -o source="$SRC"

# the key this build loaded, and the name an earlier build gave it
new=$(keyctl rlist @s | tr ' ' '\n' | head -1)
[ -n "$new" ] || fail "the loaded key is not in the session keyring"
desc=$(keyctl rdescribe "$new" | cut -d';' -f5)
case $desc in cairn:*:*) ;; *) fail "unexpected key description $desc" ;; esac
guid=$(cairn get -H -p -o value guid enc)
legacy=${desc%:*}:$(printf '%016x' "$guid")
[ "$legacy" != "$desc" ] || fail "row id and guid name the same key"
# plant the earlier build's key: the same payload under the guid name
keyctl pipe "$new" | keyctl padd user "$legacy" @s >/dev/null || fail "keyctl padd"
has_legacy() { keyctl search @s user "$legacy" >/dev/null 2>&1; }
has_legacy || fail "planting the earlier build's key"

# unload-key of the root takes both away
ok cairn unload-key enc
has_legacy && fail "unload-key enc left the earlier build's key in the keyring"
[ "$(keystatus enc)" = unavailable ] || fail "keystatus after unload-key"

# -a, when only the earlier build's key is loaded: it counts, and goes
keyctl pipe "$new" >/dev/null 2>&1 && fail "the new key should be gone"
# plant it alone: load, copy, unload the new one with keyctl
printf '%s\n' "$PASS1" | ok cairn load-key enc
new=$(keyctl search @s user "$desc") || fail "load-key"
keyctl pipe "$new" | keyctl padd user "$legacy" @s >/dev/null || fail "keyctl padd"
keyctl invalidate "$new" || fail "keyctl invalidate"
has_legacy || fail "planting the earlier build's key alone"
out=$(cairn unload-key -a 2>&1) || fail "unload-key -a with an earlier build's key: $out"
echo "$out" | grep -q "1 / 1 keys unloaded" || fail "unload-key -a count: $out"
has_legacy && fail "unload-key -a left the earlier build's key in the keyring"

# and a named root whose only key is the earlier build's
printf '%s\n' "$PASS1" | ok cairn load-key enc
new=$(keyctl search @s user "$desc") || fail "load-key"
keyctl pipe "$new" | keyctl padd user "$legacy" @s >/dev/null || fail "keyctl padd"
keyctl invalidate "$new" || fail "keyctl invalidate"
ok cairn unload-key enc
has_legacy && fail "unload-key enc left the earlier build's key (alone)"
fails_with 1 "enc: key already unloaded" cairn unload-key enc

# a guid (a received stream chooses it) equal to another root's row id:
# that name is the other root's key now, and unload-key leaves it alone
printf '%s\n' "$PASS1" | ok cairn load-key enc
ok mkroot odd "$PASS2" -o source="$SRC"
id=$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT id FROM dataset WHERE name='enc'")
sqlite3 "$CAIRN_STORE/catalog.db" "UPDATE dataset SET guid=$id WHERE name='odd'" || fail "sqlite3"
ok cairn unload-key odd
[ "$(keystatus enc)" = available ] || fail "unload-key odd unloaded enc's key (odd's guid = enc's row id)"

# destroy of a root takes its earlier build's key away too: nothing could
# reach it after the root is gone
ok mkroot gone "$PASS2" -o source="$SRC"
gdesc=$(keyctl rdescribe "$(keyctl search @s user "${desc%:*}:$(printf '%016x' \
	"$(sqlite3 "$CAIRN_STORE/catalog.db" "SELECT id FROM dataset WHERE name='gone'")")")" |
	cut -d';' -f5) || fail "gone's key"
glegacy=${gdesc%:*}:$(printf '%016x' "$(cairn get -H -p -o value guid gone)")
keyctl pipe "$(keyctl search @s user "$gdesc")" | keyctl padd user "$glegacy" @s >/dev/null ||
	fail "keyctl padd (gone)"
ok cairn destroy -r gone
keyctl search @s user "$glegacy" >/dev/null 2>&1 &&
	fail "destroy -r gone left the earlier build's key in the keyring"
[ "$(keystatus enc)" = available ] || fail "destroy -r gone unloaded enc's key"
done_test
