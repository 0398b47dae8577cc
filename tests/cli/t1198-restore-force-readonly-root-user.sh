#!/bin/bash
# "Running the restore again with --force once the cause is fixed
# replaces it" must hold for a restore run as a user too, when the
# snapshot's root directory is read-only.  Restore makes an existing
# directory writable for the run, but not the target itself: a user's
# second run found the root as the first run left it (0555) and could
# replace none of its entries ("removing the old entry: Permission
# denied").  Root writes there anyway, so this runs as nobody.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (to run as a second user)"; exit 77; }
command -v setpriv >/dev/null || fail "setpriv missing (util-linux)"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/d"
head -c 300000 /dev/urandom >"$SRC/big"
echo top >"$SRC/top"
echo below >"$SRC/d/below"
chmod 0444 "$SRC/top"
chmod 0555 "$SRC/d" "$SRC"
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
chmod 0755 "$SRC"
big=$(find "$CAIRN_STORE/.chunks" -type f -size +200k)
[ "$(echo "$big" | grep -c .)" = 1 ] || fail "big's chunk not found: $big"
U=$(mktemp -d /tmp/cairn-user.XXXXXX)
trap 'chmod -R u+w "$U" 2>/dev/null; rm -rf "$U"; rm -rf "$TESTDIR"' EXIT
chmod 755 "$U" "$TESTDIR"
chown nobody "$U"
chown -R nobody "$CAIRN_STORE"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" "$@"; }
ok as_nobody restore tank@1 "$U/ref"
[ "$(stat -c %a "$U/ref")" = 555 ] || fail "the reference's root: mode $(stat -c %a "$U/ref")"
# a first run that cannot restore big (its chunk gone), then the cause
# fixed and the same command with --force
mv "$big" "$TESTDIR/aside"
as_nobody restore tank@1 "$U/r" 2>"$TESTDIR/err" && fail "a restore without big's chunk succeeded"
grep -q "big: chunk" "$TESTDIR/err" || fail "big's chunk not named: $(cat "$TESTDIR/err")"
[ "$(stat -c %a "$U/r")" = 555 ] || fail "the first run did not finish the root: mode $(stat -c %a "$U/r")"
mv "$TESTDIR/aside" "$big"
out=$(as_nobody restore -f tank@1 "$U/r" 2>&1) || fail "restore -f as a user over its own restore: $out"
same_tree "$U/ref" "$U/r"
# and once more over the complete tree
out=$(as_nobody restore -f tank@1 "$U/r" 2>&1) || fail "restore -f again: $out"
same_tree "$U/ref" "$U/r"
chown -R root "$CAIRN_STORE"
done_test
