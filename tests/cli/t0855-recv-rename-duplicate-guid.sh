#!/bin/bash
# recv -R parks a dataset under a temporary name (recv-rename-N) only when
# the stream's own rename then takes that very dataset on.  A destination
# can hold two datasets with one guid (a sync -R of a child into a
# dataset below the first copy: d/b, and d/NEW a copy of b); when the
# sender then creates a dataset NEW, the copy at d/NEW is not the one
# the stream renames (that is d/b, matched first), so it must not be
# parked: before, the receive succeeded and left the copy behind as
# d/recv-rename-0.  Refused as without renames ("destination has
# snapshots"), or, if the copy is the one matched, by the rename in the
# way; either way nothing there changes.
. "$(dirname "$0")/lib.sh"
T=$TESTDIR/src
new_store
second_store
n=0
for new in a0 ba c0 zz; do
	for src in a b c; do
		n=$((n + 1))
		s=$T/p$n
		mkdir -p "$s/a" "$s/b" "$s/c" "$s/$new"
		rnd "$s/a/f"; rnd "$s/b/f"; rnd "$s/c/f"; rnd "$s/$new/f"
		ok ca create -o source="$s" p$n
		for k in a b c; do ok ca create p$n/$k; done
		ok ca snapshot -r p$n@s1
		ok ca sync -R p$n "$B:d$n" >/dev/null
		ok ca sync -R p$n/$src "$B:d$n/$new" >/dev/null
		ok ca create p$n/$new
		ok ca snapshot -r p$n@s2
		before=$(cb list -H -p -t all -r -o name,guid d$n)
		for F in "" -F; do
			ca send -R -I @s1 p$n@s2 2>/dev/null | cb recv $F d$n 2>"$TESTDIR/err" &&
				fail "BUG: $new from $src: recv -R $F received onto the copy"
			[ -s "$TESTDIR/err" ] || fail "$new from $src: recv -R $F failed without a reason"
			after=$(cb list -H -p -t all -r -o name,guid d$n)
			[ "$before" = "$after" ] || fail "BUG: $new from $src: recv -R $F changed d$n: $after"
		done
	done
done
done_test
