#!/bin/bash
# cairn mount: the loaded snapshot views stay valid while files are open
# (many snapshots opened after a file is; lookups racing each other), and a
# snapshot name is looked up afresh each time: after `rename ds@1 ds@old`
# and a new ds@1, .zfs/snapshot/1 shows the new snapshot (once the kernel's
# 1 s attribute timeout has passed), old/ the renamed one, a file opened
# before the rename keeps reading the old one until the name is reused
# (after that it shares the kernel's inode of the path: cairn-mount(8)), a
# shared mmap works under the reused name, and unmount releases each of its
# holds on the snapshot it was taken on.  A hold already carrying the
# mount's tag (made by hand, or another mount's with the same pid in
# another PID namespace) is used, not fought over, and left in place.
# Holds are read from the catalog directly: any cairn command would reap a
# dead mount's temporary holds first, hiding holds unmount failed to release.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount.sh"
need_fuse
M=$TESTDIR/mnt
M2=$TESTDIR/mnt2
mkdir -p "$M" "$M2"
# Unmount whatever happens, before lib.sh removes the directory.
cleanup() {
	exec 3<&- 2>/dev/null
	mount_cleanup "$M" "$M2"
	[ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"
}
trap cleanup EXIT

new_store

# 1. Many snapshots opened while a file of the first is open and read.
S=$TESTDIR/src
mkdir -p "$S"
echo x >"$S/f"
ok cairn create -o source="$S" ds
for i in $(seq 1 40); do echo "$i" >"$S/n"; ok cairn snapshot "ds@s$i"; done
mount_fg "$M" ds "$TESTDIR/mount1.err"
P1=$MPID
python3 - "$M/.zfs/snapshot" <<'EOF' || fail "a file held open while 39 more snapshots were opened"
import os, sys, threading
d = sys.argv[1]
fd = os.open(d + "/s1/f", os.O_RDONLY)
for i in range(2, 21):
    os.stat("%s/s%d/f" % (d, i))
assert os.pread(fd, 10, 0) == b"x\n", "first read"
# Concurrent lookups of the rest, each thread reading what it opened.
errs = []
def worker(k):
    try:
        for i in range(21 + k, 41, 4):
            with open("%s/s%d/n" % (d, i)) as f:
                assert f.read() == "%d\n" % i, i
            assert os.pread(fd, 10, 0) == b"x\n", "read during lookups"
    except Exception as e:
        errs.append(repr(e))
ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
assert not errs, errs
assert os.pread(fd, 10, 0) == b"x\n", "last read"
os.close(fd)
EOF
mountpoint -q "$M" || fail "the mount died"
[ "$(cat "$M/.zfs/snapshot/s40/n")" = 40 ] || fail "s40 content"
[ "$(holds_of "mount.$P1" | wc -l)" = 40 ] || fail "holds while mounted: $(holds_of "mount.$P1" | wc -l)"
unmount_fg "$M" "$P1" "$TESTDIR/mount1.err"
left=$(holds_of "mount.$P1")
[ -z "$left" ] || fail "holds left on ds: $left"

# 2. A snapshot renamed away and its name reused.
S2=$TESTDIR/src2
mkdir -p "$S2"
echo old >"$S2/a"
printf one1 >"$S2/b"
touch -d @1000000000 "$S2/b"
ok cairn create -o source="$S2" t
ok cairn snapshot t@1
ok cairn snapshot t@h # to carry a hold made by hand with the mount's tag
ok cairn snapshot t@f # to carry another owner's hold with the mount's tag
mount_fg "$M2" t "$TESTDIR/mount2.err"
P2=$MPID
T2=mount.$P2
Z=$M2/.zfs/snapshot
ls "$Z/1" >/dev/null || fail "ls 1"
[ "$(cat "$Z/1/b")" = one1 ] || fail "b before the rename"
exec 3<"$Z/1/a"
ok cairn rename t@1 t@old
read -r line <&3
[ "$line" = old ] || fail "a file opened before the rename reads '$line'"
exec 3<&-
echo changed >"$S2/a"
printf two2 >"$S2/b" # same size and mtime as before: only the identity differs
touch -d @1000000000 "$S2/b"
echo N >"$S2/brandnew"
ok cairn snapshot t@1
[ -f "$Z/1/brandnew" ] || fail "1/brandnew missing after the name was reused"
[ "$(cat "$Z/old/a")" = old ] || fail "old/a: $(cat "$Z/old/a")"
[ -e "$Z/old/brandnew" ] && fail "old/brandnew exists"
sleep 1.2 # at least past the kernel's entry and attribute timeouts
[ "$(cat "$Z/1/a")" = changed ] || fail "1/a after the name was reused: $(cat "$Z/1/a")"
[ "$(cat "$Z/1/b")" = two2 ] || fail "1/b after the name was reused: $(cat "$Z/1/b")"
[ "$(stat -c %s "$Z/1/a")" = 8 ] || fail "1/a: size $(stat -c %s "$Z/1/a") after the name was reused"
# A shared read-only mapping (as a loader or a search tool may make) under
# the reused name, and under the renamed snapshot's new name.
python3 - "$Z" <<'EOF' || fail "shared mmap of files under a reused name"
import mmap, sys
for name, want in (("1/a", b"changed\n"), ("1/b", b"two2"), ("old/a", b"old\n")):
    with open("%s/%s" % (sys.argv[1], name), "rb") as f:
        m = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
        assert m[:] == want, (name, m[:])
        m.close()
EOF
[ "$(ls "$Z" | tr "\n" " ")" = "1 f h old " ] || fail "snapshot list: $(ls "$Z")"

# A hold with the mount's tag already on a snapshot, made by hand (a stray
# of the mount's own would do the same): reading it works, and the hold
# stays the user's.  And one with the same tag by another owner (a mount
# whose pid is the same in its PID namespace), written to the catalog
# directly: no cairn command may open the store until unmount, as it would
# reap that hold (its owner is fictitious).
ok cairn hold "$T2" t@h
python3 - "$CAIRN_STORE/catalog.db" "$T2" "$P2" <<'EOF' || fail "cannot add the other owner's hold"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=60)
with db:
    sid = db.execute("SELECT s.id FROM snapshot s JOIN dataset d ON d.id = s.dataset"
                     " WHERE d.name = 't' AND s.name = 'f'").fetchone()[0]
    db.execute("INSERT INTO hold VALUES(?, ?, 0, ?, ?)", (sid, sys.argv[2], int(sys.argv[3]), -12345))
    db.execute("UPDATE snapshot SET userrefs = userrefs + 1 WHERE id = ?", (sid,))
EOF
[ "$(cat "$Z/h/a")" = old ] || fail "h/a under a hand-made hold with the mount's tag: $(cat "$Z/h/a" 2>&1)"
[ "$(cat "$Z/f/a")" = old ] || fail "f/a under another owner's hold with the mount's tag: $(cat "$Z/f/a" 2>&1)"
h=$(holds_of "$T2" | tr "\n" " ")
[ "$h" = "t@1 $P2 t@f $P2 t@h 0 t@old $P2 " ] || fail "holds while mounted: $h"
unmount_fg "$M2" "$P2" "$TESTDIR/mount2.err"
h=$(holds_of "$T2" | tr "\n" " ")
[ "$h" = "t@f $P2 t@h 0 " ] || fail "holds after unmount (only the hand-made one and the other owner's should stay): $h"
ok cairn release "$T2" t@h
[ -z "$(cairn holds -H t@f)" ] || fail "the other owner's hold was not reaped (its owner is gone)"
for s in old 1 h f; do ok cairn destroy "t@$s"; done

done_test
