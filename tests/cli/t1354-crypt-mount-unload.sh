#!/bin/bash
# unload-key reaches a running mount: zfs refuses to unload the key of a
# mounted dataset; cairn's mount holds decrypted snapshot views in its own
# process, so after unload-key it refuses to open or read them (EACCES, as
# when it began without the key) until the key is loaded again.  Files it
# had opened before fail on their next read.  A key file (keylocation
# file://) keeps them readable while it is there, as it would a new view.
. "$(dirname "$0")/lib.sh"
need_fuse
. "$(dirname "$0")/crypt.sh"
. "$(dirname "$0")/mount.sh"
M=$TESTDIR/mnt
mkdir -p "$M"
trap '"$CAIRN" unload-key -a >/dev/null 2>&1; mount_cleanup "$M"; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT
new_store
S=$TESTDIR/src
mkdir -p "$S"
echo secret >"$S/a"
echo other >"$S/b"
head -c 3000000 /dev/urandom >"$S/big"

ok mkroot enc "$PASS1" -o source="$S"
ok cairn snapshot enc@1
ok cairn mount "$M" enc
[ "$(cat "$M/.zfs/snapshot/1/a")" = secret ] || fail "read with the key loaded"
exec 3<"$M/.zfs/snapshot/1/big"
head -c 1000 <&3 >/dev/null || fail "first read of an open file"
ok cairn unload-key enc
# a loaded view: a file read before, one never read, and the open file
err=$(cat "$M/.zfs/snapshot/1/a" 2>&1) && fail "read a file after unload-key: $err"
echo "$err" | grep -q "Permission denied" || fail "after unload-key: expected permission denied, got: $err"
cat "$M/.zfs/snapshot/1/b" >/dev/null 2>&1 && fail "opened a file never read after unload-key"
# (past the pages the kernel read ahead for the first read)
dd bs=64k skip=40 count=1 <&3 >/dev/null 2>&1 && fail "read an open file on after unload-key"
exec 3<&-
# loaded again: readable again
printf '%s\n' "$PASS1" | ok cairn load-key enc
[ "$(cat "$M/.zfs/snapshot/1/b")" = other ] || fail "read after load-key again"
fusermount3 -u "$M" || fail "unmount"

# a key file: a view stays readable after unload-key while the file is there
printf '%s\n' "$PASS2" >"$TESTDIR/key"
ok cairn create -o encryption=on -o keyformat=passphrase -o keylocation="file://$TESTDIR/key" \
	-o source="$S" fenc
ok cairn snapshot fenc@1
ok cairn mount "$M" fenc
[ "$(cat "$M/.zfs/snapshot/1/a")" = secret ] || fail "key file: read"
ok cairn unload-key fenc
[ "$(cat "$M/.zfs/snapshot/1/b")" = other ] || fail "key file: read after unload-key"
mv "$TESTDIR/key" "$TESTDIR/key.away"
cat "$M/.zfs/snapshot/1/a" >/dev/null 2>&1 && fail "key file gone and key unloaded: still read"
fusermount3 -u "$M" || fail "unmount fenc"
done_test
