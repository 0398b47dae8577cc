# crypt.sh - sourced by the encryption tests (t13xx) after lib.sh.
# Runs the test inside a session keyring of its own (keyctl session -), so
# the keys it loads never reach the user keyring and vanish with it; it
# also unloads them on exit.  A small scrypt N keeps each wrap fast (the
# value is recorded in every key blob; production uses the default).
if [ -z "${CAIRN_CRYPT_SESSION:-}" ]; then
	command -v keyctl >/dev/null || { echo "keyctl missing (apt-get install keyutils)"; exit 1; }
	export CAIRN_CRYPT_SESSION=1
	# exec skips lib.sh's EXIT trap: this run's scratch directory goes
	# now (the test's own run makes another)
	rm -rf "$TESTDIR"
	exec keyctl session - bash "$0" "$@" 2>&1
fi
export CAIRN_KEYRING=session CAIRN_TEST_SCRYPT_LOGN=12
trap '[ -n "${HOLDER:-}" ] && kill "$HOLDER" 2>/dev/null; "$CAIRN" unload-key -a >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR" ${XATTR_DIRS:-}' EXIT

PASS1="correct horse battery"
PASS2="another long passphrase"

# mkroot NAME PASSPHRASE [more create args]: an encryption root whose
# passphrase is piped in (keylocation=prompt).
mkroot() {
	local name=$1 pass=$2
	shift 2
	printf '%s\n' "$pass" | "$CAIRN" create -o encryption=on -o keyformat=passphrase "$@" "$name"
}

# keystatus DS: available / unavailable.
keystatus() {
	"$CAIRN" get -H -o value keystatus "$1"
}


# key_prefix: "cairn:<store id>:", the start of the names of this store's
# keys, taken from a key of it in this test's session keyring (call it
# while there is one).  For a keyctl purge -p in a second user's keyring
# that takes this test's keys only: a purge of every "cairn:" key also
# took the keys of another test running as that user at the same time.
key_prefix() {
	keyctl show @s | grep -o 'cairn:[0-9a-f]\{16\}:' | head -n 1 | grep . ||
		fail "no key of this store in the session keyring"
}

# big_root ROOT SNAP: a new encryption root ROOT (key $PASS1) with one
# snapshot, ROOT@SNAP, of a 64 MB file, uncompressed: a restore of it runs
# long enough to be stopped holding the key (start_stopped_restore).
big_root() {
	local src=$TESTDIR/big-src
	mkdir -p "$src"
	head -c 64000000 /dev/urandom >"$src/big"
	ok mkroot "$1" "$PASS1" -o compression=off -o source="$src"
	ok cairn snapshot "$1@$2"
	rm -rf "$src"
}

# lock_listed FILE TYPE KIND: /proc/locks lists a lock of TYPE (OFDLCK,
# FLOCK) and KIND (READ, WRITE) on FILE.
lock_listed() {
	local ino
	ino=$(stat -c %i "$1" 2>/dev/null) || return 1
	grep -Eq "$2 +ADVISORY +$3 +-?[0-9]+ [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks
}

# key_marked: some command holds a key of this store (a read lock on
# keyusers.lock, as /proc/locks lists it): an OFD one, or where the test
# refuses OFD locks (OFD_SHIM=refuse, tests/cli/ofd-shim.c) the shared
# flock on the whole file that marks a key there.
key_marked() {
	if [ "${OFD_SHIM:-}" = refuse ]; then
		lock_listed "$CAIRN_STORE/keyusers.lock" FLOCK READ
	else
		lock_listed "$CAIRN_STORE/keyusers.lock" OFDLCK READ
	fi
}

