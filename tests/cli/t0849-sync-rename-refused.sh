#!/bin/bash
# sync -R follows a dataset renamed on the source (t0840), but renames the
# receiver cannot apply one by one are refused there and change nothing,
# with or without -F (docs/REPLICATION.md): two children's names swapped,
# a chain (b to c, then a to b), an old name reused by a new dataset.
# None of them may overwrite, destroy or rename a destination dataset.
. "$(dirname "$0")/lib.sh"
A=$TESTDIR/a B=$TESTDIR/b T=$TESTDIR/src
ca() { "$CAIRN" -s "$A" "$@"; }
cb() { "$CAIRN" -s "$B" "$@"; }
ok ca init >/dev/null
ok cb init >/dev/null
for case in swap chain reuse; do
	rm -rf "$T"
	mkdir -p "$T/a" "$T/b"
	echo top >"$T/f"; echo a >"$T/a/f"; echo b >"$T/b/f"
	ok ca create -o source="$T" "$case"
	ok ca create "$case/a"
	ok ca create "$case/b"
	ok ca snapshot -r "$case@s1"
	ok ca sync -R "$case" "$B:$case-cp"
	before=$(cb list -H -p -t all -r -o name,guid "$case-cp")
	case $case in
	swap) ok ca rename swap/a swap/t; ok ca rename swap/b swap/a; ok ca rename swap/t swap/b
	      mv "$T/a" "$T/t"; mv "$T/b" "$T/a"; mv "$T/t" "$T/b" ;;
	chain) ok ca rename chain/b chain/c; ok ca rename chain/a chain/b
	       mv "$T/b" "$T/c"; mv "$T/a" "$T/b" ;;
	reuse) ok ca rename reuse/a reuse/a2; mv "$T/a" "$T/a2"; mkdir "$T/a"; echo new >"$T/a/f"
	       ok ca create reuse/a ;;
	esac
	ok ca snapshot -r "$case@s2"
	for F in "" -F; do
		"$CAIRN" -s "$A" sync -R $F "$case" "$B:$case-cp" 2>"$TESTDIR/err" &&
			fail "$case: sync -R $F applied renames the receiver cannot apply?"
		grep -qE "dataset already exists|destination has snapshots|not the same snapshot" \
			"$TESTDIR/err" || fail "$case: sync -R $F: not the receiver's refusal: $(cat "$TESTDIR/err")"
		[ "$before" = "$(cb list -H -p -t all -r -o name,guid "$case-cp")" ] ||
			fail "BUG: $case: sync -R $F changed the destination: $(cb list -H -p -t all -r -o name,guid "$case-cp")"
	done
done
done_test
