# lib.sh - sourced by every CLI test: a scratch store and small assertions.
# Each test runs the real binary ($CAIRN) on real files in its own tmpdir.
set -u
: "${CAIRN:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/cairn}"
# tmpfs when there is one: a store is 65,536 directories, and creating and
# removing them on a disk filesystem dominates a test's time.
TESTDIR=$(mktemp -d "${CAIRN_TEST_TMP:-/dev/shm}/cairn-test.XXXXXX" 2>/dev/null ||
	mktemp -d /tmp/cairn-test.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$TESTDIR"' EXIT
export CAIRN_STORE="$TESTDIR/store"
fails=0

cairn() { "$CAIRN" "$@"; }

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# ok CMD...: CMD must succeed.
ok() {
	"$@" || fail "expected success: $*"
}

# fails_with CODE PATTERN CMD...: CMD must exit CODE and print PATTERN on stderr.
fails_with() {
	local code=$1 pat=$2
	shift 2
	local err
	err=$("$@" 2>&1 >/dev/null)
	local rc=$?
	[ $rc -eq "$code" ] || fail "expected exit $code, got $rc: $* ($err)"
	echo "$err" | grep -q -- "$pat" || fail "expected '$pat' in stderr of: $* (got: $err)"
}

# same_tree A B: identical content, types, modes, owners and mtimes.
same_tree() {
	local d
	d=$(diff -r --no-dereference "$1" "$2" 2>&1 | grep -v ' while file .* is a \(fifo\|character special file\|block special file\|socket\)$')
	[ -z "$d" ] || {
		fail "trees differ: $1 $2"
		echo "$d" | head -5 >&2
	}
	local a b
	a=$(cd "$1" && find . -printf '%p %y %m %U %G %s %T@ %l\n' | sort)
	b=$(cd "$2" && find . -printf '%p %y %m %U %G %s %T@ %l\n' | sort)
	[ "$a" = "$b" ] || {
		fail "metadata differs: $1 $2"
		diff <(echo "$a") <(echo "$b") | head -5 >&2
	}
}

new_store() {
	rm -rf "$CAIRN_STORE"
	"$CAIRN" init >/dev/null || fail "init"
}

done_test() {
	if [ $fails -gt 0 ]; then
		echo "$fails failures"
		exit 1
	fi
	exit 0
}
