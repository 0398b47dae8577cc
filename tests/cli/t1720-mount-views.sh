#!/bin/bash
# cairn mount: the loaded snapshot views stay valid while files are open
# (many snapshots opened after a file is; lookups racing each other), and a
# snapshot name is looked up afresh each time: after `rename ds@1 ds@old`
# and a new ds@1, .zfs/snapshot/1 shows the new snapshot, old/ the renamed
# one, a file opened before the rename keeps reading the old one, and
# unmount releases each hold on the snapshot it was taken on.
. "$(dirname "$0")/lib.sh"
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	[ "${CI:-}" = true ] && { echo "FAIL: /dev/fuse or fusermount3 missing under CI"; exit 1; }
	echo "no /dev/fuse or fusermount3"
	exit 77
fi
M=$TESTDIR/mnt
M2=$TESTDIR/mnt2
mkdir -p "$M" "$M2"
pids=()
# Unmount whatever happens, before lib.sh removes the directory.
cleanup() {
	exec 3<&- 2>/dev/null
	fusermount3 -u -z "$M" 2>/dev/null
	fusermount3 -u -z "$M2" 2>/dev/null
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"
}
trap cleanup EXIT

# mount_fg MOUNTPOINT DATASET ERRFILE: mounts in the foreground, as a job
# of this shell (its exit status and stderr are checked at unmount).
mount_fg() {
	"$CAIRN" mount -f "$1" "$2" 2>"$3" &
	pids+=($!)
	MPID=$!
	for _ in $(seq 100); do mountpoint -q "$1" && return 0; sleep 0.05; done
	fail "$1 not mounted"
	return 1
}

# unmount_fg MOUNTPOINT PID ERRFILE: unmounts; the mount process must exit 0
# and print nothing (a failed release of its holds is printed).
unmount_fg() {
	fusermount3 -u "$1" || fail "unmount $1"
	wait "$2"
	local rc=$?
	[ $rc -eq 0 ] || fail "mount process of $1 exited $rc: $(cat "$3")"
	[ -s "$3" ] && fail "mount process of $1 printed: $(cat "$3")"
}

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
unmount_fg "$M" "$P1" "$TESTDIR/mount1.err"
[ -z "$(cairn holds -H ds@s1 ds@s20 ds@s40)" ] || fail "holds left on ds: $(cairn holds ds@s1 ds@s20 ds@s40)"

# 2. A snapshot renamed away and its name reused.
S2=$TESTDIR/src2
mkdir -p "$S2"
echo old >"$S2/a"
printf one1 >"$S2/b"
touch -d @1000000000 "$S2/b"
ok cairn create -o source="$S2" t
ok cairn snapshot t@1
mount_fg "$M2" t "$TESTDIR/mount2.err"
P2=$MPID
Z=$M2/.zfs/snapshot
ls "$Z/1" >/dev/null || fail "ls 1"
[ "$(cat "$Z/1/b")" = one1 ] || fail "b before the rename"
exec 3<"$Z/1/a"
ok cairn rename t@1 t@old
echo changed >"$S2/a"
printf two2 >"$S2/b" # same size and mtime as before: only the identity differs
touch -d @1000000000 "$S2/b"
echo N >"$S2/brandnew"
ok cairn snapshot t@1
[ "$(cat "$Z/1/a")" = changed ] || fail "1/a after the name was reused: $(cat "$Z/1/a")"
[ -f "$Z/1/brandnew" ] || fail "1/brandnew missing after the name was reused"
[ "$(cat "$Z/old/a")" = old ] || fail "old/a: $(cat "$Z/old/a")"
[ -e "$Z/old/brandnew" ] && fail "old/brandnew exists"
read -r line <&3
[ "$line" = old ] || fail "a file opened before the rename reads '$line'"
exec 3<&-
sleep 1.2 # past the kernel's entry and attribute timeouts
[ "$(cat "$Z/1/b")" = two2 ] || fail "1/b after the name was reused: $(cat "$Z/1/b")"
[ "$(stat -c %s "$Z/1/a")" = 8 ] || fail "1/a: size $(stat -c %s "$Z/1/a") after the name was reused"
[ "$(ls "$Z" | tr "\n" " ")" = "1 old " ] || fail "snapshot list: $(ls "$Z")"
cairn holds -H t@old | grep -q "mount\.$P2" || fail "no hold on t@old (the renamed snapshot)"
cairn holds -H t@1 | grep -q "mount\.$P2" || fail "no hold on the new t@1"
unmount_fg "$M2" "$P2" "$TESTDIR/mount2.err"
[ -z "$(cairn holds -H t@1 t@old)" ] || fail "holds left: $(cairn holds t@1 t@old)"
ok cairn destroy t@old
ok cairn destroy t@1

done_test
