#!/bin/bash
# Restore sets an object's metadata in the order that keeps all of it:
# owner first (a chown clears file capabilities and set-id bits), then the
# xattrs, then mode and times.  A directory's default ACL is set after its
# children exist, so a child that had no ACL does not inherit one.  FIFOs,
# devices and sockets get their xattrs (ACLs) too.  A root restore that
# cannot set an owner (a user namespace) says so and fails, unless told
# --no-same-owner.  A volume
# restores onto a block device with --force (no truncate of a device).
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC/d/sub"
cp /bin/true "$SRC/captrue"
chown 1234:5678 "$SRC/captrue"
chmod 4755 "$SRC/captrue"
# a v2 file capability: cap_net_raw, effective
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "security.capability",
	bytes.fromhex("0100000200200000000000000000000000000000"))' "$SRC/captrue" ||
	fail "setting a file capability"
# d/plain and d/sub exist before d gets its default ACL: they have none
echo plain >"$SRC/d/plain"
setfacl -d -m u:1:rwx "$SRC/d" || fail "setfacl -d"
echo later >"$SRC/d/later" # inherits the default ACL, recorded as its own
mkfifo "$SRC/fifo" && setfacl -m u:2:r "$SRC/fifo" || fail "fifo ACL"
mknod "$SRC/chr" c 1 3 && setfacl -m u:3:r "$SRC/chr" || fail "device ACL"
chown 4321:8765 "$SRC/d/sub"
ok cairn create -o source="$SRC" ds
ok cairn snapshot ds@a
ok cairn restore ds@a "$TESTDIR/out"
same_tree "$SRC" "$TESTDIR/out"
[ "$(getfattr -h --only-values -n security.capability "$TESTDIR/out/captrue" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = \
	"0100000200200000000000000000000000000000" ] || fail "the file capability was lost"
[ "$(stat -c %a "$TESTDIR/out/captrue")" = 4755 ] || fail "setuid bit lost: $(stat -c %a "$TESTDIR/out/captrue")"
getfacl -cn "$TESTDIR/out/d/plain" 2>/dev/null | grep -q "^user:[0-9]" &&
	fail "d/plain inherited an ACL it never had"
getfacl -cn "$TESTDIR/out/d/sub" 2>/dev/null | grep -q "^default:" &&
	fail "d/sub inherited a default ACL it never had"
getfacl -cn "$TESTDIR/out/d" 2>/dev/null | grep -q "^default:user:1:rwx" || fail "d lost its default ACL"
getfacl -cn "$TESTDIR/out/fifo" 2>/dev/null | grep -q "^user:2:r" || fail "the FIFO lost its ACL"
getfacl -cn "$TESTDIR/out/chr" 2>/dev/null | grep -q "^user:3:r" || fail "the device lost its ACL"

# Into an existing empty directory that has a default ACL of its own: the
# target becomes the snapshot's root, and nothing inherits that ACL.
mkdir "$TESTDIR/acl-target"
setfacl -d -m u:7:rwx "$TESTDIR/acl-target" || fail "setfacl -d on the target"
ok cairn restore ds@a "$TESTDIR/acl-target"
getfacl -cn "$TESTDIR/acl-target/captrue" 2>/dev/null | grep -q "^user:7" &&
	fail "a restored file inherited the target's default ACL"
getfacl -cn "$TESTDIR/acl-target/d/sub" 2>/dev/null | grep -q "user:7" &&
	fail "a restored directory inherited the target's default ACL"
getfacl -cn "$TESTDIR/acl-target" 2>/dev/null | grep -q "^default:" &&
	fail "the target kept a default ACL the snapshot's root does not have"

# Root in a user namespace cannot give away 1234:5678: the restore says so.
mkdir "$TESTDIR/ns" && chmod 777 "$TESTDIR/ns"
out=$(unshare -Ur "$CAIRN" restore ds@a "$TESTDIR/ns/r" 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "a root restore that could not set owners exited 0"
echo "$out" | grep -q "captrue.*owner 1234:5678" || fail "the failed owner is not named: $out"
cmp "$SRC/captrue" "$TESTDIR/ns/r/captrue" || fail "the data was not restored in the namespace"
# --no-same-owner (tar's option): owners are left alone, and that is no error
out=$(unshare -Ur "$CAIRN" restore --no-same-owner ds@a "$TESTDIR/ns/r2" 2>&1)
echo "$out" | grep -q "owner" && fail "--no-same-owner still set owners: $out"
[ "$(stat -c %u "$TESTDIR/ns/r2/captrue")" = 0 ] || fail "--no-same-owner: captrue is not the restorer's"

# A volume onto a block device: exact bytes, exit 0.
head -c 3000000 /dev/urandom >"$TESTDIR/vol.img"
ok cairn create -V -o source="$TESTDIR/vol.img" vol
ok cairn snapshot vol@a
truncate -s 4M "$TESTDIR/tgt.img"
loop=$(losetup -f --show "$TESTDIR/tgt.img") || fail "losetup"
if [ -n "$loop" ]; then
	ok cairn restore -f vol@a "$loop"
	cmp -n 3000000 "$TESTDIR/vol.img" "$loop" || fail "the block device holds other bytes"
	losetup -d "$loop"
fi
done_test
