#!/bin/bash
# Bash completion: verbs, options (read from the command's usage), property
# names, and dataset/snapshot/bookmark names from the store.
. "$(dirname "$0")/lib.sh"
SRC=${CAIRN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
new_store
mkdir -p "$TESTDIR/src"
ok cairn create -o source="$TESTDIR/src" tank
ok cairn create tank/home
ok cairn snapshot tank@mon
ok cairn snapshot tank@tue
ok cairn bookmark tank@mon tank#bm
# The completion calls "cairn" as typed: make that the binary under test.
mkdir -p "$TESTDIR/bin"
ln -s "$CAIRN" "$TESTDIR/bin/cairn"
PATH=$TESTDIR/bin:$PATH
source "$SRC/completion/cairn.bash" || fail "sourcing completion/cairn.bash"

# complete WORD...: the completions of the last word (may be empty).
complete_line() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_cairn
	printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'
}
expect() {
	local want=$1
	shift
	local got
	got=$(complete_line "$@")
	[ "$got" = "$want" ] || fail "complete '$*': got '$got', want '$want'"
}
has() {
	local want=$1
	shift
	complete_line "$@" | tr ' ' '\n' | grep -qx -- "$want" || fail "complete '$*' lacks '$want': $(complete_line "$@")"
}

expect "snapshot" cairn snap
expect "destroy diff" cairn d
has mount cairn mo
has --help cairn --he
expect "--json --json-int -F -H -h -j -p -t" cairn diff -
has --keep-daily cairn prune --keep-d
expect "--strict" cairn snapshot --st
expect "tank tank/home" cairn list ta
expect "tank@mon tank@tue" cairn destroy tank@
expect "tank#bm" cairn send -i tank#
expect "exclude= exclude_caches=" cairn set excl
has tank cairn set exclude=x ta
expect "compression" cairn get compr
expect "cairnignore" cairn inherit cairn
expect "filesystem" cairn list -t fil
expect "allow_other" cairn mount -o all
# -s STORE before the verb is used for the names.
mv "$CAIRN_STORE" "$TESTDIR/other"
expect "tank@mon tank@tue" cairn -s "$TESTDIR/other" diff tank@
expect "" cairn diff tank@
done_test
