#!/bin/bash
# A busy refusal names the processes holding the lock on keyusers.lock,
# found through /proc/PID/fdinfo (lockholders.c, t1383).  What it names
# must be a process that really keeps the lock from being taken, shown
# so that it cannot write to the terminal:
# - flock() locks are separate from fcntl and OFD locks on Linux: a
#   process holding flock on the file blocks nothing, and was named;
# - a process names itself (its comm, prctl PR_SET_NAME): anyone who may
#   read the store could hold the lock under a name of terminal escapes,
#   printed raw to root's terminal with the refusal; now every byte that
#   is not printable ASCII is shown as \ooo.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/crypt.sh"

locked_root
HOLDERS=()
trap 'for p in "${HOLDERS[@]}"; do kill "$p" 2>/dev/null; done; "$CAIRN" unload-key -a >/dev/null 2>&1; rm -rf "$TESTDIR"' EXIT

# hold HOW NAME: a python3 process that opens the lock file read-only,
# names itself NAME (its comm) and locks all of it, HOW: "ofd" (a read
# lock, as a command marking a key takes), "posix" (a POSIX read lock,
# which conflicts too) or "flock" (flock LOCK_SH, which does not);
# then sleeps.  HOLDER is its pid once it holds the lock.
hold() {
	local ready=$TESTDIR/ready.$RANDOM
	python3 -c '
import ctypes, fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
ctypes.CDLL(None).prctl(15, sys.argv[3].encode("latin-1"), 0, 0, 0)
if sys.argv[2] == "flock":
	fcntl.flock(fd, fcntl.LOCK_SH)
elif sys.argv[2] == "posix":
	fcntl.lockf(fd, fcntl.LOCK_SH)
else:
	fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37),
		    struct.pack("hhqqi", fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0))
with open(sys.argv[4] + ".tmp", "w") as f:
	f.write(str(os.getpid()))
os.rename(sys.argv[4] + ".tmp", sys.argv[4])
time.sleep(600)
' "$lock" "$1" "$2" "$ready" 2>/dev/null &
	HOLDERS+=($!)
	for _ in $(seq 1 1000); do
		[ -s "$ready" ] && break
		sleep 0.01
	done
	HOLDER=$(cat "$ready" 2>/dev/null)
	[ -n "$HOLDER" ] || fail "the $1 holder did not start"
}
# stop_holders: ends them all.
stop_holders() {
	local p
	for p in "${HOLDERS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	HOLDERS=()
}
# busy_msg CMD...: CMD must be refused (exit 1); its stderr.
busy_msg() {
	local err rc
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	[ $rc = 1 ] || fail "expected exit 1, got $rc: $* ($err)"
	printf '%s' "$err"
}

# a flock holder is not a holder: only the OFD one is named
hold flock flocker
FLOCKER=$HOLDER
hold ofd ofdholder
OFD=$HOLDER
for cmd in "unload-key enc" "destroy -r enc"; do
	err=$(busy_msg cairn $cmd)
	echo "$err" | grep -q "is held by .*pid $OFD (ofdholder)" || fail "$cmd: OFD holder not named: $err"
	echo "$err" | grep -q "$FLOCKER\|flocker" && fail "$cmd: names the flock holder $FLOCKER: $err"
done
stop_holders
# the flock holder alone: nothing is busy
hold flock flocker
ok cairn unload-key enc
printf '%s\n' "$PASS1" | ok cairn load-key enc
stop_holders
# a POSIX lock conflicts with an OFD one: its holder is named
hold posix poser
err=$(busy_msg cairn unload-key enc)
echo "$err" | grep -q "is held by pid $HOLDER (poser)" || fail "POSIX holder not named: $err"
stop_holders

# a holder named with control bytes: shown escaped, never raw
hold ofd "$(printf 'a\033[2Jb\tc\001')"
err=$(busy_msg cairn unload-key enc)
echo "$err" | grep -q "is held by pid $HOLDER (a\\\\033\[2Jb\\\\011c\\\\001)" ||
	fail "the holder's escaped name is not in: $(printf '%s' "$err" | od -c | head -20)"
printf '%s' "$err" | LC_ALL=C grep -q '[[:cntrl:]]' &&
	fail "raw control bytes in the refusal: $(printf '%s' "$err" | od -c | tail -5)"
stop_holders
done_test
