#!/bin/bash
# A partial backup: a file the backup cannot read makes `cairn snapshot`
# exit 1 naming it, and everything else is stored (the snapshot exists and
# restores); --strict refuses instead.  Files changing during a backup: a
# file appended to while it is read is stored as a prefix of what it became
# (never bytes it did not have), the other files are exact, and the next
# backup stores the final content.  Needs root (to run the backup as an
# unprivileged user, for whom a file can be unreadable).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "needs root: the backup runs as user nobody"; exit 77; }
command -v setpriv >/dev/null || { echo "needs setpriv (util-linux)"; exit 77; }
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/d"
echo one >"$SRC/a"
echo two >"$SRC/d/b"
head -c 300000 /dev/urandom >"$SRC/big"
echo secret >"$SRC/d/locked" && chmod 000 "$SRC/d/locked"
# unreadable files with a second name: small (read with its bundle) and
# large (read on its own); the second names are left out with them
ln "$SRC/d/locked" "$SRC/z-locked"
head -c 300000 /dev/urandom >"$SRC/d/biglocked" && chmod 000 "$SRC/d/biglocked"
ln "$SRC/d/biglocked" "$SRC/z-biglocked"
chmod 755 "$TESTDIR" "$SRC" "$SRC/d"
chmod 644 "$SRC/a" "$SRC/d/b" "$SRC/big"
ok cairn create -o source="$SRC" tank
chown -R nobody "$CAIRN_STORE"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$CAIRN" "$@"; }

err=$(as_nobody snapshot tank@partial 2>&1); rc=$?
[ $rc = 1 ] || fail "partial backup exit $rc: $err"
echo "$err" | grep -q "d/locked" || fail "the unreadable file is not named: $err"
echo "$err" | grep -q "Permission denied\|could not be read" || fail "no reason given: $err"
for l in locked biglocked; do
	echo "$err" | grep -q "z-$l (a hardlink of $SRC/d/$l): Permission denied (skipped)" ||
		fail "the second name of unreadable d/$l is not named: $err"
done
cairn list -H -o name -t snapshot | grep -qx 'tank@partial' || fail "partial snapshot not kept"
ok cairn restore tank@partial "$TESTDIR/r"
for p in d/locked z-locked d/biglocked z-biglocked; do
	[ -e "$TESTDIR/r/$p" ] && fail "unreadable $p was restored"
done
[ "$(cat "$TESTDIR/r/a")" = one ] && [ "$(cat "$TESTDIR/r/d/b")" = two ] || fail "readable files not stored"
cmp -s "$SRC/big" "$TESTDIR/r/big" || fail "big not stored"
[ -e "$TESTDIR/r/d/locked" ] && fail "the unreadable file was restored (with what content?)"
# --strict: no snapshot at all
fails_with 1 "d/[a-z]*locked: Permission denied" as_nobody snapshot --strict tank@strict
cairn list -H -o name -t snapshot | grep -q 'tank@strict' && fail "--strict kept a snapshot"
chown -R root "$CAIRN_STORE"

# ---- a file appended to during the backup ----
chmod 644 "$SRC/d/locked" "$SRC/d/biglocked"
head -c 20000000 /dev/urandom >"$SRC/grow"
(
	while [ ! -e "$TESTDIR/stop" ]; do head -c 65536 /dev/urandom >>"$SRC/grow"; done
) &
writer=$!
size0=$(stat -c %s "$SRC/grow")
ok cairn snapshot tank@moving
size1=$(stat -c %s "$SRC/grow")
touch "$TESTDIR/stop"
wait $writer
echo "grow: $size0 bytes when the backup started, $size1 when it ended"
[ "$size1" -gt "$size0" ] || fail "the file did not change during the backup (the race did not happen)"
ok cairn restore tank@moving "$TESTDIR/m"
got=$(stat -c %s "$TESTDIR/m/grow")
[ "$got" -ge "$size0" ] && [ "$got" -le "$size1" ] || fail "stored $got bytes, the file had $size0..$size1"
cmp -s -n "$got" "$TESTDIR/m/grow" "$SRC/grow" || fail "the stored bytes are not a prefix of the file"
cmp -s "$SRC/big" "$TESTDIR/m/big" && cmp -s "$SRC/a" "$TESTDIR/m/a" || fail "unchanged files differ"
# the next backup has the final content
ok cairn snapshot tank@after
ok cairn restore tank@after "$TESTDIR/f"
cmp -s "$SRC/grow" "$TESTDIR/f/grow" || fail "the backup after the change"
done_test