# start_stopped_restore SNAP DIR [PREFIX...]: starts a restore of SNAP
# (best a big one) into DIR and stops it (SIGSTOP) once it holds the key;
# resume_restore lets it go on and returns its exit status.  PREFIX runs
# it: a command that execs the rest (as setpriv does), or a shell function,
# which bash runs in a subshell of its own that waits for the restore.
# So $RESTORE is the job (for wait) and $RESTORE_PID the cairn process
# found among it and its descendants: the one stopped (stopping a
# function's subshell left the restore running, and the test's "busy"
# checks raced its end).  A restore that ended before it was stopped, or
# that no longer holds the key once stopped, fails the test.  With
# RESTORE_HELD=1 it is stopped only once it also holds its snapshot
# (unhold_restore): the restore marks the key before it judges the target
# and takes that hold, so a stop at the key alone may come before it.
start_stopped_restore() {
	local snap=$1 dir=$2 st
	shift 2
	"$@" "$CAIRN" restore "$snap" "$dir" &
	RESTORE=$!
	RESTORE_PID=
	for _ in $(seq 1 2000); do
		key_marked && { [ -z "${RESTORE_HELD:-}" ] || [ -n "$(restore_hold_tag "$snap")" ]; } &&
			break
		kill -0 "$RESTORE" 2>/dev/null || break
	done
	RESTORE_PID=$(cairn_in_tree "$RESTORE")
	if [ -z "$RESTORE_PID" ] || ! kill -STOP "$RESTORE_PID" 2>/dev/null; then
		fail "the restore of $snap ended before it was stopped holding its key"
		return
	fi
	# stopped for certain (kill only sends the signal), and then holding the key
	for _ in $(seq 1 2000); do
		st=$(sed 's/.*) //' "/proc/$RESTORE_PID/stat" 2>/dev/null | cut -d' ' -f1)
		[ "$st" = T ] && break
		[ -n "$st" ] || break
	done
	[ "$st" = T ] && key_marked ||
		fail "the restore of $snap was not stopped holding its key (state '$st')"
}

# unhold_restore SNAP: releases the temporary hold that the stopped
# restore took on SNAP.  A restore that cannot take one (a user who cannot
# write to the store) runs without it, and then only its busy key keeps a
# destroy off its encryption root: the tests of that refusal need it gone.
unhold_restore() {
	local tag
	tag=$(restore_hold_tag "$1")
	[ -n "$tag" ] && cairn release "$tag" "$1" || fail "no restore's hold to release on $1"
}

# restore_hold_tag SNAP: the tag of a running restore's temporary hold on
# SNAP (none: empty).
restore_hold_tag() {
	cairn holds -H "$1" 2>/dev/null | awk '$2 ~ /^\.restore-/ {print $2; exit}'
}

# resume_restore: the stopped restore goes on; its exit status.
resume_restore() {
	[ -n "$RESTORE_PID" ] && kill -CONT "$RESTORE_PID"
	wait "$RESTORE"
}

# cairn_in_tree PID: the first $CAIRN process among PID and its descendants.
cairn_in_tree() {
	local pids=$1 next p
	while [ -n "${pids//[[:space:]]/}" ]; do
		next=
		for p in $pids; do
			[ /proc/"$p"/exe -ef "$CAIRN" ] && { echo "$p"; return 0; }
			next="$next $(pgrep -P "$p")"
		done
		pids=$next
	done
	return 1
}

# ---- a second user (t1374-t1378) ----
# OTHER: a uid of no one, whose user keyring is its own.
OTHER=60123
# need_other_user: these tests run commands as OTHER; without root or
# setpriv they exit 77 (which CI counts as a failure).
need_other_user() {
	[ "$(id -u)" = 0 ] || { echo "needs root (to run as a second user)"; exit 77; }
	command -v setpriv >/dev/null || { echo "setpriv missing"; exit 77; }
}
# as_other [session] CMD...: CMD as OTHER (exec'd, same pid), from a
# session keyring of its own that links OTHER's user keyring, as a
# login's does (so the process possesses the keys, which it needs to set
# their timeout).  Keys go to and come from OTHER's user keyring; with
# "session", CMD runs with CAIRN_KEYRING=session and finds the user
# keyring's keys through that link.
as_other() {
	local mode=user
	[ "$1" = session ] && mode=session && shift
	setpriv --reuid=$OTHER --regid=$OTHER --clear-groups keyctl session - \
		sh -c 'keyctl link @u @s >/dev/null && m=$1 && shift &&
			if [ "$m" = session ]; then exec env CAIRN_KEYRING=session "$@";
			else exec env -u CAIRN_KEYRING "$@"; fi' sh "$mode" "$@"
}

