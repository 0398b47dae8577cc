#!/bin/bash
# root restores from a store that another user owns (an administrator
# bringing back a user's files).  The restore's temporary hold made the
# store's holders/ directory, owned by root and mode 0700, and with it the
# owner's own commands could publish no temporary hold any more: 'cairn
# send' failed ("holders: Permission denied"), and the owner's restores
# ran without their hold.  What root makes there for a hold now belongs
# to the store's owner, as SQLite's journals do.  Also after a root
# restore killed while it held its snapshot (its holder file left
# behind): the owner's next command reaps the hold, and destroy works.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root (to own the store as a second user)"; exit 77; }
command -v setpriv >/dev/null || fail "setpriv missing (util-linux)"
command -v strace >/dev/null || fail "strace missing"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
for i in 1 2 3 4 5 6; do head -c 100000 /dev/urandom >"$SRC/f$i"; done
ok cairn create -o source="$SRC" tank
ok cairn snapshot tank@1
chmod 755 "$TESTDIR"
chown -R nobody:nogroup "$CAIRN_STORE"
rm -rf "$CAIRN_STORE/holders"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" "$@"; }
"$CAIRN" restore tank@1 "$TESTDIR/r" 2>"$TESTDIR/err" || fail "root's restore failed: $(cat "$TESTDIR/err")"
[ -s "$TESTDIR/err" ] && fail "root's restore said: $(cat "$TESTDIR/err")"
same_tree "$SRC" "$TESTDIR/r"
[ "$(stat -c %U "$CAIRN_STORE/holders" 2>&1)" = nobody ] ||
	fail "holders/ after root's restore: $(stat -c '%U %a' "$CAIRN_STORE/holders" 2>&1)"
out=$(as_nobody send tank@1 2>&1 >/dev/null) || fail "the owner's send after root's restore: $out"
U=$(mktemp -d /tmp/cairn-user.XXXXXX)
trap 'rm -rf "$U"; rm -rf "$TESTDIR"' EXIT
chown nobody "$U"
out=$(as_nobody restore tank@1 "$U/r" 2>&1) || fail "the owner's restore after root's: $out"
[ -z "$out" ] || fail "the owner's restore after root's said: $out"

# root's restore killed while it holds tank@1
CAIRN_RESTORE_THREADS=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -o /dev/null \
	-e trace=openat -e inject=openat:delay_exit=200000 "$CAIRN" restore tank@1 "$TESTDIR/k" 2>/dev/null &
pid=$!
for _ in $(seq 1 600); do
	[ "$(find "$TESTDIR/k" -type f 2>/dev/null | wc -l)" -ge 1 ] && break
	sleep 0.05
done
as_nobody holds -H tank@1 | grep -q '\.restore-' || fail "root's restore does not hold tank@1"
rpid=$(pgrep -P $pid)
[ -n "$rpid" ] && kill -KILL "$rpid" || fail "root's restore could not be killed"
wait $pid 2>/dev/null
[ -n "$(ls "$CAIRN_STORE/holders")" ] || fail "the killed restore left no holder file"
out=$(as_nobody destroy tank@1 2>&1) || fail "the owner's destroy after root's restore was killed: $out"
chown -R root:root "$CAIRN_STORE"
done_test
