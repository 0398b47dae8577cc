#!/bin/bash
# A busy refusal looks through every visible process's descriptors for
# the holders of the lock on keyusers.lock (lockholders.c).  It stat()ed
# each descriptor (/proc/PID/fd/N), which follows it to its file and asks
# that file's filesystem: one descriptor anywhere on a FUSE or NFS file
# whose server does not answer, and the refusal never came.  destroy
# makes it inside the catalog's write transaction, so every writer of
# the store waited too.  The locks listed in /proc/PID/fdinfo/N name
# their file (device:inode) themselves, and reading them asks no
# filesystem: the refusal now comes at once, naming the holder.
. "$(dirname "$0")/lib.sh"
need_fuse
. "$(dirname "$0")/crypt.sh"
. "$(dirname "$0")/mount.sh"
M=$TESTDIR/mnt
mkdir -p "$M"
HOLDER= SLEEPER= MPID=
trap '[ -n "$MPID" ] && kill -CONT "$MPID" 2>/dev/null; for p in $HOLDER $SLEEPER; do kill "$p" 2>/dev/null; done
	"$CAIRN" unload-key -a >/dev/null 2>&1; mount_cleanup "$M"; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT

locked_root
ok cairn create -o source="$SRC" plain
ok cairn snapshot plain@1

# a process with a file of a FUSE mount open, and that mount stopped
mount_fg "$M" plain "$TESTDIR/mount.err"
sleep 600 <"$M/.zfs/snapshot/1/f" &
SLEEPER=$!
# a reader's lock on the whole file
python3 -c '
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37),
	    struct.pack("hhqqi", fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0))
open(sys.argv[2], "w").close()
time.sleep(600)
' "$lock" "$TESTDIR/ready" &
HOLDER=$!
for _ in $(seq 1 1000); do [ -e "$TESTDIR/ready" ] && break; sleep 0.01; done
[ -e "$TESTDIR/ready" ] || fail "the lock holder did not start"
kill -STOP "$MPID"
sleep 2 # past the mount's attribute timeout (1 s): a stat must ask it

# both refusals come, naming the holder (SIGKILL: a FUSE wait ignores TERM)
for cmd in "unload-key enc" "destroy -r enc"; do
	err=$(timeout -s KILL 30 "$CAIRN" $cmd 2>&1 >/dev/null)
	rc=$?
	[ $rc = 1 ] || fail "$cmd with a stopped FUSE server: exit $rc (137: hung, killed): $err"
	echo "$err" | grep -q "is held by pid $HOLDER (python3)" || fail "$cmd: holder not named: $err"
done
kill -CONT "$MPID"
kill "$HOLDER" "$SLEEPER"
wait "$HOLDER" "$SLEEPER" 2>/dev/null
HOLDER= SLEEPER=
unmount_fg "$M" "$MPID" "$TESTDIR/mount.err"
MPID=
[ "$(keystatus enc)" = available ] || fail "a refused unload-key took the key"
ok cairn destroy -r enc
done_test
