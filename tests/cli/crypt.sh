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

