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
trap '"$CAIRN" unload-key -a >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$TESTDIR" ${XATTR_DIRS:-}' EXIT

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


# key_marked: some command holds a key of this store (a read lock on
# keyusers.lock, as /proc/locks lists it).
key_marked() {
	local ino
	ino=$(stat -c %i "$CAIRN_STORE/keyusers.lock" 2>/dev/null) || return 1
	grep -Eq "OFDLCK +ADVISORY +READ +-?[0-9]+ [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks
}

# start_stopped_restore SNAP DIR [PREFIX...]: starts a restore of SNAP
# (best a big one) into DIR and stops it (SIGSTOP) once it holds the key:
# $RESTORE is its pid, for kill -CONT and wait.  PREFIX runs it (a command
# that execs the rest, as setpriv does).  A restore that ended before it
# could be stopped fails the test.
start_stopped_restore() {
	local snap=$1 dir=$2
	shift 2
	"$@" "$CAIRN" restore "$snap" "$dir" &
	RESTORE=$!
	for _ in $(seq 1 2000); do
		key_marked && break
		kill -0 "$RESTORE" 2>/dev/null || break
	done
	kill -STOP "$RESTORE" 2>/dev/null && key_marked ||
		fail "the restore of $snap ended before it was stopped holding its key"
}
