#!/bin/bash
# The command-line front end: -h/--help versus verbs that take -h as an
# option, and the default store location.
. "$(dirname "$0")/lib.sh"
new_store
SRC=$TESTDIR/src
mkdir -p "$SRC"
echo data >"$SRC/f"
ok cairn create -o source="$SRC" ta
ok cairn snapshot ta@1
ok cairn snapshot ta@2

# diff -h (raw names) and send -h (--holds) are options: with operands a
# usage error stays one (stderr, exit 2), not help on stdout with exit 0.
fails_with 2 "too many arguments" cairn diff -h ta@1 ta@2 ta@3
fails_with 2 "expected one snapshot" cairn send -h ta@1 ta@2
out=$(cairn diff -h ta@1 ta@2 2>&1) || fail "diff -h ta@1 ta@2: $out"
# Alone, -h is still help.
for v in diff send; do
	out=$(cairn $v -h 2>/dev/null) || fail "$v -h alone: not exit 0"
	echo "$out" | grep -q "^usage: cairn $v" || fail "$v -h alone: no usage on stdout"
done

done_test
