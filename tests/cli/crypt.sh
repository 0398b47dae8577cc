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

# rich_tree DIR: every kind of object same_tree checks, with marker
# strings in names and content for the plaintext greps.
rich_tree() {
	local s=$1
	mkdir -p "$s/d1/d2" "$s/hd"
	echo "MARKERCONTENT_cairn_7f3a first" >"$s/MARKERNAME_secret_file.txt"
	for i in $(seq 1 40); do echo "small $i MARKERCONTENT_cairn_7f3a" >"$s/d1/s$i"; done
	head -c 2500000 /dev/urandom >"$s/big.bin"
	{ cat "$s/big.bin"; echo MARKERCONTENT_cairn_7f3a; } >"$s/big2.bin"
	: >"$s/empty"
	ln -s d1/s1 "$s/link"
	echo three >"$s/h1" && ln "$s/h1" "$s/h2" && ln "$s/h1" "$s/hd/h3"
	mkfifo "$s/fifo"
	truncate -s 20M "$s/sparse"
	printf 'middle' | dd of="$s/sparse" bs=1 seek=9000000 conv=notrunc status=none
	chmod 4751 "$s/empty"
	touch -d '@981173106.123456789' "$s/d1/s2"
	setfattr -n user.MARKERXATTR -v MARKERCONTENT_cairn_7f3a "$s/big.bin" || fail "setfattr"
	setfacl -m u:1234:rw "$s/big2.bin" || fail "setfacl"
	if [ "$(id -u)" = 0 ]; then
		mknod "$s/null" c 1 3
		chown -h 1234:5678 "$s/link"
		chown 42:43 "$s/fifo"
	fi
}