# locked_root: a new store with the encryption root enc (one file, enc@1)
# whose key a command has used, so keyusers.lock exists; $lock names it.
locked_root() {
	new_store
	one_file_src
	ok mkroot enc "$PASS1" -o source="$SRC"
	ok cairn snapshot enc@1
	ok cairn diff enc@1 enc@1 >/dev/null
	lock=$CAIRN_STORE/keyusers.lock
	[ -f "$lock" ] || fail "no lock file after a command used a key"
}

# readonly_for_other: the store (root's) is readable by $OTHER, not
# writable.
readonly_for_other() {
	chmod 755 "$TESTDIR"
	chmod -R go+rX "$CAIRN_STORE"
	as_other touch "$CAIRN_STORE/x" 2>/dev/null && fail "OTHER can write the store"
}

# ---- a process holding the lock file ($lock) ----
# hold_lock HOW SECONDS READY [PREFIX...]: a python3 process (PREFIX runs
# it) that locks all of $lock (length 0: to its end), HOW: "read" (an OFD
# read lock, taken on the file opened read-only, as a reader of the store
# can), "write" (an OFD write lock) or "flock" (flock LOCK_EX, what a key
# mark is where there are no OFD locks); then writes its pid to READY and
# keeps the lock for SECONDS.  HOLDER is its pid and HOLDER_JOB the job
# around it, once /proc/locks lists its lock for certain (holder_holds).
# crypt.sh's EXIT trap kills a $HOLDER left running.
hold_lock() {
	local ready=$3
	HOLDER_HOW=$1
	rm -f "$ready"
	# a subshell that outlives it: bash reports no job killed
	( "${@:4}" python3 -c '
import fcntl, os, struct, sys, time
how, path, ready, seconds = sys.argv[1:5]
fd = os.open(path, os.O_RDONLY if how == "read" else os.O_RDWR)
if how == "flock":
	fcntl.flock(fd, fcntl.LOCK_EX)
else:
	kind = fcntl.F_RDLCK if how == "read" else fcntl.F_WRLCK
	fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37),
		    struct.pack("hhqqi", kind, os.SEEK_SET, 0, 0, 0))
with open(ready + ".tmp", "w") as f:
	f.write(str(os.getpid()))
os.rename(ready + ".tmp", ready)
time.sleep(float(seconds))
' "$1" "$lock" "$ready" "$2"; true ) 2>/dev/null &
	HOLDER_JOB=$!
	HOLDER=
	for _ in $(seq 1 500); do
		[ -s "$ready" ] && break
		sleep 0.01
	done
	HOLDER=$(cat "$ready" 2>/dev/null)
	[ -n "$HOLDER" ] && holder_holds || fail "the lock holder did not start holding the lock"
}

# holder_holds: /proc/locks lists a lock of the kind hold_lock took on $lock.
holder_holds() {
	case $HOLDER_HOW in
	read) lock_listed "$lock" OFDLCK READ ;;
	write) lock_listed "$lock" OFDLCK WRITE ;;
	flock) lock_listed "$lock" FLOCK WRITE ;;
	esac
}

# held_throughout: the holder still holds its lock (checked after the
# commands it was to keep busy).
held_throughout() {
	holder_holds || fail "the holder $HOLDER was not holding the lock throughout"
}

# stop_holder: kills the holder; its lock must be gone with it.  (A
# holder still holding stays in $HOLDER, for the EXIT trap to kill.)
stop_holder() {
	kill "$HOLDER" 2>/dev/null
	wait "$HOLDER_JOB" 2>/dev/null
	if holder_holds; then
		fail "the lock holder $HOLDER still holds the lock"
	else
		HOLDER=
	fi
}
